# ---- S3: the data bucket (segments, manifests, L1 files) -----------------------------------

resource "aws_s3_bucket" "data" {
  #checkov:skip=CKV_AWS_18:Server access logs need a second, log-receiving bucket per deployment; CloudTrail data events are the audit trail of choice and are configured per account, not here.
  #checkov:skip=CKV_AWS_21:Versioning would keep every segment garbage collection deletes (objects are written once with If-None-Match and never overwritten), so it only grows the bill; point-in-time state lives in DynamoDB PITR.
  #checkov:skip=CKV_AWS_144:Cross-region replication is a disaster-recovery choice per deployment (it needs versioning, see CKV_AWS_21); not part of the base module.
  #checkov:skip=CKV_AWS_145:SSE-S3 is the default; a customer-managed KMS key is used when var.kms_key_arn is set (aws_s3_bucket_server_side_encryption_configuration.data).
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications: readers learn of new segments from the DynamoDB partition heads.
  bucket        = local.bucket_name
  force_destroy = var.force_destroy
  tags          = local.tags
}

resource "aws_s3_bucket_ownership_controls" "data" {
  bucket = aws_s3_bucket.data.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "data" {
  bucket                  = aws_s3_bucket.data.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "data" {
  bucket = aws_s3_bucket.data.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    # S3 Bucket Keys cut KMS requests (and their cost) for the many small L0 objects.
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "data" {
  count  = var.abort_incomplete_multipart_days > 0 ? 1 : 0
  bucket = aws_s3_bucket.data.id

  # Only multipart leftovers expire here. No rule deletes or transitions segments: retention
  # and garbage collection belong to the compact function, which knows what the index references.
  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {
      prefix = ""
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }
}

data "aws_iam_policy_document" "data_bucket" {
  count = var.deny_insecure_transport ? 1 : 0
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.data.arn, "${aws_s3_bucket.data.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "data" {
  count  = var.deny_insecure_transport ? 1 : 0
  bucket = aws_s3_bucket.data.id
  policy = data.aws_iam_policy_document.data_bucket[0].json
  # A bucket policy cannot be put while public access blocking is still being configured.
  depends_on = [aws_s3_bucket_public_access_block.data]
}

# ---- S3: the artifact bucket (the Lambda layer is over the 50 MB direct-upload limit) --------

resource "aws_s3_bucket" "artifacts" {
  #checkov:skip=CKV_AWS_18:Holds only build artifacts Terraform uploads; access logging would need a further bucket.
  #checkov:skip=CKV_AWS_21:Each layer version is a new object key named by its hash; Terraform replaces it, nothing to version.
  #checkov:skip=CKV_AWS_144:Build artifacts are rebuilt from the repository; no replication needed.
  #checkov:skip=CKV_AWS_145:SSE-S3 by default, the KMS key when var.kms_key_arn is set (see aws_s3_bucket_server_side_encryption_configuration.artifacts).
  #checkov:skip=CKV2_AWS_62:No consumer of S3 event notifications for build artifacts.
  bucket        = local.artifact_bucket_name
  force_destroy = true # only artifacts Terraform itself uploads live here
  tags          = local.tags
}

resource "aws_s3_bucket_ownership_controls" "artifacts" {
  bucket = aws_s3_bucket.artifacts.id
  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "artifacts" {
  bucket                  = aws_s3_bucket.artifacts.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "artifacts" {
  bucket = aws_s3_bucket.artifacts.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "artifacts" {
  count  = var.abort_incomplete_multipart_days > 0 ? 1 : 0
  bucket = aws_s3_bucket.artifacts.id
  rule {
    id     = "abort-incomplete-multipart-uploads"
    status = "Enabled"
    filter {
      prefix = ""
    }
    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }
}

data "aws_iam_policy_document" "artifact_bucket" {
  count = var.deny_insecure_transport ? 1 : 0
  statement {
    sid       = "DenyInsecureTransport"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.artifacts.arn, "${aws_s3_bucket.artifacts.arn}/*"]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

resource "aws_s3_bucket_policy" "artifacts" {
  count      = var.deny_insecure_transport ? 1 : 0
  bucket     = aws_s3_bucket.artifacts.id
  policy     = data.aws_iam_policy_document.artifact_bucket[0].json
  depends_on = [aws_s3_bucket_public_access_block.artifacts]
}

# ---- DynamoDB: topics, partition heads, groups, leases, idempotency records ------------------

resource "aws_dynamodb_table" "state" {
  #checkov:skip=CKV_AWS_119:Encrypted at rest with the AWS-owned key by default; var.kms_key_arn switches to a customer-managed key (server_side_encryption below), which adds KMS cost per request on the hot path.
  name                        = local.table_name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "pk"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection
  tags                        = local.tags

  attribute {
    name = "pk"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  point_in_time_recovery {
    enabled = true
  }

  # Powertools idempotency records (produce's Idempotency-Key) and REST Proxy consumer
  # instances (an hour after they expired by their own timeout) carry their expiry in
  # `expiration` (epoch seconds). No other item has that attribute: leases, members and
  # producer state expire by objectlog's own rules, never by TTL.
  ttl {
    attribute_name = "expiration"
    enabled        = true
  }

  server_side_encryption {
    enabled     = var.kms_key_arn != null
    kms_key_arn = var.kms_key_arn
  }
}
