# ---- EventBridge: the compact function on a schedule ----------------------------------------

resource "aws_cloudwatch_event_rule" "compact" {
  name                = "${var.name}-compact"
  description         = "objectlog compaction, retention and garbage collection"
  schedule_expression = var.compact_schedule
  tags                = local.tags
}

resource "aws_cloudwatch_event_target" "compact" {
  rule      = aws_cloudwatch_event_rule.compact.name
  target_id = "compact"
  arn       = aws_lambda_alias.live["compact"].arn

  # A missed run is made up by the next one: no point retrying a stale event for long.
  retry_policy {
    maximum_event_age_in_seconds = 300
    maximum_retry_attempts       = 1
  }
}

resource "aws_lambda_permission" "schedule" {
  statement_id  = "AllowSchedule"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.function["compact"].function_name
  qualifier     = aws_lambda_alias.live["compact"].name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.compact.arn
}
