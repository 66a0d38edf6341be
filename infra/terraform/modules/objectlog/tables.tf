# ---- Topics as Iceberg tables (DESIGN.md section 11) ------------------------------------------
#
# The compact function registers each topic's compacted (L1) files as an Iceberg table in this
# Glue database and keeps it current; it is the only writer (iam.tf grants glue:CreateTable,
# UpdateTable and DeleteTable to its role alone). Readers (Athena, EMR, anything with the
# reader policy below) query the tables in place.

resource "aws_glue_catalog_database" "tables" {
  count       = var.tables_enabled ? 1 : 0
  name        = local.table_database
  description = "objectlog ${var.name}: topics as Iceberg tables, written by the compact function only"
  tags        = local.tags
}

locals {
  glue_catalog_arn  = "arn:${local.partition}:glue:${local.region}:${local.account_id}:catalog"
  glue_database_arn = "arn:${local.partition}:glue:${local.region}:${local.account_id}:database/${local.table_database}"
  glue_tables_arn   = "arn:${local.partition}:glue:${local.region}:${local.account_id}:table/${local.table_database}/*"

  # What the compact function's Glue client calls (pyiceberg's GlueCatalog): the database
  # exists (Terraform's), so it never creates one.
  glue_statements = {
    produce = []
    fetch   = []
    compact = var.tables_enabled ? [
      { sid = "FindTableDatabase", actions = ["glue:GetDatabase"], resources = [local.glue_catalog_arn, local.glue_database_arn] },
      {
        sid       = "KeepTopicTables"
        actions   = ["glue:CreateTable", "glue:DeleteTable", "glue:GetTable", "glue:GetTables", "glue:UpdateTable"]
        resources = [local.glue_catalog_arn, local.glue_database_arn, local.glue_tables_arn]
      },
    ] : []
  }
}

# For Athena, EMR and other readers of the tables: the catalog entries, the table metadata and
# the data files they list (the L1 files under topics/). Attach it to the readers' roles.
data "aws_iam_policy_document" "table_reader" {
  statement {
    sid       = "ReadTopicTables"
    actions   = ["glue:GetDatabase", "glue:GetDatabases", "glue:GetTable", "glue:GetTables", "glue:GetPartitions"]
    resources = [local.glue_catalog_arn, local.glue_database_arn, local.glue_tables_arn]
  }

  statement {
    sid       = "ReadTableFiles"
    actions   = ["s3:GetObject"]
    resources = [local.object_arns.tables, local.object_arns.topics]
  }
}

resource "aws_iam_policy" "table_reader" {
  count       = var.tables_enabled ? 1 : 0
  name        = "${var.name}-table-reader"
  description = "Read-only access to objectlog ${var.name}'s topic tables (Glue and S3)"
  policy      = data.aws_iam_policy_document.table_reader.json
  tags        = local.tags
}
