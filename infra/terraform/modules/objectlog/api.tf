# ---- API Gateway HTTP API: the routes of objectlog.http.routes, IAM (SigV4) or JWT auth ------

locals {
  api_functions = toset(distinct(concat(values(local.routes), ["fetch"])))
  # AWS_IAM by default: callers sign with SigV4 (the Python client and CLI do, see docs/api.md).
  authorization_type = var.jwt_authorizer == null ? "AWS_IAM" : "JWT"
  # The Schema Registry's routes: Confluent's clients cannot sign SigV4, they send basic auth or
  # a bearer token, which the authorize function checks (docs/schemas.md, Authentication).
  registry_routes = toset([for key in keys(local.routes) : key if startswith(split(" ", key)[1], "/schema-registry")])
}

resource "aws_apigatewayv2_api" "http" {
  name          = var.name
  description   = "objectlog HTTP API"
  protocol_type = "HTTP"
  tags          = local.tags
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  count            = var.jwt_authorizer == null ? 0 : 1
  api_id           = aws_apigatewayv2_api.http.id
  name             = "${var.name}-jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]

  jwt_configuration {
    issuer   = var.jwt_authorizer.issuer
    audience = var.jwt_authorizer.audience
  }
}

# Basic auth against objectlog's users (the Kafka agent's SCRAM credentials) and, with
# var.jwt_authorizer, bearer tokens of that issuer. API Gateway answers 401 itself without an
# Authorization header, and caches each answer per header value for registry_auth_cache_s.
resource "aws_apigatewayv2_authorizer" "registry" {
  api_id                            = aws_apigatewayv2_api.http.id
  name                              = "${var.name}-registry"
  authorizer_type                   = "REQUEST"
  authorizer_uri                    = aws_lambda_alias.live["authorize"].invoke_arn
  authorizer_payload_format_version = "2.0"
  enable_simple_responses           = true
  identity_sources                  = ["$request.header.Authorization"]
  authorizer_result_ttl_in_seconds  = var.registry_auth_cache_s
}

resource "aws_apigatewayv2_integration" "function" {
  for_each               = local.api_functions
  api_id                 = aws_apigatewayv2_api.http.id
  description            = "objectlog ${each.key} function"
  integration_type       = "AWS_PROXY"
  integration_method     = "POST"
  integration_uri        = aws_lambda_alias.live[each.key].invoke_arn
  payload_format_version = "2.0"
  timeout_milliseconds   = 30000
}

resource "aws_apigatewayv2_route" "route" {
  for_each           = local.routes
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = each.key
  target             = "integrations/${aws_apigatewayv2_integration.function[each.value].id}"
  authorization_type = contains(local.registry_routes, each.key) ? "CUSTOM" : local.authorization_type
  authorizer_id = (
    contains(local.registry_routes, each.key) ? aws_apigatewayv2_authorizer.registry.id :
    var.jwt_authorizer == null ? null : aws_apigatewayv2_authorizer.jwt[0].id
  )
}

# The web console's page (var.console): public, as a bookmarked URL carries no token; it holds no
# data, and every API call it makes carries its user's bearer token to the JWT-authorized routes.
resource "aws_apigatewayv2_route" "console" {
  for_each           = var.console == null ? toset([]) : toset(["GET /console", "GET /console/{proxy+}"])
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = each.key
  target             = "integrations/${aws_apigatewayv2_integration.function["fetch"].id}"
  authorization_type = "NONE"
}

# Anything no route matches goes to fetch, which answers 404 or 405 with an Allow header.
resource "aws_apigatewayv2_route" "default" {
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = "$default"
  target             = "integrations/${aws_apigatewayv2_integration.function["fetch"].id}"
  authorization_type = local.authorization_type
  authorizer_id      = var.jwt_authorizer == null ? null : aws_apigatewayv2_authorizer.jwt[0].id
}

resource "aws_cloudwatch_log_group" "api" {
  #checkov:skip=CKV_AWS_158:Encrypted with CloudWatch Logs' own key by default; var.kms_key_arn encrypts them with the customer key (the key policy must then allow logs.<region>.amazonaws.com).
  #checkov:skip=CKV_AWS_338:Access logs are operational; retention is var.log_retention_days (30 by default).
  name              = "/aws/apigateway/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = local.tags
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true
  tags        = local.tags

  default_route_settings {
    throttling_rate_limit  = var.api_throttle.rate_limit
    throttling_burst_limit = var.api_throttle.burst_limit
  }

  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api.arn
    format = jsonencode({
      requestId          = "$context.requestId"
      ip                 = "$context.identity.sourceIp"
      caller             = "$context.identity.caller"
      user               = "$context.identity.user"
      requestTime        = "$context.requestTime"
      routeKey           = "$context.routeKey"
      status             = "$context.status"
      responseLength     = "$context.responseLength"
      integrationLatency = "$context.integrationLatency"
      integrationError   = "$context.integrationErrorMessage"
    })
  }
}

# API Gateway may invoke each integrated function, from this API only.
resource "aws_lambda_permission" "api" {
  for_each      = local.api_functions
  statement_id  = "AllowHttpApi"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.function[each.key].function_name
  qualifier     = aws_lambda_alias.live[each.key].name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*/*"
}

# API Gateway may invoke the authorizer, for this API's registry authorizer only.
resource "aws_lambda_permission" "authorizer" {
  statement_id  = "AllowHttpApiAuthorizer"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.function["authorize"].function_name
  qualifier     = aws_lambda_alias.live["authorize"].name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/authorizers/${aws_apigatewayv2_authorizer.registry.id}"
}
