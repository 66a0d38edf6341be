# ---- IAM: one role per function, granting only the calls its handler makes ------------------
#
# tests/e2e/test_terraform.py applies this to moto, records every (action, resource) each handler
# calls during an end-to-end run, and checks the policies below allow each one and grant no
# action a handler never called (the only exceptions are the runtime's own calls: CloudWatch
# Logs, X-Ray, and KMS on the customer key when one is configured). Keep the two in step:
# a new AWS call in lib/objectlog needs its action here, and an action nothing calls goes.

# Who may assume the module's roles: a service of this account (the functions' Lambda, the
# Kafka agent's ECS tasks).
data "aws_iam_policy_document" "assume" {
  for_each = toset(["lambda", "ecs-tasks"])
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["${each.key}.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }
  }
}

resource "aws_iam_role" "function" {
  for_each           = local.functions
  name               = "${var.name}-${each.key}"
  description        = "objectlog ${each.key} function"
  assume_role_policy = data.aws_iam_policy_document.assume["lambda"].json
  tags               = local.tags
}

locals {
  # Item-level DynamoDB actions, per function (objectlog.stores.metadata, groups.store, leases and
  # Powertools idempotency). None uses Query, Scan or transactions (DESIGN.md, section 3).
  dynamodb_actions = {
    # topics: create (PutItem, BatchWriteItem heads), alter (UpdateItem), delete (DeleteItem,
    # BatchWriteItem); produce: GetItem topic and head, UpdateItem commit and spill;
    # describe after alter: BatchGetItem heads; idempotency: PutItem, GetItem, UpdateItem,
    # DeleteItem (a failed request's record).
    produce = [
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]
    # reads: GetItem, BatchGetItem; consumer groups: members (PutItem, UpdateItem,
    # BatchWriteItem), the group item (PutItem, DeleteItem), offsets (UpdateItem).
    fetch = [
      "dynamodb:BatchGetItem",
      "dynamodb:BatchWriteItem",
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]
    # leases (GetItem, PutItem), heads (GetItem, BatchGetItem, UpdateItem: spill, swap, GC horizon).
    compact = [
      "dynamodb:BatchGetItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]
    # the users' document (GetItem), and only that item: see dynamodb_leading_keys
    authorize = ["dynamodb:GetItem"]
  }

  # Functions confined to named items of the table (IAM's dynamodb:LeadingKeys, the partition
  # key). The users' document: objectlog.stores.documents.document_key("kafka-users", "all"),
  # the kind and name objectlog.kafka.users keeps them under (tests/e2e/test_terraform.py
  # checks the two agree).
  dynamodb_leading_keys = {
    authorize = ["doc#kafka-users#all"]
  }

  # S3 statements per function: (actions, resources), scoped to the key layout.
  s3_statements = {
    produce = [
      # L0 objects (with the spills they carry) and the manifest lists of spills made on their
      # own; a spill reads the manifest list it replaces, an index object or a range of the L0
      # object that carried it.
      { sid = "WriteSegmentsAndIndex", actions = ["s3:PutObject"], resources = [local.object_arns.l0, local.object_arns.index] },
      { sid = "ReadIndex", actions = ["s3:GetObject"], resources = [local.object_arns.l0, local.object_arns.index] },
    ]
    fetch = [
      { sid = "ReadSegmentsAndIndex", actions = ["s3:GetObject"], resources = [local.object_arns.l0, local.object_arns.index, local.object_arns.topics] },
    ]
    authorize = []
    compact = [
      # Segments and index; the tables' metadata (pyiceberg's S3 FileIO reads it back).
      { sid = "ReadSegmentsAndIndex", actions = ["s3:GetObject"], resources = values(local.object_arns) },
      # L1 files and the manifests and manifest lists of a swap; the tables' metadata.
      { sid = "WriteCompactedAndIndex", actions = ["s3:PutObject"], resources = [local.object_arns.index, local.object_arns.topics, local.object_arns.tables] },
      # Garbage collection (DeleteObjects needs s3:DeleteObject on every key).
      { sid = "CollectGarbage", actions = ["s3:DeleteObject"], resources = values(local.object_arns) },
      # Garbage collection lists the three directories.
      { sid = "ListForGarbageCollection", actions = ["s3:ListBucket"], resources = [aws_s3_bucket.data.arn] },
    ]
  }
}

data "aws_iam_policy_document" "function" {
  for_each = local.functions

  statement {
    sid       = "State"
    actions   = local.dynamodb_actions[each.key]
    resources = [aws_dynamodb_table.state.arn]

    dynamic "condition" {
      for_each = contains(keys(local.dynamodb_leading_keys), each.key) ? [local.dynamodb_leading_keys[each.key]] : []
      content {
        test     = "ForAllValues:StringEquals"
        variable = "dynamodb:LeadingKeys"
        values   = condition.value
      }
    }
  }

  dynamic "statement" {
    for_each = concat(local.s3_statements[each.key], lookup(local.glue_statements, each.key, []))
    content {
      sid       = statement.value.sid
      actions   = statement.value.actions
      resources = statement.value.resources
    }
  }

  # Superseded versions (objectlog.adapters.lambda_versions): the compact function reads each
  # function's alias and versions, and deletes versions (function:NAME:N), never a function
  # (its unqualified ARN does not match NAME:*).
  dynamic "statement" {
    for_each = each.key == "compact" ? [1] : []
    content {
      sid       = "ReadFunctionVersions"
      actions   = ["lambda:GetAlias", "lambda:ListAliases", "lambda:ListVersionsByFunction"]
      resources = values(local.function_arns)
    }
  }
  dynamic "statement" {
    for_each = each.key == "compact" ? [1] : []
    content {
      sid       = "DeleteSupersededVersions"
      actions   = ["lambda:DeleteFunction"]
      resources = [for arn in values(local.function_arns) : "${arn}:*"]
    }
  }

  # The Lambda runtime writes the function's logs (the log group is Terraform's).
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.function[each.key].arn}:*"]
  }

  # X-Ray takes no resource-level permissions: "*" is the only resource it accepts.
  dynamic "statement" {
    for_each = var.tracing ? [1] : []
    content {
      sid       = "Tracing"
      actions   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      resources = ["*"]
    }
  }

  # S3 and DynamoDB call KMS on the function's behalf when the customer key encrypts them.
  dynamic "statement" {
    for_each = var.kms_key_arn == null ? [] : [1]
    content {
      sid       = "CustomerKey"
      actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
      resources = [var.kms_key_arn]
    }
  }
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions
  name     = "${var.name}-${each.key}"
  role     = aws_iam_role.function[each.key].id
  policy   = data.aws_iam_policy_document.function[each.key].json
}
