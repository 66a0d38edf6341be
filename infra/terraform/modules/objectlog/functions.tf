# ---- Lambda: one layer (lib/objectlog + its dependencies), four small function packages ------
#
# `python -m objectlog.tools.packaging` builds package_dir: layer.zip holds python/objectlog and the
# wheels for linux arm64 (about 60 MB zipped, so it goes through S3: Lambda takes at most
# 50 MB in a direct upload); <function>.zip holds functions/<function>/handler.py at its root,
# so every handler is "handler.handler". The layer and a function together stay within
# Lambda's 250 MB unzipped limit (the packager checks and prints the sizes).

resource "aws_s3_object" "layer" {
  bucket = aws_s3_bucket.artifacts.id
  # Named by content: a new build is a new object and a new layer version.
  key         = "lambda/layer-${filesha256("${var.package_dir}/layer.zip")}.zip"
  source      = "${var.package_dir}/layer.zip"
  source_hash = filemd5("${var.package_dir}/layer.zip")
  tags        = local.tags
  depends_on  = [aws_s3_bucket_server_side_encryption_configuration.artifacts]
}

resource "aws_lambda_layer_version" "objectlog" {
  layer_name               = "${var.name}-objectlog"
  description              = "objectlog library and dependencies (linux arm64, ${var.python_runtime})"
  s3_bucket                = aws_s3_object.layer.bucket
  s3_key                   = aws_s3_object.layer.key
  source_code_hash         = filebase64sha256("${var.package_dir}/layer.zip")
  compatible_runtimes      = [var.python_runtime]
  compatible_architectures = ["arm64"]
}

resource "aws_cloudwatch_log_group" "function" {
  #checkov:skip=CKV_AWS_158:Encrypted with CloudWatch Logs' own key by default; var.kms_key_arn encrypts them with the customer key (the key policy must then allow logs.<region>.amazonaws.com).
  #checkov:skip=CKV_AWS_338:Operational logs of stateless functions; retention is var.log_retention_days (30 by default), not a year of audit log.
  for_each          = local.functions
  name              = "/aws/lambda/${var.name}-${each.key}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = local.tags
}

resource "aws_lambda_function" "function" {
  #checkov:skip=CKV_AWS_116:produce, fetch and authorize are invoked synchronously by API Gateway (a DLQ applies to asynchronous invokes only); a failed scheduled compact run is simply retried by the next schedule, and the Errors alarm reports it.
  #checkov:skip=CKV_AWS_117:The functions reach only S3 and DynamoDB over their public endpoints (and authorize a token issuer's published keys); a VPC would add NAT or endpoints and cold-start cost for nothing they need.
  #checkov:skip=CKV_AWS_173:The environment holds only resource names and tuning numbers, no secrets; Lambda encrypts it at rest with its service key.
  #checkov:skip=CKV_AWS_272:Code signing needs an AWS Signer profile per account; the package is built reproducibly (objectlog.tools.packaging) and pinned by source_code_hash.
  #checkov:skip=CKV_AWS_115:produce, fetch and authorize default to the account's unreserved pool (reserving carves concurrency out of every other function); set var.api_reserved_concurrency to reserve. compact is reserved to 1.
  for_each      = local.functions
  function_name = local.function_names[each.key]
  description   = each.value.description
  role          = aws_iam_role.function[each.key].arn
  # Python 3.12: the Amazon Linux 2023 runtime (supported longer than python3.11 on Amazon
  # Linux 2, and its glibc 2.34 takes the manylinux_2_28 wheels pyarrow now publishes).
  runtime                        = var.python_runtime
  architectures                  = ["arm64"]
  handler                        = "handler.handler"
  filename                       = "${var.package_dir}/${each.key}.zip"
  source_code_hash               = filebase64sha256("${var.package_dir}/${each.key}.zip")
  layers                         = [aws_lambda_layer_version.objectlog.arn]
  memory_size                    = each.value.memory
  timeout                        = each.value.timeout
  reserved_concurrent_executions = each.value.concurrency
  # Every change publishes a version; the "live" alias below serves it.
  publish = true
  tags    = local.tags

  # Lambda snapshots the initialized function when it publishes a version; new execution
  # environments resume the snapshot (objectlog.functions.snapstart: its runtime hooks).
  dynamic "snap_start" {
    for_each = contains(local.snap_start_functions, each.key) ? [1] : []
    content {
      apply_on = "PublishedVersions"
    }
  }

  environment {
    variables = local.function_env[each.key]
  }

  tracing_config {
    mode = var.tracing ? "Active" : "PassThrough"
  }

  # The log group (with its retention) exists before the function can write to it, and the
  # role's policy before the first invocation.
  depends_on = [aws_cloudwatch_log_group.function, aws_iam_role_policy.function]
}

# What API Gateway, the authorizer and the schedule invoke: the version the last apply
# published (its SnapStart snapshot), never $LATEST. The compact function deletes the versions
# this alias no longer serves (objectlog.adapters.lambda_versions).
resource "aws_lambda_alias" "live" {
  for_each         = local.functions
  name             = local.function_alias
  description      = "the version this deployment serves"
  function_name    = aws_lambda_function.function[each.key].function_name
  function_version = aws_lambda_function.function[each.key].version
}
