#!/usr/bin/env bash
# Runs inside the LocalStack container once its services are ready.
#
# 1. The default bucket and table (OBJECTLOG_BUCKET / OBJECTLOG_TABLE = objectlog), so the CLI
#    and the library work against LocalStack as they do against `make run`'s embedded stack.
#    (tests make their own; infra/terraform makes the deployment's own.)
# 2. Says plainly whether the services infra/terraform needs are there.
set -uo pipefail

region="${AWS_DEFAULT_REGION:-us-east-1}"

awslocal s3api head-bucket --bucket objectlog 2>/dev/null \
  || awslocal s3api create-bucket --bucket objectlog --region "$region" >/dev/null
awslocal dynamodb describe-table --table-name objectlog >/dev/null 2>&1 \
  || awslocal dynamodb create-table --table-name objectlog \
       --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
       --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
       --billing-mode PAY_PER_REQUEST >/dev/null
echo "objectlog: bucket and table 'objectlog' ready"

missing=()
awslocal apigatewayv2 get-apis >/dev/null 2>&1 || missing+=("API Gateway v2 (HTTP API)")
awslocal lambda list-layers >/dev/null 2>&1 || missing+=("Lambda layers")
if ((${#missing[@]})); then
  echo "objectlog: NOT available here: ${missing[*]}." >&2
  echo "objectlog: infra/terraform and tests/e2e/test_terraform.py need them: use the" \
       "localstack-pro image with LOCALSTACK_AUTH_TOKEN set (see localstack/README.md)." >&2
else
  echo "objectlog: API Gateway v2 and Lambda layers available: infra/terraform can be applied"
fi
