# The whole objectlog deployment in one module; see README.md beside this file.

module "objectlog" {
  source = "./modules/objectlog"

  name                            = var.name
  bucket_name                     = var.bucket_name
  artifact_bucket_name            = var.artifact_bucket_name
  table_name                      = var.table_name
  key_prefix                      = var.key_prefix
  package_dir                     = coalesce(var.package_dir, "${path.root}/../../build/lambda")
  python_runtime                  = var.python_runtime
  kms_key_arn                     = var.kms_key_arn
  jwt_authorizer                  = var.jwt_authorizer
  console                         = var.console
  registry_auth_cache_s           = var.registry_auth_cache_s
  api_memory_mb                   = var.api_memory_mb
  api_timeout_s                   = var.api_timeout_s
  api_throttle                    = var.api_throttle
  api_reserved_concurrency        = var.api_reserved_concurrency
  compact_memory_mb               = var.compact_memory_mb
  compact_timeout_s               = var.compact_timeout_s
  compact_schedule                = var.compact_schedule
  settings                        = var.settings
  tracing                         = var.tracing
  log_retention_days              = var.log_retention_days
  alarm_actions                   = var.alarm_actions
  deny_insecure_transport         = var.deny_insecure_transport
  abort_incomplete_multipart_days = var.abort_incomplete_multipart_days
  force_destroy                   = var.force_destroy
  deletion_protection             = var.deletion_protection
  tables_enabled                  = var.tables_enabled
  table_database                  = var.table_database
  agent                           = var.agent
  auto_create_topics              = var.auto_create_topics
  num_partitions                  = var.num_partitions
  authorizer                      = var.authorizer
  super_users                     = var.super_users
  allow_everyone_if_no_acl_found  = var.allow_everyone_if_no_acl_found
  tags                            = var.tags
}
