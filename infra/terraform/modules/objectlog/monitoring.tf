# ---- CloudWatch alarms: errors and throttles of every function ------------------------------

locals {
  alarms = merge([
    for fn, _ in local.functions : {
      "${fn}-errors" = {
        function  = fn
        metric    = "Errors"
        threshold = 1
        what      = "invocations of ${var.name}-${fn} failed (unhandled error or timeout)"
      }
      "${fn}-throttles" = {
        function  = fn
        metric    = "Throttles"
        threshold = 1
        what      = "invocations of ${var.name}-${fn} were throttled (concurrency limit)"
      }
    }
  ]...)
}

resource "aws_cloudwatch_metric_alarm" "function" {
  for_each            = local.alarms
  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = "objectlog: ${each.value.what} in the last 5 minutes"
  namespace           = "AWS/Lambda"
  metric_name         = each.value.metric
  dimensions          = { FunctionName = aws_lambda_function.function[each.value.function].function_name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = each.value.threshold
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = local.tags
}

# 5xx answers of the HTTP API (a handler's 5xx is also counted by the functions' `errors` EMF
# metric; this one also sees integration failures and timeouts).
resource "aws_cloudwatch_metric_alarm" "api_5xx" {
  alarm_name          = "${var.name}-api-5xx"
  alarm_description   = "objectlog: the HTTP API answered 5xx in the last 5 minutes"
  namespace           = "AWS/ApiGateway"
  metric_name         = "5xx"
  dimensions          = { ApiId = aws_apigatewayv2_api.http.id, Stage = aws_apigatewayv2_stage.default.name }
  statistic           = "Sum"
  period              = 300
  evaluation_periods  = 1
  threshold           = 1
  comparison_operator = "GreaterThanOrEqualToThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = var.alarm_actions
  ok_actions          = var.alarm_actions
  tags                = local.tags
}
