variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name such as us-east-1."
  }
}

variable "local_endpoint" {
  description = "Send every AWS call to this endpoint instead of AWS: moto server (`make run`, http://127.0.0.1:4566) or LocalStack. Null on AWS."
  type        = string
  default     = null

  validation {
    condition     = var.local_endpoint == null || can(regex("^https?://[^/]+/?$", var.local_endpoint))
    error_message = "local_endpoint must be an http(s)://host:port URL, e.g. http://127.0.0.1:4566."
  }
}

variable "name" {
  description = "Name of this deployment: prefixes every resource."
  type        = string
  default     = "objectlog"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must be 3-32 characters of lower-case letters, digits and hyphens, starting with a letter."
  }
}

variable "bucket_name" {
  description = "S3 bucket for segments and manifests. Null: <name>-data-<account id>-<region>."
  type        = string
  default     = null
}

variable "artifact_bucket_name" {
  description = "S3 bucket for the Lambda layer. Null: <name>-artifacts-<account id>-<region>."
  type        = string
  default     = null
}

variable "table_name" {
  description = "DynamoDB table. Null: <name>."
  type        = string
  default     = null
}

variable "key_prefix" {
  description = "Key prefix inside the bucket (OBJECTLOG_PREFIX), ending in '/'; empty for none."
  type        = string
  default     = ""
}

variable "package_dir" {
  description = "Directory with layer.zip and <function>.zip from `make package`. Null: build/lambda in the repository."
  type        = string
  default     = null
}

variable "python_runtime" {
  description = "Lambda runtime (python3.12 or python3.13; SnapStart needs 3.12+); the package, with its .pyc files, must be built for the same version (python -m objectlog.tools.packaging --python 3.13)."
  type        = string
  default     = "python3.12"
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the buckets, the table and the log groups. Null: AWS-managed encryption."
  type        = string
  default     = null
}

variable "jwt_authorizer" {
  description = "Optional JWT authorizer ({issuer, audience, jwks_url (optional), principal_claim (optional, sub): the claim naming the caller to the ACLs}) replacing IAM (SigV4) authorization on every route but the Schema Registry's, whose authorizer then also accepts its bearer tokens."
  type = object({
    issuer          = string
    audience        = list(string)
    jwks_url        = optional(string)
    principal_claim = optional(string, "sub")
  })
  default = null
}

variable "console" {
  description = "The web console at /console ({client_id, scopes (optional), authorization_endpoint and token_endpoint (optional)}): needs jwt_authorizer, whose audience must name client_id; see docs/console.md. Null: no console."
  type = object({
    client_id              = string
    scopes                 = optional(list(string), ["openid"])
    authorization_endpoint = optional(string)
    token_endpoint         = optional(string)
  })
  default = null
}

variable "registry_auth_cache_s" {
  description = "Seconds the Schema Registry routes' authorizer answer is reused per Authorization header (API Gateway's cache and the function's); 0 turns caching off."
  type        = number
  default     = 300
}

variable "api_reserved_concurrency" {
  description = "Reserved concurrency of produce and fetch each; -1 for the unreserved pool."
  type        = number
  default     = -1
}

variable "api_memory_mb" {
  description = "Memory of the produce and fetch functions, MB."
  type        = number
  default     = 1769
}

variable "api_timeout_s" {
  description = "Timeout of the produce and fetch functions, seconds (21-30)."
  type        = number
  default     = 29
}

variable "api_throttle" {
  description = "Default route throttling of the HTTP API ({rate_limit, burst_limit})."
  type = object({
    rate_limit  = number
    burst_limit = number
  })
  default = {
    rate_limit  = 1000
    burst_limit = 500
  }
}

variable "compact_memory_mb" {
  description = "Memory of the compact function, MB."
  type        = number
  default     = 3008
}

variable "compact_timeout_s" {
  description = "Timeout of the compact function, seconds."
  type        = number
  default     = 900
}

variable "compact_schedule" {
  description = "EventBridge schedule expression of the compact function."
  type        = string
  default     = "rate(5 minutes)"
}

variable "settings" {
  description = "objectlog settings for the functions (OBJECTLOG_* variables); null fields keep the defaults."
  type = object({
    delete_grace_ms         = optional(number)
    idempotency_expiry_s    = optional(number)
    compact_target_file_mib = optional(number)
    compact_row_group_mib   = optional(number)
    compact_max_mib_per_run = optional(number)
    gc_min_age_ms           = optional(number)
  })
  default = {}
}

variable "tracing" {
  description = "X-Ray active tracing of the functions."
  type        = bool
  default     = true
}

variable "log_retention_days" {
  description = "Retention of the CloudWatch log groups, days."
  type        = number
  default     = 30
}

variable "alarm_actions" {
  description = "ARNs (e.g. SNS topics) notified by the error and throttle alarms."
  type        = list(string)
  default     = []
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which S3 aborts incomplete multipart uploads; 0: no lifecycle rule (local emulators only)."
  type        = number
  default     = 1
}

variable "deny_insecure_transport" {
  description = "Deny non-TLS requests to the buckets. Keep true on AWS; local emulators (moto) need false."
  type        = bool
  default     = true
}

variable "force_destroy" {
  description = "Let `terraform destroy` delete the data bucket with its objects (local and test deployments)."
  type        = bool
  default     = false
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection on the table."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

variable "tables_enabled" {
  description = "Keep every topic as an Iceberg table in the Glue Data Catalog (the compact function registers the compacted files). Per topic: objectlog.table.enabled."
  type        = bool
  default     = true
}

variable "table_database" {
  description = "Glue database of the topics' tables ([a-z0-9_]). Null: the deployment name with '-' as '_'."
  type        = string
  default     = null
}

variable "agent" {
  description = "The Kafka agent service on ECS Fargate behind a TLS Network Load Balancer; null (the default) deploys none. See modules/objectlog/variables.tf for its fields."
  type = object({
    image                      = string
    vpc_id                     = string
    subnet_ids                 = list(string)
    certificate_arn            = string
    min_tasks                  = optional(number, 2)
    max_tasks                  = optional(number, 10)
    cpu                        = optional(number, 1024)
    memory_mb                  = optional(number, 2048)
    target_cpu_percent         = optional(number, 60)
    sasl                       = optional(bool, true)
    internal                   = optional(bool, true)
    assign_public_ip           = optional(bool, false)
    allowed_cidrs              = optional(list(string), ["10.0.0.0/8"])
    autoscaling                = optional(bool, true)
    initial_rebalance_delay_ms = optional(number, 3000)
  })
  default = null
}

variable "auto_create_topics" {
  description = "Kafka's auto.create.topics.enable for the HTTP API's produce and the Kafka agent; off by default, as production Kafka clusters set it."
  type        = bool
  default     = false
}

variable "num_partitions" {
  description = "Kafka's num.partitions: the partitions of a topic created by its first use."
  type        = number
  default     = 1
}

variable "authorizer" {
  description = "Kafka's ACLs on every door (\"acls\", the default) or no authorization (\"none\"): OBJECTLOG_AUTHORIZER of the produce and fetch functions and the agent."
  type        = string
  default     = "acls"
}

variable "super_users" {
  description = "Principals allowed everything (Kafka's super.users), each \"User:<name>\", e.g. \"User:arn:aws:iam::123456789012:role/admin\"."
  type        = list(string)
  default     = []
}

variable "allow_everyone_if_no_acl_found" {
  description = "Kafka's allow.everyone.if.no.acl.found: a resource no ACL names is open to everyone (the upgrade path for a deployment without ACLs)."
  type        = bool
  default     = false
}
