# objectlog on AWS: an S3 bucket (segments, manifests), a DynamoDB table (state), four Lambda
# functions (produce and fetch behind an API Gateway HTTP API, authorize guarding its Schema
# Registry routes, compact on an EventBridge schedule), one least-privilege role per function,
# log groups and alarms.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current.name
  partition  = data.aws_partition.current.partition

  bucket_name          = coalesce(var.bucket_name, "${var.name}-data-${local.account_id}-${local.region}")
  artifact_bucket_name = coalesce(var.artifact_bucket_name, "${var.name}-artifacts-${local.account_id}-${local.region}")
  table_name           = coalesce(var.table_name, var.name)

  # The HTTP routes and the function serving each: generated from objectlog.http.routes.ROUTES
  # (tests/e2e/test_terraform.py fails if the two differ). Anything else goes to fetch ($default).
  routes = jsondecode(file("${path.module}/routes.json"))

  # The key layout inside the bucket (objectlog.format.layout): every S3 permission names one of these.
  object_arns = {
    l0     = "${aws_s3_bucket.data.arn}/${var.key_prefix}l0/*"
    index  = "${aws_s3_bucket.data.arn}/${var.key_prefix}index/*"
    topics = "${aws_s3_bucket.data.arn}/${var.key_prefix}topics/*"
    tables = "${aws_s3_bucket.data.arn}/${var.key_prefix}tables/*"
  }

  # Topics as Iceberg tables (tables.tf): the Glue database the compact function keeps them in.
  table_database = coalesce(var.table_database, replace(var.name, "-", "_"))
  tables_env = var.tables_enabled ? {
    OBJECTLOG_CATALOG         = "glue"
    OBJECTLOG_TABLE_NAMESPACE = aws_glue_catalog_database.tables[0].name
  } : {}

  settings_env = {
    delete_grace_ms         = "OBJECTLOG_DELETE_GRACE_MS"
    idempotency_expiry_s    = "OBJECTLOG_IDEMPOTENCY_EXPIRY_S"
    compact_target_file_mib = "OBJECTLOG_COMPACT_TARGET_MIB"
    compact_row_group_mib   = "OBJECTLOG_COMPACT_ROW_GROUP_MIB"
    compact_max_mib_per_run = "OBJECTLOG_COMPACT_MAX_MIB_PER_RUN"
    gc_min_age_ms           = "OBJECTLOG_GC_MIN_AGE_MS"
  }
  # Which function reads which setting (objectlog.config, api.idempotency, api.compact).
  settings_by_function = {
    produce   = ["delete_grace_ms", "idempotency_expiry_s"]
    fetch     = ["delete_grace_ms"]
    compact   = ["delete_grace_ms", "compact_target_file_mib", "compact_row_group_mib", "compact_max_mib_per_run", "gc_min_age_ms"]
    authorize = []
  }

  common_env = merge(
    {
      OBJECTLOG_BUCKET             = aws_s3_bucket.data.bucket
      OBJECTLOG_TABLE              = aws_dynamodb_table.state.name
      POWERTOOLS_SERVICE_NAME      = "objectlog"
      POWERTOOLS_METRICS_NAMESPACE = "objectlog"
    },
    var.key_prefix == "" ? {} : { OBJECTLOG_PREFIX = var.key_prefix },
    # Without X-Ray tracing the handlers build no Tracer (objectlog.telemetry): Powertools'
    # would import the X-Ray SDK and patch botocore at every cold start for nothing.
    var.tracing ? {} : { POWERTOOLS_TRACE_DISABLED = "true" },
  )

  functions = {
    produce = {
      description = "objectlog HTTP API: topic admin writes and record production"
      memory      = var.api_memory_mb
      timeout     = var.api_timeout_s
      concurrency = var.api_reserved_concurrency
    }
    fetch = {
      description = "objectlog HTTP API: topic reads, fetches, offsets, consumer groups, docs"
      memory      = var.api_memory_mb
      timeout     = var.api_timeout_s
      concurrency = var.api_reserved_concurrency
    }
    compact = {
      description = "objectlog maintenance: compaction, retention and garbage collection"
      memory      = var.compact_memory_mb
      timeout     = var.compact_timeout_s
      # One run at a time: runs are fenced by leases anyway, a second one would only skip.
      concurrency = 1
    }
    # A function of its own rather than a mode of fetch: its role may read one item (the users'
    # document), where fetch's may write groups and read segments; and it stays small (no
    # pyarrow work, 512 MB: a first check of a password is one PBKDF2 of 8192 rounds).
    authorize = {
      description = "objectlog HTTP API: the Schema Registry routes' authorizer (basic auth, bearer JWTs)"
      memory      = 512
      timeout     = 10 # API Gateway waits at most 10 s for an authorizer
      concurrency = var.api_reserved_concurrency
    }
  }

  # API Gateway, EventBridge and their permissions invoke this alias, never $LATEST: each apply
  # publishes a version (the one SnapStart snapshots) and moves the alias onto it.
  function_alias = "live"
  # The functions' names and ARNs spelled out, not read from the functions: the compact role's
  # policy names them, and every function waits for its role's policy.
  function_names = { for fn, _ in local.functions : fn => "${var.name}-${fn}" }
  function_arns = {
    for fn, name in local.function_names :
    fn => "arn:${local.partition}:lambda:${local.region}:${local.account_id}:function:${name}"
  }
  # The compact function deletes every function's versions older than the one the alias
  # serves (objectlog.adapters.lambda_versions: a superseded version's snapshot is billed).
  versions_env = {
    OBJECTLOG_VERSIONED_FUNCTIONS = join(",", [for fn in sort(keys(local.functions)) : local.function_names[fn]])
    OBJECTLOG_FUNCTION_ALIAS      = local.function_alias
  }
  # The latency-bound functions; compact runs on a schedule, where a cold start costs nothing
  # worth a snapshot cache billed around the clock.
  snap_start_functions = var.snap_start ? toset(["produce", "fetch", "authorize"]) : toset([])

  # The authorizer's settings (objectlog.functions.authorize): its in-process cache as long as
  # API Gateway's, and the JWT issuer whose bearer tokens it accepts, if one is configured.
  authorizer_env = merge(
    { OBJECTLOG_AUTH_CACHE_S = tostring(var.registry_auth_cache_s) },
    var.jwt_authorizer == null ? {} : {
      OBJECTLOG_JWT_ISSUER   = var.jwt_authorizer.issuer
      OBJECTLOG_JWT_AUDIENCE = join(",", var.jwt_authorizer.audience)
    },
    try(var.jwt_authorizer.jwks_url, null) == null ? {} : {
      OBJECTLOG_JWT_JWKS_URL = var.jwt_authorizer.jwks_url
    },
  )

  # The web console's sign-in (objectlog.http.console_routes): the fetch function serves the page
  # and tells it where its user signs in.
  console_env = var.console == null ? {} : merge(
    {
      OBJECTLOG_CONSOLE_CLIENT_ID = var.console.client_id
      OBJECTLOG_CONSOLE_SCOPES    = join(" ", var.console.scopes)
      OBJECTLOG_JWT_ISSUER        = var.jwt_authorizer.issuer
    },
    var.console.authorization_endpoint == null ? {} : {
      OBJECTLOG_CONSOLE_AUTHORIZATION_ENDPOINT = var.console.authorization_endpoint
    },
    var.console.token_endpoint == null ? {} : {
      OBJECTLOG_CONSOLE_TOKEN_ENDPOINT = var.console.token_endpoint
    },
  )

  # Kafka's auto.create.topics.enable and num.partitions: the doors that create topics on first
  # use read them (the produce function and the Kafka agent).
  topic_creation_env = {
    OBJECTLOG_AUTO_CREATE_TOPICS = tostring(var.auto_create_topics)
    OBJECTLOG_NUM_PARTITIONS     = tostring(var.num_partitions)
  }

  # Kafka's authorizer settings (objectlog.services.access): every door that serves callers
  # reads them (the produce and fetch functions, the HTTP doors, and the Kafka agent).
  # authorize only authenticates: the functions behind it decide what its principal may do.
  access_env = merge(
    {
      OBJECTLOG_AUTHORIZER                     = var.authorizer
      OBJECTLOG_SUPER_USERS                    = join(";", var.super_users)
      OBJECTLOG_ALLOW_EVERYONE_IF_NO_ACL_FOUND = tostring(var.allow_everyone_if_no_acl_found)
    },
    var.jwt_authorizer == null ? {} : {
      OBJECTLOG_JWT_PRINCIPAL_CLAIM = var.jwt_authorizer.principal_claim
    },
  )

  function_env = {
    for fn, _ in local.functions : fn => merge(
      local.common_env,
      {
        for key in local.settings_by_function[fn] :
        local.settings_env[key] => tostring(var.settings[key]) if var.settings[key] != null
      },
      fn == "compact" ? merge(local.tables_env, local.versions_env) : {},
      fn == "produce" ? local.topic_creation_env : {},
      contains(["produce", "fetch"], fn) ? local.access_env : {},
      fn == "authorize" ? local.authorizer_env : {},
      fn == "fetch" ? local.console_env : {},
    )
  }

  tags = merge({ "objectlog:deployment" = var.name }, var.tags)
}
