output "api_id" {
  description = "ID of the HTTP API."
  value       = aws_apigatewayv2_api.http.id
}

output "console_url" {
  description = "The web console's address (var.console; its OIDC client's callback is <this>/callback), null without it."
  value       = var.console == null ? null : "${aws_apigatewayv2_api.http.api_endpoint}/console"
}

output "api_endpoint" {
  description = "Base URL of the HTTP API (OBJECTLOG_API_URL; requests are SigV4-signed for execute-api unless a JWT authorizer is configured; the Schema Registry at <url>/schema-registry takes basic auth or a bearer token)."
  value       = aws_apigatewayv2_api.http.api_endpoint
}

output "bucket" {
  description = "Data bucket (OBJECTLOG_BUCKET)."
  value       = aws_s3_bucket.data.bucket
}

output "bucket_arn" {
  description = "ARN of the data bucket."
  value       = aws_s3_bucket.data.arn
}

output "artifact_bucket" {
  description = "Bucket holding the Lambda layer."
  value       = aws_s3_bucket.artifacts.bucket
}

output "table" {
  description = "State table (OBJECTLOG_TABLE)."
  value       = aws_dynamodb_table.state.name
}

output "table_arn" {
  description = "ARN of the state table."
  value       = aws_dynamodb_table.state.arn
}

output "key_prefix" {
  description = "Key prefix inside the bucket (OBJECTLOG_PREFIX)."
  value       = var.key_prefix
}

output "functions" {
  description = "Function name by role: produce, fetch, compact, authorize."
  value       = { for fn, f in aws_lambda_function.function : fn => f.function_name }
}

output "function_roles" {
  description = "Execution role ARN by function."
  value       = { for fn, r in aws_iam_role.function : fn => r.arn }
}

output "layer_arn" {
  description = "ARN of the layer version the functions use."
  value       = aws_lambda_layer_version.objectlog.arn
}

output "compact_rule" {
  description = "Name of the EventBridge rule that runs the compact function."
  value       = aws_cloudwatch_event_rule.compact.name
}

output "alarms" {
  description = "Names of the CloudWatch alarms."
  value       = concat([for a in aws_cloudwatch_metric_alarm.function : a.alarm_name], [aws_cloudwatch_metric_alarm.api_5xx.alarm_name])
}

output "table_database" {
  description = "Glue database of the topics' Iceberg tables (OBJECTLOG_TABLE_NAMESPACE); null with tables_enabled = false."
  value       = var.tables_enabled ? aws_glue_catalog_database.tables[0].name : null
}

output "table_reader_policy_arn" {
  description = "IAM policy for readers of the topics' tables (Athena, EMR): Glue reads and S3 reads of the table metadata and data files."
  value       = var.tables_enabled ? aws_iam_policy.table_reader[0].arn : null
}

output "agent_bootstrap" {
  description = "bootstrap.servers for Kafka clients (the NLB's TLS listener), or null without the agent."
  value       = local.agent ? "${aws_lb.agent[0].dns_name}:${local.agent_tls}" : null
}

output "agent_service" {
  description = "The agent's ECS cluster, service and task role, or null without the agent."
  value = local.agent ? {
    cluster   = aws_ecs_cluster.agent[0].name
    service   = aws_ecs_service.agent[0].name
    task_role = aws_iam_role.agent_task[0].name
  } : null
}
