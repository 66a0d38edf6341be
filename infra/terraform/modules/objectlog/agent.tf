# ---- The Kafka agent (optional): ECS on Fargate behind a Network Load Balancer ---------------
#
# Off unless var.agent is set. Stateless `objectlog agent` tasks (infra/agent/Dockerfile) behind
# an NLB whose TLS listener terminates TLS with var.agent.certificate_arn; every task advertises
# the NLB's name and TLS port as the one broker, so clients reconnect through it (docs/kafka.md).
# Scaling: target tracking on CPU between min_tasks (default 2) and max_tasks; with min_tasks 0,
# an idle NLB (no active flow for 15 minutes) scales the service to zero and the first client's
# connection, reset by the NLB for want of a target, wakes one task.

locals {
  agent         = var.agent != null
  agent_scaling = local.agent && try(var.agent.autoscaling, true)
  agent_port    = 9092 # the tasks' plaintext port (the Dockerfile's EXPOSE)
  agent_tls     = 9094 # the NLB's TLS listener: what clients use
  agent_service = "${var.name}-kafka-agent"
  agent_command = concat(
    ["--listen", "0.0.0.0:${local.agent_port}"],
    local.agent ? ["--advertise", "${aws_lb.agent[0].dns_name}:${local.agent_tls}"] : [],
    local.agent && try(var.agent.sasl, true) ? ["--sasl"] : [],
    local.agent ? ["--initial-rebalance-delay-ms", tostring(var.agent.initial_rebalance_delay_ms)] : [],
  )
}

resource "aws_ecs_cluster" "agent" {
  count = local.agent ? 1 : 0
  name  = local.agent_service
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
  tags = local.tags
}

resource "aws_cloudwatch_log_group" "agent" {
  #checkov:skip=CKV_AWS_158:Encrypted with CloudWatch Logs' own key by default; var.kms_key_arn encrypts it with the customer key.
  #checkov:skip=CKV_AWS_338:Operational logs of stateless tasks; retention is var.log_retention_days.
  count             = local.agent ? 1 : 0
  name              = "/ecs/${local.agent_service}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = local.tags
}

# ---- IAM: the task role (objectlog's calls) and the execution role (image, logs) ------------

resource "aws_iam_role" "agent_task" {
  count              = local.agent ? 1 : 0
  name               = "${var.name}-kafka-agent-task"
  description        = "objectlog Kafka agent tasks: the produce and fetch paths' calls"
  assume_role_policy = data.aws_iam_policy_document.assume["ecs-tasks"].json
  tags               = local.tags
}

data "aws_iam_policy_document" "agent_task" {
  # The agent is the library's produce path (Produce, InitProducerId, CreateTopics, ...) and its
  # read path (Fetch, ListOffsets, groups, users): the union of those two functions' item actions.
  statement {
    sid       = "ItemsInTheTable"
    actions   = local.agent_dynamodb_actions
    resources = [aws_dynamodb_table.state.arn]
  }
  statement {
    sid       = "WriteSegmentsAndIndex"
    actions   = ["s3:PutObject"]
    resources = [local.object_arns.l0, local.object_arns.index]
  }
  statement {
    sid       = "ReadSegmentsAndIndex"
    actions   = ["s3:GetObject"]
    resources = [local.object_arns.l0, local.object_arns.index, local.object_arns.topics]
  }
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [var.kms_key_arn]
    content {
      sid       = "CustomerKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [statement.value]
    }
  }
}

locals {
  agent_dynamodb_actions = sort(distinct(concat(local.dynamodb_actions.produce, local.dynamodb_actions.fetch)))
}

resource "aws_iam_role_policy" "agent_task" {
  count  = local.agent ? 1 : 0
  name   = "objectlog-kafka-agent"
  role   = aws_iam_role.agent_task[0].id
  policy = data.aws_iam_policy_document.agent_task.json
}

resource "aws_iam_role" "agent_execution" {
  count              = local.agent ? 1 : 0
  name               = "${var.name}-kafka-agent-execution"
  description        = "ECS pulls the Kafka agent's image and writes its logs"
  assume_role_policy = data.aws_iam_policy_document.assume["ecs-tasks"].json
  tags               = local.tags
}

data "aws_iam_policy_document" "agent_execution" {
  statement {
    sid       = "PullTheImage"
    actions   = ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
    resources = ["arn:${local.partition}:ecr:*:*:repository/*"]
  }
  statement {
    sid       = "SignInToTheRegistry"
    actions   = ["ecr:GetAuthorizationToken"] # account-wide by design: it names no resource
    resources = ["*"]
  }
  statement {
    sid       = "WriteLogs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["arn:${local.partition}:logs:${local.region}:${local.account_id}:log-group:/ecs/${local.agent_service}:*"]
  }
}

resource "aws_iam_role_policy" "agent_execution" {
  count  = local.agent ? 1 : 0
  name   = "objectlog-kafka-agent-execution"
  role   = aws_iam_role.agent_execution[0].id
  policy = data.aws_iam_policy_document.agent_execution.json
}

# ---- Tasks --------------------------------------------------------------------------------

resource "aws_ecs_task_definition" "agent" {
  count                    = local.agent ? 1 : 0
  family                   = local.agent_service
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.agent.cpu
  memory                   = var.agent.memory_mb
  execution_role_arn       = aws_iam_role.agent_execution[0].arn
  task_role_arn            = aws_iam_role.agent_task[0].arn
  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = "ARM64"
  }
  container_definitions = jsonencode([{
    name                   = "agent"
    image                  = var.agent.image
    essential              = true
    command                = local.agent_command
    readonlyRootFilesystem = true
    portMappings           = [{ containerPort = local.agent_port, protocol = "tcp" }]
    environment            = [for k, v in merge(local.common_env, local.topic_creation_env, local.access_env) : { name = k, value = v }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        "awslogs-group"         = aws_cloudwatch_log_group.agent[0].name
        "awslogs-region"        = local.region
        "awslogs-stream-prefix" = "agent"
      }
    }
  }])
  tags = local.tags
}

resource "aws_security_group" "agent_lb" {
  count       = local.agent ? 1 : 0
  name        = "${local.agent_service}-lb"
  description = "Kafka clients to the agents' TLS listener"
  vpc_id      = var.agent.vpc_id
  ingress {
    description = "Kafka over TLS"
    from_port   = local.agent_tls
    to_port     = local.agent_tls
    protocol    = "tcp"
    cidr_blocks = var.agent.allowed_cidrs
  }
  egress {
    description = "to the agent tasks"
    from_port   = local.agent_port
    to_port     = local.agent_port
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
  tags = local.tags
}

resource "aws_security_group" "agent_tasks" {
  count       = local.agent ? 1 : 0
  name        = "${local.agent_service}-tasks"
  description = "The load balancer to the agent tasks; the tasks to AWS's endpoints"
  vpc_id      = var.agent.vpc_id
  ingress {
    description     = "Kafka from the load balancer"
    from_port       = local.agent_port
    to_port         = local.agent_port
    protocol        = "tcp"
    security_groups = [aws_security_group.agent_lb[0].id]
  }
  egress {
    description = "HTTPS to S3, DynamoDB, ECR and CloudWatch Logs"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["0.0.0.0/0"]
  }
  tags = local.tags
}

# ---- The Network Load Balancer ------------------------------------------------------------

resource "aws_lb" "agent" {
  #checkov:skip=CKV_AWS_91:Access logs of a TLS NLB need a bucket of their own; set them up with the account's logging bucket.
  #checkov:skip=CKV_AWS_150:Deletion protection would block terraform destroy of a stateless front; the data lives in S3 and DynamoDB, which keep theirs.
  #checkov:skip=CKV2_AWS_28:WAF protects HTTP; this listener speaks the Kafka protocol.
  count                            = local.agent ? 1 : 0
  name                             = substr("${var.name}-kafka", 0, 32)
  load_balancer_type               = "network"
  internal                         = var.agent.internal
  subnets                          = var.agent.subnet_ids
  security_groups                  = [aws_security_group.agent_lb[0].id]
  enable_cross_zone_load_balancing = true
  tags                             = local.tags
}

resource "aws_lb_target_group" "agent" {
  count       = local.agent ? 1 : 0
  name        = substr("${var.name}-kafka", 0, 32)
  port        = local.agent_port
  protocol    = "TCP"
  target_type = "ip"
  vpc_id      = var.agent.vpc_id
  # A task leaving drains for a short while: clients reconnect to another through the NLB.
  deregistration_delay = 30
  health_check {
    protocol = "TCP"
    port     = "traffic-port"
  }
  tags = local.tags
}

resource "aws_lb_listener" "agent" {
  count             = local.agent ? 1 : 0
  load_balancer_arn = aws_lb.agent[0].arn
  port              = local.agent_tls
  protocol          = "TLS"
  certificate_arn   = var.agent.certificate_arn
  ssl_policy        = "ELBSecurityPolicy-TLS13-1-2-2021-06"
  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.agent[0].arn
  }
  tags = local.tags
}

resource "aws_ecs_service" "agent" {
  count           = local.agent ? 1 : 0
  name            = local.agent_service
  cluster         = aws_ecs_cluster.agent[0].id
  task_definition = aws_ecs_task_definition.agent[0].arn
  desired_count   = var.agent.min_tasks
  launch_type     = "FARGATE"
  network_configuration {
    subnets          = var.agent.subnet_ids
    security_groups  = [aws_security_group.agent_tasks[0].id]
    assign_public_ip = var.agent.assign_public_ip
  }
  load_balancer {
    target_group_arn = aws_lb_target_group.agent[0].arn
    container_name   = "agent"
    container_port   = local.agent_port
  }
  lifecycle {
    ignore_changes = [desired_count] # autoscaling owns it after creation
  }
  depends_on = [aws_lb_listener.agent]
  tags       = local.tags
}

# ---- Scaling ------------------------------------------------------------------------------

resource "aws_appautoscaling_target" "agent" {
  count              = local.agent_scaling ? 1 : 0
  service_namespace  = "ecs"
  resource_id        = "service/${aws_ecs_cluster.agent[0].name}/${aws_ecs_service.agent[0].name}"
  scalable_dimension = "ecs:service:DesiredCount"
  min_capacity       = var.agent.min_tasks
  max_capacity       = var.agent.max_tasks
}

resource "aws_appautoscaling_policy" "agent_cpu" {
  count              = local.agent_scaling ? 1 : 0
  name               = "${local.agent_service}-cpu"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.agent[0].service_namespace
  resource_id        = aws_appautoscaling_target.agent[0].resource_id
  scalable_dimension = aws_appautoscaling_target.agent[0].scalable_dimension
  target_tracking_scaling_policy_configuration {
    target_value = var.agent.target_cpu_percent
    predefined_metric_specification {
      predefined_metric_type = "ECSServiceAverageCPUUtilization"
    }
  }
}

# Down to zero and back, only with min_tasks = 0: CPU tracking cannot see an idle service with
# no task, the load balancer can (its flows, and the resets it sends when no target is there).
resource "aws_appautoscaling_policy" "agent_idle" {
  for_each = local.agent_scaling && try(var.agent.min_tasks, 1) == 0 ? { sleep = 0, wake = 1 } : {}

  name               = "${local.agent_service}-${each.key}"
  policy_type        = "StepScaling"
  service_namespace  = aws_appautoscaling_target.agent[0].service_namespace
  resource_id        = aws_appautoscaling_target.agent[0].resource_id
  scalable_dimension = aws_appautoscaling_target.agent[0].scalable_dimension
  step_scaling_policy_configuration {
    adjustment_type = "ExactCapacity"
    cooldown        = 60
    step_adjustment {
      metric_interval_lower_bound = 0
      scaling_adjustment          = each.value
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "agent_idle" {
  for_each = aws_appautoscaling_policy.agent_idle

  alarm_name          = "${local.agent_service}-${each.key}"
  alarm_description   = each.key == "sleep" ? "No Kafka connection for 15 minutes: no task" : "A client was reset for want of a task: start one"
  namespace           = "AWS/NetworkELB"
  metric_name         = each.key == "sleep" ? "ActiveFlowCount" : "TCP_ELB_Reset_Count"
  statistic           = each.key == "sleep" ? "Maximum" : "Sum"
  dimensions          = { LoadBalancer = aws_lb.agent[0].arn_suffix }
  period              = 60
  evaluation_periods  = each.key == "sleep" ? 15 : 1
  threshold           = 0
  comparison_operator = each.key == "sleep" ? "LessThanOrEqualToThreshold" : "GreaterThanThreshold"
  treat_missing_data  = each.key == "sleep" ? "breaching" : "notBreaching"
  alarm_actions       = [each.value.arn]
  tags                = local.tags
}
