"""infra/terraform: applied to the AWS endpoint of the test session (the embedded moto server,
or LocalStack when AWS_ENDPOINT_URL is set), the *deployed* API called through the local gateway
with the Python client, every AWS call each handler made checked against the IAM policies
Terraform applied, then destroyed. Plus the static checks and the packaging.

Missing Terraform or the provider mirror fails these tests (objectlog.tools.deploy.terraform
says what to set); nothing here is skipped for a missing prerequisite.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import requests

from objectlog import ObjectLog
from objectlog.clock import ulid_time_ms
from objectlog.config import Config
from objectlog.format.segment import slice_table
from objectlog.format.tables import table_name
from objectlog.functions.compact import ENV_VERSION_GRACE_S
from objectlog.groups import TopicPartition
from objectlog.http.routes import ROUTES
from objectlog.http.schema_registry import is_schema_registry
from objectlog.kafka.classic import INITIAL_REBALANCE_DELAY_MS
from objectlog.services.append import PartitionBatch
from objectlog.services.index import TAIL_MAX
from objectlog.stores.metadata import Commit
from objectlog.tools import packaging
from objectlog.tools.deploy import DeployError
from objectlog.tools.deploy.deployment import Deployment
from objectlog.tools.deploy.functions import resolve_handler
from objectlog.tools.deploy.policies import (
    Call,
    Condition,
    PolicyReport,
    Statement,
    allowed,
    check_policy,
    iam_calls,
    invoke_allowed,
    leading_keys,
    parse_policy,
    role_statements,
    wildcard_match,
)
from objectlog.tools.deploy.terraform import Workspace, find_terraform, local_variables
from objectlog.tools.packaging import LAMBDA_UNZIPPED_LIMIT
from objectlog.tools.project import find_project
from tests.e2e.deployed_access import (
    ACCESS_VARIABLES,
    Caller,
    assert_module_access,
    assume_role,
    credential_lookup,
    delete_roles,
    grant,
    reader_session,
    signing_client,
)
from tests.e2e.early_deployment import EarlyDeployment

REPO = Path(__file__).resolve().parents[2]
PROJECT = find_project(REPO)
TERRAFORM_DIR = PROJECT.terraform
MODULE_DIR = TERRAFORM_DIR / "modules" / "objectlog"
REPORT = REPO / "build" / "terraform-e2e.json"
TOPIC = "orders"
LEDGER = "ledger"  # cleanup.policy=compact: a second compaction reads and replaces L1 files
FLUSHES = 36  # two tail spills on partition 0 (the tail holds at most 16 refs)
FUNCTION_KEYS = ("produce", "fetch", "compact", "authorize")


@pytest.fixture(scope="module", autouse=True)
def deployment_applies_meanwhile(early_deployment: EarlyDeployment | None) -> None:
    """On a pytest-xdist worker the deployment starts with this module (a file stays on one
    worker), so its apply runs while the static and packaging tests below do."""
    if early_deployment is not None:
        early_deployment.start()


# ---- static ---------------------------------------------------------------------------------


def test_routes_json_is_the_route_table() -> None:
    """Terraform's routes come from routes.json; it must be exactly objectlog.http.routes."""
    deployed = json.loads((MODULE_DIR / "routes.json").read_text())
    assert deployed == {f"{m} {p}": f for m, p, f in ROUTES}, (
        "regenerate it: python -m objectlog.tools.deploy routes > "
        "infra/terraform/modules/objectlog/routes.json"
    )


def test_terraform_fmt() -> None:
    result = subprocess.run(
        [find_terraform(), "fmt", "-check", "-recursive", "-diff", str(TERRAFORM_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"terraform fmt -check:\n{result.stdout}{result.stderr}"


def test_terraform_validate(tmp_path: Path) -> None:
    workspace = Workspace("validate", {}, state_dir=tmp_path, project=PROJECT)
    assert "Success" in workspace.validate()


@pytest.mark.slow  # two plans after an init: 40 to 100 s here (make test-slow)
def test_the_console_is_enabled_only_with_the_jwt_authorizer(
    aws_endpoint: str, tmp_path: Path
) -> None:
    """A browser cannot sign SigV4 (issue 39): a plan with the console and no JWT authorizer, or
    with an authorizer that would refuse the console's tokens, stops at the module's variables."""
    variables = local_variables(aws_endpoint, "console-check", tmp_path / "package")
    workspace = Workspace("console-check", variables, state_dir=tmp_path, project=PROJECT)
    workspace.init()
    for jwt_authorizer, message in (
        (None, "console needs jwt_authorizer"),
        ({"issuer": "https://issuer.test", "audience": ["api"]}, "must be one of"),
    ):
        variables |= {"console": {"client_id": "console"}, "jwt_authorizer": jwt_authorizer}
        with pytest.raises(DeployError) as refused:
            plan = ("plan", "-no-color", "-refresh=false", "-lock=false")
            workspace.run(*plan, workspace._var_file())
        assert message in " ".join(str(refused.value).split())


def test_every_variable_has_a_description() -> None:
    for path in [TERRAFORM_DIR / "variables.tf", MODULE_DIR / "variables.tf"]:
        text = path.read_text()
        blocks = text.split('variable "')[1:]
        assert blocks, path
        for block in blocks:
            name = block.split('"', 1)[0]
            assert "description" in block.split("\nvariable", 1)[0], f"{path.name}: {name}"


def test_localstack_compose_mounts_its_init_hook() -> None:
    """localstack/ cannot run here (no Docker): at least its files are well formed."""
    import yaml

    compose = yaml.safe_load((REPO / "localstack" / "docker-compose.yml").read_text())
    service = compose["services"]["localstack"]
    assert "127.0.0.1:4566:4566" in service["ports"]
    assert "./init/ready.d:/etc/localstack/init/ready.d:ro" in service["volumes"]
    for hook in (REPO / "localstack" / "init" / "ready.d").glob("*.sh"):
        assert os.access(hook, os.X_OK), f"{hook.name} must be executable"
        subprocess.run(["bash", "-n", str(hook)], check=True)


# ---- packaging ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def light_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package without dependencies: moto never runs the code, and the deployed gateway
    imports the handlers from it (and checks its objectlog is this tree's)."""
    out = tmp_path_factory.mktemp("lambda-light")
    packaging.build(out, light=True, project=PROJECT)
    return out


def test_light_package_is_reproducible_and_shaped_for_lambda(
    light_package: Path, tmp_path: Path
) -> None:
    again = packaging.build(tmp_path, light=True, project=PROJECT)
    for name in ["layer", *packaging.function_names(PROJECT)]:
        first = (light_package / f"{name}.zip").read_bytes()
        assert first == (tmp_path / f"{name}.zip").read_bytes(), f"{name}.zip differs"
    with zipfile.ZipFile(light_package / "layer.zip") as layer:
        infos = layer.infolist()
        assert [i.filename for i in infos] == sorted(i.filename for i in infos)
        assert {i.date_time for i in infos} == {packaging.FIXED_DATE}
        assert {i.external_attr >> 16 for i in infos} <= {0o100644, 0o100755}
        assert "python/objectlog/http/app.py" in layer.namelist()
        assert not [n for n in layer.namelist() if n.startswith("python/objectlog/tools/")]
        assert not [n for n in layer.namelist() if "__pycache__" in n or n.endswith(".pyc")]
    for function in packaging.function_names(PROJECT):
        with zipfile.ZipFile(light_package / f"{function}.zip") as code:
            assert code.namelist() == ["handler.py"]
            assert (
                code.read("handler.py")
                == (REPO / "functions" / function / "handler.py").read_bytes()
            )
    manifest = json.loads((light_package / "manifest.json").read_text())
    assert manifest["layer"]["sha256_base64"] == again.layer.sha256


def test_the_handlers_imports_are_found() -> None:
    """The packager follows the handlers' imports through objectlog: the layer's distributions
    are the ones that closure imports (Spark's and the tooling's are not among them)."""
    imported = packaging.handler_imports(PROJECT)
    assert {"pyarrow", "aws_lambda_powertools", "pydantic", "boto3"} <= imported
    assert "pyspark" not in imported and "werkzeug" not in imported


# ---- the policy evaluator -------------------------------------------------------------------


def test_iam_wildcards_and_evaluation() -> None:
    assert wildcard_match("arn:aws:s3:::b/l0/*", "arn:aws:s3:::b/l0/ab/x.l0")
    assert not wildcard_match("arn:aws:s3:::b/l0/*", "arn:aws:s3:::b/index/x")
    assert wildcard_match("s3:Get*", "s3:getobject", ignore_case=True)
    assert wildcard_match("arn:aws:s3:::b/?0/*", "arn:aws:s3:::b/l0/k")
    statements = parse_policy(
        {
            "Statement": [
                {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::b/*"},
                {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/secret/*"},
            ]
        }
    )
    assert allowed(statements, Call("s3:GetObject", "arn:aws:s3:::b/l0/x"))
    assert not allowed(statements, Call("s3:GetObject", "arn:aws:s3:::b/secret/x"))
    assert not allowed(statements, Call("s3:PutObject", "arn:aws:s3:::b/l0/x"))
    assert parse_policy(json.dumps({"Statement": {"Action": "a:B", "Resource": "*"}}))


def test_policy_check_flags_missing_unused_and_wildcard_grants() -> None:
    table = "arn:aws:dynamodb:us-east-1:1:table/t"
    statements = [
        Statement("Allow", ("dynamodb:GetItem", "dynamodb:Scan"), (table,), "State"),
        Statement("Allow", ("s3:*",), ("*",), "Everything"),
        Statement("Allow", ("logs:PutLogEvents",), ("arn:aws:logs:*",), "Logs"),
    ]
    calls = [Call("dynamodb:GetItem", table), Call("dynamodb:PutItem", table)]
    report = check_policy("f", "role", statements, calls)
    assert report.denied == [Call("dynamodb:PutItem", table)]
    assert "dynamodb:Scan" in report.unused_actions and "s3:*" in report.unused_actions
    assert "logs:PutLogEvents" not in report.unused_actions  # the runtime's own call
    assert any("'s3:*'" in p for p in report.wildcard_problems)
    assert any("on '*'" in p for p in report.wildcard_problems)
    assert not report.ok


def test_leading_keys_conditions_confine_a_role_to_named_items() -> None:
    """ForAllValues:StringEquals on dynamodb:LeadingKeys is evaluated against the partition
    keys each call named; any other condition fails the check."""
    table = "arn:aws:dynamodb:us-east-1:1:table/t"
    users = "doc#kafka-users#all"
    (statement,) = parse_policy(
        {
            "Statement": {
                "Sid": "State",
                "Effect": "Allow",
                "Action": "dynamodb:GetItem",
                "Resource": table,
                "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [users]}},
            }
        }
    )
    get = Call("dynamodb:GetItem", table)
    assert allowed([statement], get, frozenset({users}))
    assert not allowed([statement], get, frozenset({users, "topic#orders"}))
    assert check_policy("f", "r", [statement], [get], {get: {users}}).ok
    report = check_policy("f", "r", [statement], [get], {get: {users, "head#x#0"}})
    assert report.denied == [get] and not report.conditions
    keyed = {"TableName": "t", "Key": {"pk": {"S": users}, "sk": {"S": "doc"}}}
    assert leading_keys("dynamodb", "GetItem", keyed) == {users}
    batch = {"RequestItems": {"t": {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "b"}}]}}}
    assert leading_keys("dynamodb", "BatchGetItem", batch) == {"a", "b"}
    other = Statement(
        "Allow",
        ("dynamodb:GetItem",),
        (table,),
        "Ip",
        (Condition("IpAddress", "aws:SourceIp", ("10.0.0.0/8",)),),
    )
    assert check_policy("f", "r", [other], [get]).conditions == ["Ip"]


def test_the_authorizer_role_names_the_users_document() -> None:
    """iam.tf confines the authorize function to the item objectlog.kafka.users keeps."""
    from objectlog.kafka.users import KIND, NAME
    from objectlog.stores.documents import document_key

    text = (MODULE_DIR / "iam.tf").read_text()
    assert f'authorize = ["{document_key(KIND, NAME)["pk"]}"]' in text


def test_invoke_permissions_are_matched_on_principal_action_and_source() -> None:
    api = "arn:aws:execute-api:us-east-1:1:abc"
    policy = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "apigateway.amazonaws.com"},
                "Action": "lambda:InvokeFunction",
                "Condition": {"ArnLike": {"AWS:SourceArn": f"{api}/*/*"}},
            }
        ]
    }
    assert invoke_allowed(policy, "apigateway.amazonaws.com", f"{api}/$default/POST/topics")
    assert not invoke_allowed(
        policy, "apigateway.amazonaws.com", "arn:aws:execute-api:us-east-1:1:other/$default/GET/x"
    )
    assert not invoke_allowed(policy, "events.amazonaws.com", f"{api}/$default/POST/topics")
    assert not invoke_allowed({"Statement": []}, "apigateway.amazonaws.com", api)


def test_calls_map_to_the_actions_iam_checks() -> None:
    calls = iam_calls(
        "s3", "DeleteObjects", {"Bucket": "b", "Delete": {"Objects": [{"Key": "l0/x"}]}}, "r", "1"
    )
    assert calls == [Call("s3:DeleteObject", "arn:aws:s3:::b/l0/x")]
    assert iam_calls("s3", "ListObjectsV2", {"Bucket": "b", "Prefix": "l0/"}, "r", "1") == [
        Call("s3:ListBucket", "arn:aws:s3:::b")
    ]
    batch = iam_calls("dynamodb", "BatchGetItem", {"RequestItems": {"t": {}}}, "eu-west-1", "1")
    assert batch == [Call("dynamodb:BatchGetItem", "arn:aws:dynamodb:eu-west-1:1:table/t")]
    glue = "arn:aws:glue:r:1"
    table_input = {"DatabaseName": "d", "TableInput": {"Name": "t"}}
    update = iam_calls("glue", "UpdateTable", table_input, "r", "1")
    assert update == [
        Call("glue:UpdateTable", f"{glue}:catalog"),
        Call("glue:UpdateTable", f"{glue}:database/d"),
        Call("glue:UpdateTable", f"{glue}:table/d/t"),
    ]
    assert iam_calls("glue", "GetDatabase", {"Name": "d"}, "r", "1")[-1] == Call(
        "glue:GetDatabase", f"{glue}:database/d"
    )
    assert iam_calls("glue", "GetTables", {"DatabaseName": "d"}, "r", "1")[-1] == Call(
        "glue:GetTables", f"{glue}:table/d/*"
    )
    # Lambda: the function's ARN, with the version or alias a call names
    function = "arn:aws:lambda:r:1:function:f"
    for params, resource in [
        ({"FunctionName": "f", "Name": "live"}, function),
        ({"FunctionName": "f", "Qualifier": "3"}, f"{function}:3"),
        ({"FunctionName": "f:live"}, f"{function}:live"),
        ({"FunctionName": "2:function:f", "Qualifier": "3"}, "arn:aws:lambda:r:2:function:f:3"),
        ({"FunctionName": "arn:aws:lambda:e:2:function:f:4"}, "arn:aws:lambda:e:2:function:f:4"),
    ]:
        assert iam_calls("lambda", "DeleteFunction", params, "r", "1") == [
            Call("lambda:DeleteFunction", resource)
        ], params
    delete = [Statement("Allow", ("lambda:DeleteFunction",), (f"{function}:*",))]
    assert allowed(delete, Call("lambda:DeleteFunction", f"{function}:3"))
    assert not allowed(delete, Call("lambda:DeleteFunction", function))  # never the function
    assert iam_calls("lambda", "Invoke", {"FunctionName": "f:live"}, "r", "1") == [
        Call("lambda:InvokeFunction", f"{function}:live")
    ]


# ---- direct access: the README's least-privilege policy --------------------------------------

README = TERRAFORM_DIR / "README.md"


def readme_reader_policy(bucket: str, table: str) -> list[Statement]:
    """The README's policy for a read-only direct consumer of orders, for this bucket and table."""
    text = README.read_text()
    after = text[text.index("least privilege for a read-only direct consumer") :]
    document = after[after.index("```json") + len("```json") : after.index("```\n", 8)]
    document = document.replace("objectlog-data-123456789012-us-east-1", bucket)
    return parse_policy(document.replace("table/objectlog", f"table/{table}"))


def test_the_readme_read_only_direct_policy_reads_one_topic(log: ObjectLog) -> None:
    """Every call the library makes reading orders directly (L0 objects, then compacted L1
    files and the index they left, offsets, a consumer by assignment, read_committed) is one
    the README's policy allows, and every grant of it is used; reading another topic is not."""
    from objectlog.adapters.aws import make_session
    from objectlog.compaction.compactor import CompactionSettings
    from objectlog.compaction.maintenance import run_maintenance
    from objectlog.tools.deploy.recording import CallRecorder, install_hook

    statements = readme_reader_policy(log.config.bucket, log.config.table)
    log.create_topic("orders", partitions=2)
    log.create_topic("payments", partitions=1)
    with log.producer(linger_ms=0) as producer:
        producer.send("payments", value=b"p")
        for i in range(40):  # one commit each: past a spill of each partition's tail
            producer.send("orders", value=b"v%d" % i, partition=i % 2)
            producer.flush()
    small = CompactionSettings(target_file_bytes=16 << 10, row_group_bytes=2 << 10)
    run_maintenance(log, ["orders"], settings=small, collect=False)
    with log.producer(linger_ms=0) as producer:  # and L0 after the compacted files
        producer.send("orders", value=b"v40", partition=0)
    install_hook(make_session(log.config))  # the session the reader's clients are made from
    recorder = CallRecorder("123456789012")
    with ObjectLog(log.config) as reader:
        with recorder.recording("orders"):
            for partition in (0, 1):
                fetched = reader.fetch("orders", partition, 0, max_records=100)
                assert len(fetched.records) == 20 + (partition == 0)
                reader.offsets("orders", partition)
            reader.fetch("orders", 0, 0, isolation_level="read_committed")
            reader.offset_for_time("orders", 0, 0)
            reader.describe_topic("orders")
            with reader.consumer(auto_offset_reset="earliest") as consumer:
                consumer.assign([TopicPartition("orders", 1)])
                assert len(consumer.poll(5)) == 20
        with recorder.recording("payments"):
            reader.fetch("payments", 0, 0)
    calls = recorder.calls["orders"]
    assert {c.resource.split("/")[1] for c in calls if c.action == "s3:GetObject"} == {
        "l0",
        "index",
        "topics",
    }
    report = check_policy("orders", "readme", statements, calls, recorder.leading_keys["orders"])
    assert report.ok, report.describe()
    payments = recorder.calls["payments"]
    keys = recorder.leading_keys["payments"]
    table = f"arn:aws:dynamodb:us-east-1:123456789012:table/{log.config.table}"
    denied = check_policy("payments", "readme", statements, payments, keys).denied
    assert Call("dynamodb:GetItem", table) in denied  # topic#payments


# ---- deployed end to end --------------------------------------------------------------------


@pytest.fixture
def deployed(
    early_deployment: EarlyDeployment | None, aws_endpoint: str
) -> Iterator[tuple[Workspace, dict[str, Any], Path]]:
    """The deployment tests/conftest.py began applying when the session started (the apply
    mostly waits on the provider's polling, so the suite runs meanwhile); destroyed here."""
    assert early_deployment is not None, "tests/conftest.py starts it for every test using this"
    workspace, outputs = early_deployment.result()
    try:
        yield workspace, outputs, early_deployment.package_dir
    finally:
        early_deployment.destroy()
        _report({"timings_s": {k: round(v, 1) for k, v in workspace.timings.items()}})
    assert_destroyed(outputs, aws_endpoint)


def assert_destroyed(outputs: dict[str, Any], endpoint: str) -> None:
    """terraform destroy left none of the deployment behind."""
    import boto3

    def client(service: str) -> Any:
        return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1")

    functions = {f["FunctionName"] for f in client("lambda").list_functions()["Functions"]}
    assert not functions & set(outputs["functions"].values())
    buckets = {b["Name"] for b in client("s3").list_buckets()["Buckets"]}
    assert not buckets & {outputs["bucket"], outputs["artifact_bucket"]}
    assert outputs["table"] not in client("dynamodb").list_tables()["TableNames"]
    assert outputs["api_id"] not in {a["ApiId"] for a in client("apigatewayv2").get_apis()["Items"]}
    roles = {r["Arn"] for r in client("iam").list_roles()["Roles"]}
    assert not roles & set(outputs["function_roles"].values())
    databases = {d["Name"] for d in client("glue").get_databases()["DatabaseList"]}
    assert outputs["table_database"] not in databases
    cluster = outputs["agent_service"]["cluster"]  # a deleted cluster is listed INACTIVE
    described = client("ecs").describe_clusters(clusters=[cluster])["clusters"]
    assert {c["status"] for c in described} <= {"INACTIVE"}
    balancers = client("elbv2").describe_load_balancers()["LoadBalancers"]
    assert outputs["agent_bootstrap"].rsplit(":", 1)[0] not in {b["DNSName"] for b in balancers}


def _report(data: dict[str, Any]) -> None:
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    REPORT.write_text(json.dumps(previous | data, indent=2, sort_keys=True) + "\n")


def test_deployed_api_end_to_end(
    deployed: tuple[Workspace, dict[str, Any], Path], aws_endpoint: str
) -> None:
    workspace, outputs, light_package = deployed
    state = json.loads(workspace.state_file.read_text())
    assert_snap_start_behind_the_alias(state, workspace.last_output)
    started = time.monotonic()
    deployment = Deployment(outputs, [light_package], endpoint_url=aws_endpoint, project=PROJECT)
    # Authorization is on (the module's default): the client signs as an assumed role the
    # deployment names its super user; a second role may only read TOPIC (deployed_access).
    (super_user,) = workspace.variables["super_users"]
    admin = assume_role(aws_endpoint, super_user.rsplit("/", 1)[-1])
    reader = assume_role(aws_endpoint, f"{admin.role.removesuffix('-admin')}-reader")
    assert (admin.principal, reader.principal.rsplit("/", 1)[-1]) == (super_user, reader.role)
    try:
        grants(outputs, reader)
        _deployed_api_end_to_end(deployment, outputs, light_package, admin, reader, started)
    finally:
        delete_roles(aws_endpoint, admin, reader)


def assert_snap_start_behind_the_alias(state: dict[str, Any], applied: str) -> None:
    """SnapStart on the latency-bound functions' published versions, from the plan the apply
    printed (applied: its output; moto answers SnapStart "None" whatever was asked, and the
    state holds what it answered), and from the applied state API Gateway, the authorizer and
    the schedule invoking each function's "live" alias on the version this apply published."""

    def instances(kind: str, name: str) -> dict[str, dict[str, Any]]:
        (resource,) = [r for r in state["resources"] if (r["type"], r["name"]) == (kind, name)]
        return {str(i.get("index_key")): i["attributes"] for i in resource["instances"]}

    planned = {
        key: block
        for key, block in re.findall(
            r'# (?:module\.\w+\.)?aws_lambda_function\.function\["(\w+)"\] will be created'
            r"\n(.*?)\n    }\n",
            applied,
            re.DOTALL,
        )
    }
    functions = instances("aws_lambda_function", "function")
    aliases = instances("aws_lambda_alias", "live")
    assert set(planned) == set(aliases) == set(functions) == set(FUNCTION_KEYS), set(planned)
    for key, function in functions.items():
        assert function["publish"] is True and function["version"].isdigit(), key
        assert function["runtime"] in ("python3.12", "python3.13"), key  # SnapStart needs 3.12+
        snap = re.findall(r'\+ snap_start \{\s+\+ apply_on\s+= "(\w+)"', planned[key])
        assert snap == ([] if key == "compact" else ["PublishedVersions"]), (key, snap)
        alias = aliases[key]
        assert (alias["name"], alias["function_version"]) == ("live", function["version"]), key
    integrations = instances("aws_apigatewayv2_integration", "function")
    assert integrations and all(
        i["integration_uri"].endswith(":live/invocations") for i in integrations.values()
    ), {k: i["integration_uri"] for k, i in integrations.items()}
    (authorizer,) = instances("aws_apigatewayv2_authorizer", "registry").values()
    assert authorizer["authorizer_uri"].endswith(":live/invocations")
    (target,) = instances("aws_cloudwatch_event_target", "compact").values()
    assert target["arn"] == aliases["compact"]["arn"]
    permissions = [
        *instances("aws_lambda_permission", "api").values(),
        *instances("aws_lambda_permission", "authorizer").values(),
        *instances("aws_lambda_permission", "schedule").values(),
    ]
    assert all(p["qualifier"] == "live" for p in permissions), permissions


def grants(outputs: dict[str, Any], reader: Caller) -> None:
    """The ACLs the exercise needs beyond the super user's, granted before any door caches
    them: the reader's READ on TOPIC, the registry user's subjects, and the Kafka session's user
    exactly what kafka_session does (create, produce idempotently, consume in a group, delete)."""
    grant(outputs, f"--allow-principal {reader.principal} --operation Read --topic {TOPIC}")
    registry_user = f"User:{REGISTRY_USER[0]}"
    subjects_topics = "--topic avro --topic json --topic protobuf"  # TopicNameStrategy's
    grant(outputs, f"--allow-principal {registry_user} --operation All {subjects_topics}")
    alice = f"--allow-principal User:{AGENT_USER['sasl.username']}"
    grant(outputs, f"{alice} --producer --topic {AGENT_TOPIC}")
    grant(outputs, f"{alice} --consumer --topic {AGENT_TOPIC} --group billing")
    grant(outputs, f"{alice} --operation Delete --topic {AGENT_TOPIC} --group billing")


def _deployed_api_end_to_end(
    deployment: Deployment,
    outputs: dict[str, Any],
    light_package: Path,
    admin: Caller,
    reader: Caller,
    started: float,
) -> None:
    functions = outputs["functions"]
    aws_endpoint = deployment.endpoint_url
    assert aws_endpoint is not None

    # What Terraform deployed, as the deployment reports it.
    api_functions = {functions["produce"], functions["fetch"], functions["authorize"]}
    assert set(deployment.functions) == api_functions
    routes = {r.key: r.target for r in deployment.routes}
    assert routes == {f"{m} {p}": functions[f] for m, p, f in ROUTES}
    assert deployment.default_target == functions["fetch"]
    # the registry's routes run the authorize function; every other route takes SigV4
    registry = {key for key in deployment.authorization if is_schema_registry(key.split(" ")[-1])}
    assert len(registry) == 5 and set(deployment.authorizers) == registry
    kinds = {key: "CUSTOM" if key in registry else "AWS_IAM" for key in deployment.authorization}
    assert deployment.authorization == kinds
    assert {a.target for a in deployment.authorizers.values()} == {functions["authorize"]}
    assert {a.identity_headers for a in deployment.authorizers.values()} == {("authorization",)}
    authorize_env = deployment.functions[functions["authorize"]].environment
    assert authorize_env["OBJECTLOG_AUTH_CACHE_S"] == "300"
    assert "OBJECTLOG_JWT_ISSUER" not in authorize_env  # no jwt_authorizer: bearer refused
    for function in deployment.functions.values():
        assert (function.runtime, function.architectures) == ("python3.12", ["arm64"])
        assert function.handler_name == "handler.handler"
        assert function.environment["OBJECTLOG_BUCKET"] == outputs["bucket"]
        assert function.environment["OBJECTLOG_TABLE"] == outputs["table"]
    produce_env = deployment.functions[functions["produce"]].environment
    # off by default, as production Kafka clusters set auto.create.topics.enable
    assert Config.from_env(produce_env).auto_create_topics is False
    assert produce_env["OBJECTLOG_NUM_PARTITIONS"] == "1"
    # the doors that serve callers authorize them; the registry's authorizer only authenticates
    for door in ("produce", "fetch"):
        assert_module_access(deployment.functions[functions[door]].environment, admin.principal)
    assert not set(ACCESS_VARIABLES) & set(authorize_env)

    gateway = deployment.gateway(credentials=credential_lookup(admin, reader))
    url = gateway.start(port=0)
    try:
        unsigned = requests.post(f"{url}/topics", json={"name": "x", "partitions": 1}, timeout=10)
        assert unsigned.status_code == 403, "an IAM-authorized route needs a SigV4 signature"
        assert forged(url).status_code == 403, "a signature of a key nobody issued is refused"
        # the console's API routes are guarded as every route; without var.console its page
        # has no public route either (docs/console.md)
        for path in ("/overview", "/acls", "/transactions", "/console", "/console/topics"):
            refused = requests.get(f"{url}{path}", timeout=10)
            assert refused.status_code == 403, f"GET {path} unsigned: {refused.status_code}"
        direct = ObjectLog(
            replace(Config.from_env(), bucket=outputs["bucket"], table=outputs["table"])
        )
        with (
            direct,
            signing_client(url, admin) as client,
            signing_client(url, reader) as reading,
        ):
            exercise_api(client, url, lambda: deployment.cold_start(functions["produce"]), direct)
            reader_session(reading, url, direct, TOPIC, LEDGER)
            # The schedule's target, with the rule's invoke permission, as EventBridge runs it:
            # L0 merged into L1, key compaction, and GC of what was replaced (grace 0).
            (first,) = deployment.run_schedule(outputs["compact_rule"])
            assert first["finished"] and first["segments_merged"] > 0
            assert first["objects_deleted"] > 0, first
            assert_topic_tables(aws_endpoint, outputs["table_database"], {TOPIC, LEDGER})
            # Twelve commits after the swap: the function's carried spill reads the
            # compactor's manifest list (s3:GetObject on index/).
            produce_ledger(client, rounds=12, start=100)
            (second,) = deployment.run_schedule(outputs["compact_rule"])
            assert second["finished"] and second["objects_deleted"] > 0, second
            after_compaction(client)
            # A deploy published new versions and moved the aliases: this run (its grace 0
            # here, 15 minutes as deployed) deletes the superseded ones.
            superseded = publish_and_move_aliases(aws_endpoint, outputs)
            compact = deployment.function(functions["compact"])
            compact.environment[ENV_VERSION_GRACE_S] = "0"
            (third,) = deployment.run_schedule(outputs["compact_rule"])  # the topics are gone
            assert len(third["tables_dropped"]) == 2, third
            assert_superseded_versions_deleted(aws_endpoint, superseded, third)
            assert_topic_tables(aws_endpoint, outputs["table_database"], set())
        container = assert_agent_service(aws_endpoint, outputs)
        agent_report = run_agent_as_its_task(deployment, outputs, container, admin.principal)
    finally:
        gateway.stop()
        deployment.close()
    assert functions["compact"] in deployment.functions
    compact_env = deployment.functions[functions["compact"]].environment
    assert compact_env["OBJECTLOG_CATALOG"] == "glue"
    assert compact_env["OBJECTLOG_TABLE_NAMESPACE"] == outputs["table_database"]
    # the functions whose superseded versions each run deletes, and the alias that serves them
    assert compact_env["OBJECTLOG_VERSIONED_FUNCTIONS"] == ",".join(sorted(functions.values()))
    assert compact_env["OBJECTLOG_FUNCTION_ALIAS"] == "live"
    assert "POWERTOOLS_TRACE_DISABLED" not in compact_env  # tracing on, the module's default
    assert not set(ACCESS_VARIABLES) & set(compact_env)
    assert_only_compact_writes_tables(deployment, outputs)
    assert_authorizer_reads_only_the_users(deployment, outputs)

    # fetch read several slices concurrently, on reading threads: those calls were recorded too
    assert deployment.recorder.other_thread_counts[functions["fetch"]] > 0
    reports = deployment.check_policies()
    recorded = {r.function: [[c.action, c.resource] for c in r.calls] for r in reports}
    _report(
        {
            "e2e_traffic_s": round(time.monotonic() - started, 1),
            "recorded_calls": recorded,
            "call_counts": dict(deployment.recorder.counts),
            "other_thread_call_counts": dict(deployment.recorder.other_thread_counts),
            "light_package": json.loads((light_package / "manifest.json").read_text())["layer"],
        }
    )
    problems = [r.describe() for r in [*reports, agent_report] if not r.ok]
    assert not problems, "\n".join(problems)
    assert {r.function for r in reports} == set(functions.values())


def forged(url: str) -> requests.Response:
    """A request signed well by a key the endpoint never issued."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    body = json.dumps({"name": "forged", "partitions": 1})
    request = AWSRequest(
        "POST", f"{url}/topics", data=body, headers={"Content-Type": "application/json"}
    )
    SigV4Auth(Credentials("AKIAFORGEDFORGED0000", "x" * 40), "execute-api", "us-east-1").add_auth(
        request
    )
    return requests.post(f"{url}/topics", data=body, headers=dict(request.headers), timeout=10)


def exercise_api(
    client: Any, url: str, cold_start_produce: Callable[[], None], direct: ObjectLog
) -> None:
    """Every route family through the deployed API, signed as the Python client signs."""
    client.create_topic(TOPIC, partitions=2, config={"retention.ms": "604800000"})
    config = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
    client.create_topic(LEDGER, partitions=1, config=config)
    assert {TOPIC, LEDGER} <= set(client.list_topics())
    with client.producer(linger_ms=0) as producer:
        for i in range(FLUSHES):  # one POST (one commit) each: the tail spills twice
            if i == 20:
                # A new execution environment between the spills: it has not cached the
                # manifest the first spill wrote, so the second spill reads it from S3.
                cold_start_produce()
            producer.send(TOPIC, value=f"v{i}".encode(), key=f"k{i % 5}".encode(), partition=0)
            producer.flush()
        producer.send(TOPIC, value=b"other", partition=1).result()
    commit_without_carrying(direct, LEDGER, 17)
    produce_ledger(client, rounds=20, start=0)  # its first commit spills on its own
    result = client.fetch(TOPIC, 0, 0, max_records=1000)
    assert [r.value for r in result.records] == [f"v{i}".encode() for i in range(FLUSHES)]
    assert client.offsets(TOPIC, 0).latest == FLUSHES
    assert client.offset_for_time(TOPIC, 0, 0) == 0
    client.alter_topic_config(TOPIC, set={"retention.ms": "86400000"})
    client.add_partitions(TOPIC, 3)
    described = client.describe_topic(TOPIC)
    assert [p.high_watermark for p in described.partitions] == [FLUSHES, 1, 0]

    groups = client.groups
    member = groups.join("billing", [TOPIC])
    assert set(member.assigned) == {TopicPartition(TOPIC, p) for p in range(3)}
    member = groups.heartbeat("billing", member.member_id, owned=member.assigned)
    groups.commit(
        "billing",
        {TopicPartition(TOPIC, 0): 5},
        member_id=member.member_id,
        generation=member.generation,
    )
    assert groups.committed("billing", [TopicPartition(TOPIC, 0)])[TopicPartition(TOPIC, 0)][0] == 5
    assert groups.describe("billing").members
    groups.leave("billing", member.member_id)
    assert "billing" in groups.list_groups()
    groups.reset_offsets("billing", [TOPIC], to="earliest")
    groups.delete_group("billing")

    signed = client.api.http  # the client's SigV4-signing session
    assert signed.get(f"{url}/docs", timeout=10).status_code == 200
    assert signed.get(f"{url}/openapi.json", timeout=10).json()["info"]["title"]
    assert signed.get(f"{url}/no/such/route", timeout=10).status_code == 404  # $default
    rest_proxy = signed.post(
        f"{url}/topics/{TOPIC}",
        data=json.dumps(
            {"records": [{"value": base64.b64encode(b"proxy").decode(), "partition": 1}]}
        ),
        headers={"Content-Type": "application/vnd.kafka.binary.v2+json"},
        timeout=10,
    )
    assert rest_proxy.status_code == 200, rest_proxy.text
    rest_proxy_session(signed, url)
    schema_registry_session(signed, url, direct)


REGISTRY_USER = ("registry-admin", "s3cret-Passw0rd")


def schema_registry_session(signed: Any, url: str, direct: ObjectLog) -> None:
    """The Schema Registry's routes with basic auth, as Confluent's clients send it, for a user
    made as `objectlog users add` makes one; its authorizer refuses a missing header (401), a
    wrong password, an unknown user, a token (no issuer configured) and a SigV4 signature
    (403), and nothing is registered by them. Then every type registered (Protobuf's compiler
    runs in the function), looked up, read by id, tested, configured and deleted."""
    from objectlog.kafka.users import Users

    Users(direct.items.documents).add(*REGISTRY_USER)
    registry = f"{url}/schema-registry"
    media = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    attempt = {"schema": '"string"'}
    refused = {
        "no credentials": (requests, 401),
        "a wrong password": (_session(basic=(REGISTRY_USER[0], "wrong")), 403),
        "an unknown user": (_session(basic=("mallory", REGISTRY_USER[1])), 403),
        "a bearer token": (_session(bearer=_forged_token()), 403),
        "a SigV4 signature": (signed, 403),
    }
    for what, (session, status) in refused.items():
        answer = session.post(
            f"{registry}/subjects/refused-value/versions", json=attempt, timeout=30
        )
        assert answer.status_code == status, f"{what}: {answer.status_code} {answer.text}"
    assert direct.schema_registry.subjects() == []
    user = _session(basic=REGISTRY_USER)

    def call(method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body)
        response = user.request(method, registry + path, data=data, headers=media, timeout=30)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json()

    schemas = {
        "AVRO": '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
        "JSON": '{"type":"object","properties":{"a":{"type":"integer"}}}',
        "PROTOBUF": 'syntax = "proto3"; message R { int32 a = 1; }',
    }
    for kind, text in schemas.items():
        body = {"schema": text, "schemaType": kind}
        registered = call("POST", f"/subjects/{kind.lower()}-value/versions", body)
        assert call("POST", f"/subjects/{kind.lower()}-value", body)["id"] == registered["id"]
        assert call("GET", f"/schemas/ids/{registered['id']}")["schema"]
    tested = call("POST", "/compatibility/subjects/avro-value/versions/latest", {"schema": '"int"'})
    assert tested == {"is_compatible": False}
    assert call("PUT", "/config/avro-value", {"compatibility": "NONE"}) == {"compatibility": "NONE"}
    assert call("GET", "/subjects") == ["avro-value", "json-value", "protobuf-value"]
    assert call("DELETE", "/subjects/avro-value") == [1]


def _session(basic: tuple[str, str] | None = None, bearer: str | None = None) -> requests.Session:
    session = requests.Session()
    if basic is not None:
        session.auth = basic
    if bearer is not None:
        session.headers["Authorization"] = f"Bearer {bearer}"
    return session


def _forged_token() -> str:
    """A well-formed RS256 token no configured issuer signed."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    claims = {"sub": "mallory", "iss": "https://issuer.example", "aud": "objectlog"}
    return jwt.encode(claims | {"exp": int(time.time()) + 600}, key, algorithm="RS256")


def rest_proxy_session(signed: Any, url: str) -> None:
    """REST Proxy v2's documented produce and consume sessions under /kafka, signed: JSON
    produce, a binary instance subscribed to the topic (read, commit, committed offsets), a
    json instance assigned a partition and sought to its beginning, both deleted."""
    v2 = {"Content-Type": "application/vnd.kafka.v2+json"}

    def call(method: str, path: str, body: Any = None, **headers: str) -> Any:
        data = None if body is None else json.dumps(body)
        response = signed.request(method, path, data=data, headers={**v2, **headers}, timeout=30)
        assert response.status_code < 300, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    json_type = "application/vnd.kafka.json.v2+json"
    produced = call(
        "POST",
        f"{url}/kafka/topics/{TOPIC}/partitions/2",
        {"records": [{"value": {"n": 1}}]},
        **{"Content-Type": json_type},
    )
    assert produced["offsets"][0]["offset"] == 0
    settings = {"format": "binary", "auto.offset.reset": "earliest", "auto.commit.enable": "false"}
    created = call("POST", f"{url}/kafka/consumers/rest", {"name": "binary", **settings})
    binary = created["base_uri"]
    assert binary == f"{url}/kafka/consumers/rest/instances/binary"
    call("POST", f"{binary}/subscription", {"topics": [TOPIC]})
    records: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(records) < FLUSHES + 3 and time.monotonic() < deadline:
        accept = "application/vnd.kafka.binary.v2+json"
        records += call("GET", f"{binary}/records?timeout=1000", Accept=accept)
    assert sorted((r["partition"], r["offset"]) for r in records) == sorted(
        [(0, o) for o in range(FLUSHES)] + [(1, 0), (1, 1), (2, 0)]
    )
    call("POST", f"{binary}/offsets")
    partitions = [{"topic": TOPIC, "partition": p} for p in range(3)]
    committed = call("GET", f"{binary}/offsets", {"partitions": partitions})["offsets"]
    assert [o["offset"] for o in sorted(committed, key=lambda o: o["partition"])] == [FLUSHES, 2, 1]

    one = {"partitions": [{"topic": TOPIC, "partition": 2}]}
    assigned = call("POST", f"{url}/kafka/consumers/rest-json", {"name": "json", "format": "json"})
    call("POST", f"{assigned['base_uri']}/assignments", one)
    call("POST", f"{assigned['base_uri']}/positions/beginning", one)
    read = call("GET", f"{assigned['base_uri']}/records", Accept=json_type)
    assert [r["value"] for r in read] == [{"n": 1}]
    for instance in (binary, assigned["base_uri"]):
        call("DELETE", instance)


def assert_agent_service(endpoint: str, outputs: dict[str, Any]) -> dict[str, Any]:
    """The agent's service, load balancer and task as agent.tf declares them; returns the
    task's container definition."""
    import boto3

    ecs = boto3.client("ecs", endpoint_url=endpoint, region_name="us-east-1")
    elbv2 = boto3.client("elbv2", endpoint_url=endpoint, region_name="us-east-1")
    names = outputs["agent_service"]
    (service,) = ecs.describe_services(cluster=names["cluster"], services=[names["service"]])[
        "services"
    ]
    assert (service["launchType"], service["desiredCount"]) == ("FARGATE", 2)
    assert service["networkConfiguration"]["awsvpcConfiguration"]["assignPublicIp"] == "DISABLED"
    (balanced,) = service["loadBalancers"]
    assert balanced["containerPort"] == 9092
    (group,) = elbv2.describe_target_groups(TargetGroupArns=[balanced["targetGroupArn"]])[
        "TargetGroups"
    ]
    assert (group["Protocol"], group["Port"], group["TargetType"]) == ("TCP", 9092, "ip")
    (balancer_arn,) = group["LoadBalancerArns"]
    (balancer,) = elbv2.describe_load_balancers(LoadBalancerArns=[balancer_arn])["LoadBalancers"]
    assert outputs["agent_bootstrap"] == f"{balancer['DNSName']}:9094"
    (listener,) = elbv2.describe_listeners(LoadBalancerArn=balancer_arn)["Listeners"]
    assert (listener["Protocol"], listener["Port"]) == ("TLS", 9094)
    assert listener["Certificates"][0]["CertificateArn"].startswith("arn:aws:acm:")
    task = ecs.describe_task_definition(taskDefinition=service["taskDefinition"])
    definition = task["taskDefinition"]
    assert definition["taskRoleArn"].endswith(f"/{names['task_role']}")
    assert definition["runtimePlatform"]["cpuArchitecture"] == "ARM64"
    (container,) = definition["containerDefinitions"]
    advertised = ["--advertise", outputs["agent_bootstrap"]]
    delay = ["--initial-rebalance-delay-ms", str(INITIAL_REBALANCE_DELAY_MS)]  # Kafka's default
    assert container["command"] == ["--listen", "0.0.0.0:9092", *advertised, "--sasl", *delay]
    return dict(container, taskRoleArn=definition["taskRoleArn"])


AGENT = "kafka-agent"
AGENT_TOPIC = "kafka-orders"
AGENT_USER = {"sasl.username": "alice", "sasl.password": "wonderland"}


def run_agent_as_its_task(
    deployment: Deployment, outputs: dict[str, Any], container: dict[str, Any], super_user: str
) -> PolicyReport:
    """`objectlog agent` with the task's environment and command (listening on loopback
    instead of 0.0.0.0:9092) serves a Kafka session, its user allowed by the ACLs `grants`
    made (the task's environment turns them on, as `objectlog agent` reads it); every AWS call
    it makes is checked against the task role Terraform applied, as the functions' calls are."""
    from objectlog.kafka.server import AgentConfig, AgentThread
    from objectlog.kafka.users import Users
    from objectlog.services.access import AccessSettings

    environment = {k: v for k, v in os.environ.items() if not k.startswith("OBJECTLOG_")}
    environment |= {e["name"]: e["value"] for e in container["environment"]}
    log = ObjectLog(Config.from_env(environment))
    assert (log.config.auto_create_topics, log.config.num_partitions) == (False, 1)
    assert_module_access(environment, super_user)
    # as `objectlog users add` does, with an administrator's credentials
    Users(log.items.documents).add(AGENT_USER["sasl.username"], AGENT_USER["sasl.password"])
    command = container["command"]
    delay_ms = int(command[command.index("--initial-rebalance-delay-ms") + 1])
    config = AgentConfig(
        port=0,
        sasl="--sasl" in command,
        initial_rebalance_delay_ms=delay_ms,
        access=AccessSettings.from_env(environment),
    )
    try:

        def prefill() -> None:
            """Refs committed without carrying, unrecorded (as a Spark sink's driver commits):
            the agent's first commit there spills on its own (s3:PutObject on index/), and the
            compaction after it reads that list (the compactor's s3:GetObject on index/).
            The agent's later commits carry their spills in their L0 objects."""
            with deployment.recorder.paused(), ObjectLog(Config.from_env(environment)) as direct:
                now_ms = int(time.time() * 1000)  # within the topic's retention
                commit_without_carrying(direct, AGENT_TOPIC, PREFILLED, now_ms)

        with deployment.recorder.recording(AGENT):
            agent = AgentThread(log, config).start()
            try:
                kafka_session(
                    agent.address, prefill, lambda: compact_unrecorded(deployment, outputs)
                )
            finally:
                agent.stop()
    finally:
        log.close()
    role = container["taskRoleArn"].rsplit("/", 1)[-1]
    statements = role_statements(deployment.iam, role)
    return check_policy(AGENT, role, statements, deployment.recorder.calls.get(AGENT, ()))


def compact_unrecorded(deployment: Deployment, outputs: dict[str, Any]) -> None:
    """A scheduled compaction amid the agent's session: the function's calls are recorded as
    its own, the harness's (EventBridge, Lambda) as nobody's."""
    with deployment.recorder.paused():
        deployment.run_schedule(outputs["compact_rule"])


def kafka_session(
    bootstrap: str, prefill: Callable[[], object], compact: Callable[[], object]
) -> None:
    """What a deployment's Kafka clients do: create a topic, produce idempotently past a spill
    on its own and carried spills, read it back through a group (from L1 after a compaction,
    and from L0), commit, delete the group and the topic."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    options = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",  # the NLB terminates TLS
        "sasl.mechanism": "SCRAM-SHA-512",
        **AGENT_USER,
    }
    admin = AdminClient(options)
    no_table = {"objectlog.table.enabled": "false"}
    created = admin.create_topics([NewTopic(AGENT_TOPIC, 1, config=no_table)])
    created[AGENT_TOPIC].result(timeout=30)
    producer = confluent_kafka.Producer({**options, "enable.idempotence": True, "linger.ms": 0})

    def produce(values: range) -> None:
        for i in values:  # one Produce request (one commit) each
            producer.produce(AGENT_TOPIC, f"v{i}".encode(), key=f"k{i % 3}".encode())
            assert producer.flush(30) == 0

    prefill()  # a tail of PREFILLED refs
    produce(range(1))  # the tail spills on its own (it holds at most 16 refs)
    compact()
    produce(range(1, 23))  # past carried spills
    consumer = confluent_kafka.Consumer(
        {**options, "group.id": "billing", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([AGENT_TOPIC])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 60
    while len(values) < PREFILLED + 23 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            values.append(message.value())
    prefilled = [b"direct-%d" % n for n in range(PREFILLED)]
    assert values == prefilled + [f"v{i}".encode() for i in range(23)]
    consumer.commit(asynchronous=False)
    consumer.close()
    admin.delete_consumer_groups(["billing"])["billing"].result(timeout=30)
    admin.delete_topics([AGENT_TOPIC])[AGENT_TOPIC].result(timeout=30)


PREFILLED = TAIL_MAX + 1  # refs in the agent's topic before its first commit


def commit_without_carrying(
    direct: ObjectLog, topic: str, commits: int, timestamp_ms: int | None = None
) -> None:
    """Commits of L0 objects that carry no spill, as the Spark sink's driver makes them,
    leaving a head past 16 refs: the produce function's next commit there spills it on its
    own (s3:PutObject on index/)."""
    info = direct.topic(topic)
    appender = direct.new_appender()
    for n in range(commits):
        stamp = n if timestamp_ms is None else timestamp_ms  # n: long past any retention
        table = slice_table(topic, 0, [b"acct%d" % (n % 3)], [b"direct-%d" % n], [stamp], 0)
        object_id, (ref,) = appender.upload([PartitionBatch(info, 0, table)])
        direct.metadata.commit(
            Commit(
                info.topic_id,
                topic,
                0,
                ref,
                ulid_time_ms(object_id),
                producer_id=None,
                sequence=0,
                now_s=int(time.time()),
            )
        )
    appender.close()


def produce_ledger(client: Any, rounds: int, start: int) -> None:
    with client.producer(linger_ms=0) as producer:
        for i in range(start, start + rounds):
            producer.send(LEDGER, value=f"{i}".encode(), key=f"acct{i % 3}".encode())
            producer.flush()


def assert_topic_tables(endpoint: str, database: str, topics: set[str]) -> None:
    """The Glue database lists exactly these topics' Iceberg tables."""
    import boto3

    glue = boto3.client("glue", endpoint_url=endpoint, region_name="us-east-1")
    listed = glue.get_tables(DatabaseName=database)["TableList"]
    assert {t["Name"] for t in listed} == {table_name(topic) for topic in topics}
    assert all(t["Parameters"]["table_type"] == "ICEBERG" for t in listed)


def assert_only_compact_writes_tables(deployment: Deployment, outputs: dict[str, Any]) -> None:
    """No role but the compact function's may create, change or drop a table."""
    table = f"arn:aws:glue:us-east-1:{deployment.account}:table/{outputs['table_database']}/x"
    for function, role_arn in outputs["function_roles"].items():
        statements = role_statements(deployment.iam, role_arn.rsplit("/", 1)[-1])
        for action in ("glue:CreateTable", "glue:UpdateTable", "glue:DeleteTable"):
            assert allowed(statements, Call(action, table)) == (function == "compact"), (
                function,
                action,
            )


def assert_authorizer_reads_only_the_users(deployment: Deployment, outputs: dict[str, Any]) -> None:
    """The applied authorize role may read the users' document and no other item."""
    role = outputs["function_roles"]["authorize"].rsplit("/", 1)[-1]
    statements = role_statements(deployment.iam, role)
    get = Call("dynamodb:GetItem", outputs["table_arn"])
    assert allowed(statements, get, frozenset({"doc#kafka-users#all"}))
    for other in ("topic#orders", "doc#classic-group#billing", "schema#1"):
        assert not allowed(statements, get, frozenset({other})), other
    assert not allowed(statements, Call("dynamodb:PutItem", outputs["table_arn"]))


def publish_and_move_aliases(endpoint: str, outputs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """What an apply that changed every function does: publish a version, move "live" onto
    it. function -> (the superseded version, the new one)."""
    import boto3

    client = boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1")
    moved = {}
    for name in outputs["functions"].values():
        old = client.get_alias(FunctionName=name, Name="live")["FunctionVersion"]
        client.update_function_configuration(FunctionName=name, Description="redeployed")
        new = client.publish_version(FunctionName=name)["Version"]
        assert int(new) > int(old), (name, old, new)
        client.update_alias(FunctionName=name, Name="live", FunctionVersion=new)
        moved[name] = (old, new)
    return moved


def assert_superseded_versions_deleted(
    endpoint: str, moved: dict[str, tuple[str, str]], run: dict[str, Any]
) -> None:
    """The compact run deleted each function's superseded version and kept the alias's."""
    import boto3

    client = boto3.client("lambda", endpoint_url=endpoint, region_name="us-east-1")
    assert run["versions_deleted"] == {name: [old] for name, (old, _) in moved.items()}, run
    for name, (_, new) in moved.items():
        listed = client.list_versions_by_function(FunctionName=name)["Versions"]
        assert [v["Version"] for v in listed] == ["$LATEST", new], name
        assert client.get_alias(FunctionName=name, Name="live")["FunctionVersion"] == new


def after_compaction(client: Any) -> None:
    """Reads now go to the compactor's L1 files; then the topics are deleted."""
    result = client.fetch(TOPIC, 0, 0, max_records=1000)
    assert [r.offset for r in result.records] == list(range(FLUSHES))
    ledger = client.fetch(LEDGER, 0, 0, max_records=1000)
    latest = {r.key: r.value for r in ledger.records}
    assert latest == {f"acct{i % 3}".encode(): f"{i}".encode() for i in range(100, 112)}
    assert len(ledger.records) < 26, "key compaction kept only the newest values"
    for topic in (TOPIC, LEDGER):
        client.delete_topic(topic)
    assert not {TOPIC, LEDGER} & set(client.list_topics())


def test_missing_handler_module_fails_loudly(light_package: Path, tmp_path: Path) -> None:
    """A handler path the package does not hold is an error naming what was searched."""
    with zipfile.ZipFile(light_package / "produce.zip") as code:
        assert resolve_handler("handler.handler", [(code, "")])[:2] == ("handler.py", "handler")
        with pytest.raises(DeployError, match="no module 'functions/produce/handler'"):
            resolve_handler("functions/produce/handler.handler", [(code, "")])


# ---- slow: the real package and checkov -----------------------------------------------------


@pytest.mark.slow
def test_full_package_fits_lambda_and_is_reproducible(tmp_path: Path) -> None:
    """The arm64 package with its wheels (downloaded once into build/wheels): within Lambda's
    limit, and byte-identical when built twice."""
    first = packaging.build(tmp_path / "a", project=PROJECT)
    second = packaging.build(tmp_path / "b", project=PROJECT)
    assert first.largest_total_unzipped <= LAMBDA_UNZIPPED_LIMIT
    for name in ["layer", *first.functions]:
        assert (tmp_path / "a" / f"{name}.zip").read_bytes() == (
            tmp_path / "b" / f"{name}.zip"
        ).read_bytes(), name
    assert {"pyarrow", "pydantic", "aws-lambda-powertools"} <= set(second.distributions)
    # the layer is the handlers' import closure: no tooling module and no tooling dependency
    # (rich is pyiceberg's: its schema check renders with rich; click, pygments and
    # markdown-it-py came with pyiceberg and rich and are taken out)
    assert {"pyiceberg", "rich"} <= set(second.distributions)
    left_out = {"click", "pygments", "markdown-it-py", "mdurl", "moto", "werkzeug", "pyspark"}
    left_out |= {"grpcio", "setuptools"}  # grpcio-tools' protoc needs neither
    assert {"pyjwt", "cryptography", "scramp"} <= set(second.distributions)  # the authorizer's
    assert not left_out & set(second.distributions)
    with zipfile.ZipFile(tmp_path / "a" / "layer.zip") as layer:
        assert not [n for n in layer.namelist() if n.startswith("python/objectlog/tools/")]
        dropped = ("python/click/", "python/pygments/")
        assert not [n for n in layer.namelist() if n.startswith(dropped)]
        # bytecode of the runtime's version only (tools.bytecode), for what init imports
        pyc = [n for n in layer.namelist() if n.endswith(".pyc")]
        assert first.pyc_tag == "cpython-312" and len(pyc) == first.pyc_files > 500
        assert all(".cpython-312.pyc" in n and "/__pycache__/" in n for n in pyc)
        assert {
            "python/objectlog/__pycache__/__init__.cpython-312.pyc",
            "python/botocore/__pycache__/client.cpython-312.pyc",
        } <= set(pyc)
    print(first.report())


@pytest.mark.slow
def test_full_package_runs_from_its_zips(aws_endpoint: str, tmp_path: Path) -> None:
    """The same build for this machine (x86_64, Python 3.11), pruned the same way, runs the
    three handlers importing only from its own zips (no site-packages): a dependency missing
    from the layer, or a file pruned that is needed, fails here."""
    build = packaging.build(tmp_path, arch="x86_64", python="3.11", project=PROJECT)
    env = dict(
        os.environ,
        AWS_ENDPOINT_URL=aws_endpoint,
        OBJECTLOG_BUCKET=f"smoke-{uuid.uuid4().hex[:8]}",
        OBJECTLOG_TABLE=f"smoke-{uuid.uuid4().hex[:8]}",
        OBJECTLOG_CATALOG="glue",  # the endpoint's Glue, as the deployed compact function's
        OBJECTLOG_TABLE_NAMESPACE=f"smoke_{uuid.uuid4().hex[:8]}",
        POWERTOOLS_METRICS_DISABLED="true",
    )
    answers = packaging.smoke(build.out_dir, env)
    assert answers["create"] == 201 and answers["produce"] == [200, 200, 200]
    assert answers["fetch"] == 200 and answers["fetched"] == 3 and answers["compact_finished"]
    assert answers["table_rows"] == 3  # pyiceberg and pyarrow's S3 filesystem, from the layer
    assert answers["authorized"] and answers["jwt_crypto"]  # scramp, PyJWT and cryptography
    assert answers["protobuf"] == "ProtobufParsedSchema"  # protoc without grpcio
    modules = answers["modules"]
    assert isinstance(modules, dict)
    assert all(
        "objectlog-smoke-" in path and "site-packages" not in path for path in modules.values()
    )


@pytest.mark.slow
def test_checkov_passes_with_every_skip_explained() -> None:
    """make check-infra: fmt, validate and checkov (in .venv-checkov); every skip in the code
    carries its reason."""
    result = subprocess.run(
        ["make", "-s", "check-infra"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    for path in TERRAFORM_DIR.rglob("*.tf"):
        for line in path.read_text().splitlines():
            if "checkov:skip=" in line:
                check, _, reason = line.split("checkov:skip=", 1)[1].partition(":")
                assert len(reason.strip()) > 20, f"{path.name}: {check} has no reason"
