# On AWS: credentials and region from the usual chain (AWS_PROFILE, AWS_REGION, SSO, ...).
# With var.local_endpoint set (moto server, LocalStack) every service below goes there, and
# nothing asks AWS for credentials or instance metadata.

locals {
  local = var.local_endpoint != null
}

provider "aws" {
  region = var.region

  skip_credentials_validation = local.local
  skip_metadata_api_check     = local.local
  skip_region_validation      = local.local
  s3_use_path_style           = local.local

  dynamic "endpoints" {
    for_each = local.local ? [var.local_endpoint] : []
    content {
      acm                    = endpoints.value
      apigatewayv2           = endpoints.value
      applicationautoscaling = endpoints.value
      cloudwatch             = endpoints.value
      dynamodb               = endpoints.value
      ec2                    = endpoints.value
      ecs                    = endpoints.value
      elbv2                  = endpoints.value
      events                 = endpoints.value
      glue                   = endpoints.value
      iam                    = endpoints.value
      kms                    = endpoints.value
      lambda                 = endpoints.value
      logs                   = endpoints.value
      s3                     = endpoints.value
      sts                    = endpoints.value
    }
  }

  default_tags {
    tags = { "objectlog:managed-by" = "terraform" }
  }
}
