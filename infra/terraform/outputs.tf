output "api_id" {
  description = "ID of the HTTP API (objectlog.tools.deploy reads its routes and integrations)."
  value       = module.objectlog.api_id
}

output "console_url" {
  description = "The web console's address (var.console; its OIDC client's callback is <this>/callback), null without it."
  value       = module.objectlog.console_url
}

output "api_endpoint" {
  description = "Base URL of the HTTP API (OBJECTLOG_API_URL)."
  value       = module.objectlog.api_endpoint
}

output "bucket" {
  description = "Data bucket (OBJECTLOG_BUCKET)."
  value       = module.objectlog.bucket
}

output "bucket_arn" {
  description = "ARN of the data bucket."
  value       = module.objectlog.bucket_arn
}

output "artifact_bucket" {
  description = "Bucket holding the Lambda layer."
  value       = module.objectlog.artifact_bucket
}

output "table" {
  description = "State table (OBJECTLOG_TABLE)."
  value       = module.objectlog.table
}

output "table_arn" {
  description = "ARN of the state table."
  value       = module.objectlog.table_arn
}

output "key_prefix" {
  description = "Key prefix inside the bucket (OBJECTLOG_PREFIX)."
  value       = module.objectlog.key_prefix
}

output "functions" {
  description = "Function name by role: produce, fetch, compact, authorize."
  value       = module.objectlog.functions
}

output "function_roles" {
  description = "Execution role ARN by function."
  value       = module.objectlog.function_roles
}

output "layer_arn" {
  description = "ARN of the layer version the functions use."
  value       = module.objectlog.layer_arn
}

output "compact_rule" {
  description = "EventBridge rule that runs the compact function."
  value       = module.objectlog.compact_rule
}

output "alarms" {
  description = "CloudWatch alarm names."
  value       = module.objectlog.alarms
}

output "table_database" {
  description = "Glue database of the topics' Iceberg tables (OBJECTLOG_TABLE_NAMESPACE)."
  value       = module.objectlog.table_database
}

output "table_reader_policy_arn" {
  description = "IAM policy for readers of the topics' tables (Athena, EMR)."
  value       = module.objectlog.table_reader_policy_arn
}

output "agent_bootstrap" {
  description = "bootstrap.servers for Kafka clients through the agent's TLS listener (null without var.agent)."
  value       = module.objectlog.agent_bootstrap
}

output "agent_service" {
  description = "The Kafka agent's ECS cluster, service and task role (null without var.agent)."
  value       = module.objectlog.agent_service
}
