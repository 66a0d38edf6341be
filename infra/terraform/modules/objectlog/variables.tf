variable "name" {
  description = "Name of this deployment: prefixes every resource (functions, roles, table, log groups, alarms)."
  type        = string
  default     = "objectlog"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must be 3-32 characters of lower-case letters, digits and hyphens, starting with a letter (it becomes part of S3 bucket and IAM role names)."
  }
}

variable "bucket_name" {
  description = "S3 bucket for segments and manifests. Null: <name>-data-<account id>-<region>."
  type        = string
  default     = null

  validation {
    condition     = var.bucket_name == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be a valid S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)."
  }
}

variable "artifact_bucket_name" {
  description = "S3 bucket the Lambda layer is uploaded to (it is over Lambda's 50 MB direct-upload limit). Null: <name>-artifacts-<account id>-<region>."
  type        = string
  default     = null

  validation {
    condition     = var.artifact_bucket_name == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.artifact_bucket_name))
    error_message = "artifact_bucket_name must be a valid S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)."
  }
}

variable "table_name" {
  description = "DynamoDB table for topics, partition heads, groups, leases and idempotency records. Null: <name>."
  type        = string
  default     = null

  validation {
    condition     = var.table_name == null || can(regex("^[a-zA-Z0-9_.-]{3,255}$", var.table_name))
    error_message = "table_name must be 3-255 characters of letters, digits, '_', '.' and '-'."
  }
}

variable "key_prefix" {
  description = "Key prefix inside the bucket (OBJECTLOG_PREFIX), e.g. \"prod/\". Empty for none. The IAM policies are scoped to the objects below it."
  type        = string
  default     = ""

  validation {
    condition     = var.key_prefix == "" || can(regex("^[a-zA-Z0-9!_.*'()-]+(/[a-zA-Z0-9!_.*'()-]+)*/$", var.key_prefix))
    error_message = "key_prefix must be empty or path segments of safe S3 key characters ending in '/', e.g. \"prod/\"."
  }
}

variable "package_dir" {
  description = "Directory holding the Lambda artifacts built by `python -m objectlog.tools.packaging` (layer.zip, produce.zip, fetch.zip, compact.zip)."
  type        = string

  validation {
    condition     = alltrue([for f in ["layer.zip", "produce.zip", "fetch.zip", "compact.zip"] : fileexists("${var.package_dir}/${f}")])
    error_message = "package_dir must hold layer.zip, produce.zip, fetch.zip and compact.zip: run `make package` (or `python -m objectlog.tools.packaging`) first."
  }
}

variable "python_runtime" {
  description = "Lambda runtime. python3.12 (Amazon Linux 2023) is the default; python3.13 also works if the package is built with --python 3.13. SnapStart needs python3.12 or newer, so python3.11 is no longer taken."
  type        = string
  default     = "python3.12"

  validation {
    condition     = contains(["python3.12", "python3.13"], var.python_runtime)
    error_message = "python_runtime must be python3.12 or python3.13 (SnapStart needs 3.12+; the package's wheels are built for one of them)."
  }
}

variable "snap_start" {
  description = "Lambda SnapStart on the produce, fetch and authorize functions' published versions: a new execution environment resumes a snapshot taken after init instead of importing and initializing (infra/terraform/README.md, SnapStart). Its snapshot cache is billed per GB of memory for as long as a version exists; the compact function deletes superseded versions."
  type        = bool
  default     = true
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key for the bucket, the table and the log groups. Null: S3-managed (SSE-S3) and AWS-owned keys."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:<region>:<account>:key/<id>)."
  }
}

variable "jwt_authorizer" {
  description = "Optional JWT authorizer (e.g. Cognito or any OIDC issuer) used instead of IAM (SigV4) authorization on every route but the Schema Registry's, whose authorizer then also accepts this issuer's bearer tokens. jwks_url: where its keys are, when not at the URL its OpenID discovery document names or at <issuer>/.well-known/jwks.json. principal_claim: the claim that names the caller to the ACLs, User:<claim> (OBJECTLOG_JWT_PRINCIPAL_CLAIM; sub by default)."
  type = object({
    issuer          = string
    audience        = list(string)
    jwks_url        = optional(string)
    principal_claim = optional(string, "sub")
  })
  default = null

  validation {
    condition     = var.jwt_authorizer == null || (startswith(try(var.jwt_authorizer.issuer, ""), "https://") && length(try(var.jwt_authorizer.audience, [])) > 0)
    error_message = "jwt_authorizer.issuer must be an https:// URL and audience must name at least one audience."
  }
}

variable "console" {
  description = "The web console at /console (docs/console.md), served only with jwt_authorizer: the page signs its user in at jwt_authorizer.issuer (authorization code with PKCE) as client_id, a public client (no secret) whose allowed callback URL is <api_endpoint>/console/callback and which jwt_authorizer.audience names, and sends the bearer token with every API call, so each action is authorized as that user by the ACLs. scopes: what the page asks for (openid by default). authorization_endpoint, token_endpoint: where the issuer's are when its OpenID discovery document does not name them (Cognito's are on the user pool's domain). Null: no console routes."
  type = object({
    client_id              = string
    scopes                 = optional(list(string), ["openid"])
    authorization_endpoint = optional(string)
    token_endpoint         = optional(string)
  })
  default = null

  validation {
    condition     = var.console == null || var.jwt_authorizer != null
    error_message = "console needs jwt_authorizer: a browser cannot sign SigV4, so the console's user signs in at the JWT issuer."
  }

  validation {
    condition     = var.console == null || contains(try(var.jwt_authorizer.audience, []), try(var.console.client_id, ""))
    error_message = "console.client_id must be one of jwt_authorizer.audience: the API accepts the console's tokens only then."
  }
}

variable "registry_auth_cache_s" {
  description = "Seconds an answer of the Schema Registry routes' authorizer is reused, per Authorization header value: by API Gateway (authorizer_result_ttl_in_seconds) and by the authorize function itself. A deleted user or a changed password may keep working this long; a token is never reused past its exp in the function, but API Gateway's cache does not look at exp. 0 turns both caches off (every request then invokes the authorizer)."
  type        = number
  default     = 300

  validation {
    condition     = var.registry_auth_cache_s >= 0 && var.registry_auth_cache_s <= 3600 && floor(var.registry_auth_cache_s) == var.registry_auth_cache_s
    error_message = "registry_auth_cache_s must be whole seconds from 0 to 3600 (API Gateway's limit)."
  }
}

variable "api_throttle" {
  description = "Default route throttling of the HTTP API: steady-state requests per second and burst."
  type = object({
    rate_limit  = number
    burst_limit = number
  })
  default = {
    rate_limit  = 1000
    burst_limit = 500
  }

  validation {
    condition     = var.api_throttle.rate_limit > 0 && var.api_throttle.burst_limit > 0
    error_message = "api_throttle.rate_limit and burst_limit must be positive."
  }
}

variable "api_memory_mb" {
  description = "Memory of the produce and fetch functions, MB (CPU scales with it; pyarrow decoding wants at least 1024)."
  type        = number
  default     = 1769

  validation {
    condition     = var.api_memory_mb >= 512 && var.api_memory_mb <= 10240
    error_message = "api_memory_mb must be between 512 and 10240."
  }
}

variable "api_timeout_s" {
  description = "Timeout of the produce and fetch functions, seconds. API Gateway gives up after 30 s; fetch long polls at most 20 s."
  type        = number
  default     = 29

  validation {
    condition     = var.api_timeout_s >= 21 && var.api_timeout_s <= 30
    error_message = "api_timeout_s must be 21-30: above a fetch's 20 s long poll, within API Gateway's 30 s."
  }
}

variable "api_reserved_concurrency" {
  description = "Reserved concurrency of each of produce and fetch; -1 leaves them on the account's unreserved pool."
  type        = number
  default     = -1

  validation {
    condition     = var.api_reserved_concurrency == -1 || var.api_reserved_concurrency >= 1
    error_message = "api_reserved_concurrency must be -1 (unreserved) or at least 1."
  }
}

variable "compact_memory_mb" {
  description = "Memory of the compact function, MB (it rewrites up to compact_max_mib_per_run of segments per partition)."
  type        = number
  default     = 3008

  validation {
    condition     = var.compact_memory_mb >= 1024 && var.compact_memory_mb <= 10240
    error_message = "compact_memory_mb must be between 1024 and 10240."
  }
}

variable "compact_timeout_s" {
  description = "Timeout of the compact function, seconds; a run stops starting partitions a minute before it."
  type        = number
  default     = 900

  validation {
    condition     = var.compact_timeout_s >= 120 && var.compact_timeout_s <= 900
    error_message = "compact_timeout_s must be between 120 and 900."
  }
}

variable "compact_schedule" {
  description = "EventBridge schedule expression of the compact function."
  type        = string
  default     = "rate(5 minutes)"

  validation {
    condition     = can(regex("^(rate\\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\\)|cron\\(.+\\))$", var.compact_schedule))
    error_message = "compact_schedule must be rate(N unit) or cron(...)."
  }
}

variable "settings" {
  description = "objectlog settings passed to the functions as OBJECTLOG_* variables. Null fields keep the library defaults (docs/compaction.md, docs/api.md)."
  type = object({
    delete_grace_ms         = optional(number) # OBJECTLOG_DELETE_GRACE_MS, all functions
    idempotency_expiry_s    = optional(number) # OBJECTLOG_IDEMPOTENCY_EXPIRY_S, produce
    compact_target_file_mib = optional(number) # OBJECTLOG_COMPACT_TARGET_MIB, compact
    compact_row_group_mib   = optional(number) # OBJECTLOG_COMPACT_ROW_GROUP_MIB, compact
    compact_max_mib_per_run = optional(number) # OBJECTLOG_COMPACT_MAX_MIB_PER_RUN, compact
    gc_min_age_ms           = optional(number) # OBJECTLOG_GC_MIN_AGE_MS, compact
  })
  default = {}

  validation {
    condition     = alltrue([for v in values(var.settings) : v == null ? true : v >= 0])
    error_message = "settings values must be non-negative numbers."
  }

  validation {
    condition = alltrue([
      for k in ["compact_target_file_mib", "compact_row_group_mib", "compact_max_mib_per_run"] :
      var.settings[k] == null ? true : var.settings[k] > 0
    ])
    error_message = "the compact_*_mib settings must be positive."
  }
}

variable "tracing" {
  description = "X-Ray active tracing of the functions (the Powertools Tracer sends segments)."
  type        = bool
  default     = true
}

variable "log_retention_days" {
  description = "Retention of the functions' and the API's CloudWatch log groups, days."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' retention values (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."
  }
}

variable "alarm_actions" {
  description = "ARNs (e.g. SNS topics) notified when an error or throttle alarm fires or recovers."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for a in var.alarm_actions : startswith(a, "arn:")])
    error_message = "alarm_actions must be ARNs."
  }
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which S3 aborts incomplete multipart uploads in both buckets (a lifecycle rule); 0 leaves the buckets without a lifecycle configuration. Only local emulators set 0: against moto the provider's lifecycle wait costs about 55 s of every apply."
  type        = number
  default     = 1
  validation {
    condition     = var.abort_incomplete_multipart_days >= 0 && floor(var.abort_incomplete_multipart_days) == var.abort_incomplete_multipart_days
    error_message = "abort_incomplete_multipart_days must be a whole number of days, 0 or more."
  }
}

variable "deny_insecure_transport" {
  description = "Bucket policies denying every request not made over TLS (aws:SecureTransport). Only local emulators turn this off: moto applies a conditioned Deny to every request (it never evaluates aws:SecureTransport) and serves plain HTTP."
  type        = bool
  default     = true
}

variable "force_destroy" {
  description = "Let `terraform destroy` delete the buckets with their objects. Keep false for real data."
  type        = bool
  default     = false
}

variable "deletion_protection" {
  description = "DynamoDB deletion protection on the table. Keep true for real data."
  type        = bool
  default     = true
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

variable "tables_enabled" {
  description = "Keep every topic as an Iceberg table in the Glue Data Catalog (the compact function registers the compacted files; DESIGN.md section 11). Per topic: objectlog.table.enabled."
  type        = bool
  default     = true
}

variable "table_database" {
  description = "Glue database of the topics' tables ([a-z0-9_]). Null: the deployment name with '-' as '_'."
  type        = string
  default     = null

  validation {
    condition     = var.table_database == null || can(regex("^[a-z0-9_]{1,255}$", var.table_database))
    error_message = "table_database must be 1-255 characters of lower-case letters, digits and underscores (Glue and Athena)."
  }
}

variable "agent" {
  description = "The Kafka agent service (agent.tf, docs/kafka.md): null (the default) deploys none. image: the agent's image (infra/agent/Dockerfile) in a registry ECS can pull from; vpc_id, subnet_ids: where the tasks and the Network Load Balancer run; certificate_arn: the ACM certificate of the NLB's TLS listener (port 9094); min_tasks (2; 0 lets an idle service scale to zero), max_tasks (10), cpu (1024), memory_mb (2048), target_cpu_percent (60); sasl (true: SCRAM-SHA-512 required, users from `objectlog users`); internal (true), assign_public_ip (false), allowed_cidrs (who may connect); autoscaling (true; false leaves the service at min_tasks: local emulators only, moto cannot read Application Auto Scaling tags); initial_rebalance_delay_ms (3000: how long an empty consumer group waits for more members before its first rebalance, Kafka's group.initial.rebalance.delay.ms)."
  type = object({
    image              = string
    vpc_id             = string
    subnet_ids         = list(string)
    certificate_arn    = string
    min_tasks          = optional(number, 2)
    max_tasks          = optional(number, 10)
    cpu                = optional(number, 1024)
    memory_mb          = optional(number, 2048)
    target_cpu_percent = optional(number, 60)
    sasl               = optional(bool, true)
    internal           = optional(bool, true)
    assign_public_ip   = optional(bool, false)
    allowed_cidrs      = optional(list(string), ["10.0.0.0/8"])
    autoscaling        = optional(bool, true)
    # Kafka's group.initial.rebalance.delay.ms (objectlog.kafka.classic.INITIAL_REBALANCE_DELAY_MS)
    initial_rebalance_delay_ms = optional(number, 3000)
  })
  default = null

  validation {
    condition     = var.agent == null || (try(var.agent.min_tasks >= 0 && var.agent.max_tasks >= max(var.agent.min_tasks, 1), false))
    error_message = "agent.min_tasks must be 0 or more and agent.max_tasks at least min_tasks and 1."
  }
  validation {
    condition     = var.agent == null || try(length(var.agent.subnet_ids) > 0 && can(regex("^arn:", var.agent.certificate_arn)), false)
    error_message = "agent needs subnet_ids and an ACM certificate_arn for the TLS listener."
  }
  validation {
    condition     = var.agent == null || try(var.agent.initial_rebalance_delay_ms >= 0 && floor(var.agent.initial_rebalance_delay_ms) == var.agent.initial_rebalance_delay_ms, false)
    error_message = "agent.initial_rebalance_delay_ms must be a whole number of milliseconds, 0 or more."
  }
}

variable "auto_create_topics" {
  description = "Kafka's auto.create.topics.enable for the HTTP API's produce and the Kafka agent (OBJECTLOG_AUTO_CREATE_TOPICS): a topic a client produces to (or, through the agent, asks metadata for) that does not exist is created with num_partitions partitions. Off by default, as production Kafka clusters set it; objectlog dev turns it on."
  type        = bool
  default     = false
}

variable "num_partitions" {
  description = "Kafka's num.partitions: the partitions of a topic created by its first use (OBJECTLOG_NUM_PARTITIONS)."
  type        = number
  default     = 1

  validation {
    condition     = var.num_partitions >= 1 && var.num_partitions <= 10000 && floor(var.num_partitions) == var.num_partitions
    error_message = "num_partitions must be a whole number from 1 to 10000."
  }
}

variable "authorizer" {
  description = "Authorization of every request on every door (the HTTP API, REST Proxy, Schema Registry and Kafka agent) by Kafka's ACLs (OBJECTLOG_AUTHORIZER, Kafka's authorizer.class.name): \"acls\" (the default) or \"none\" (whoever the door authenticates may do everything). Grant with `objectlog acls add`; docs/security.md."
  type        = string
  default     = "acls"

  validation {
    condition     = contains(["acls", "none"], var.authorizer)
    error_message = "authorizer must be \"acls\" or \"none\"."
  }
}

variable "super_users" {
  description = "Principals that may do everything whatever the ACLs say (OBJECTLOG_SUPER_USERS, Kafka's super.users), each \"User:<name>\": an IAM caller is User:<its ARN>, an assumed role User:arn:aws:iam::<account>:role/<name>; a SCRAM or registry user User:<user name>."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for u in var.super_users : can(regex("^User:[^;[:space:]][^;]*$", u)) && trimspace(u) == u])
    error_message = "super_users must each be a principal User:<name> (no ';', no surrounding spaces)."
  }
}

variable "allow_everyone_if_no_acl_found" {
  description = "Kafka's allow.everyone.if.no.acl.found (OBJECTLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND): a resource no ACL names is open to everyone. The upgrade path of a deployment that had no ACLs: apply with true, add the ACLs, apply with false."
  type        = bool
  default     = false
}
