"""``objectlog schemas`` on the table the log uses: what it registers, the REST API and the
library see."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from objectlog import ObjectLog
from objectlog.schemas.registry import SchemaRegistry
from objectlog.tools.cli import main


@pytest.fixture
def run(log_env: dict[str, str]) -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(main, ["schemas", *args], env=log_env, catch_exceptions=False)

    return invoke


def record(path: Path, *fields: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"type": "record", "name": "User", "fields": list(fields)}))
    return path


def test_register_list_get_test_and_delete(run: Any, log: ObjectLog, tmp_path: Path) -> None:
    v1 = record(tmp_path / "v1.avsc", {"name": "name", "type": "string"})
    age = {"name": "age", "type": "int"}
    v2 = record(tmp_path / "v2.avsc", {"name": "name", "type": "string"}, age)
    registered = run("register", "users-value", str(v1))
    assert registered.exit_code == 0 and "version 1: schema id 1" in registered.output
    refused = run("compatibility", "users-value", str(v2))
    assert refused.exit_code == 1 and "reader_field_missing_default_value" in refused.output
    assert run("register", "users-value", str(v2)).exit_code == 1  # BACKWARD refuses it
    assert run("compatibility", "users-value", "--set", "none").output.strip() == (
        "users-value: NONE"
    )
    assert run("compatibility", "users-value", str(v2)).output.strip() == "compatible"
    assert "version 2: schema id 2" in run("register", "users-value", str(v2)).output
    assert run("list").output.split("\t") == ["users-value", "versions 1, 2\n"]
    latest = json.loads(run("get", "users-value").output)
    assert (latest["version"], latest["id"], latest["schemaType"]) == (2, 2, "AVRO")
    assert json.loads(run("get", "--id", "1").output)["schema"].startswith('{"type":"record"')
    assert "versions 1 deleted (soft)" in run("delete", "users-value", "--version", "1").output
    registry = SchemaRegistry(log.items.schemas, log.items.documents)
    assert registry.versions("users-value") == [2]
    missing = run("get", "nope")
    assert missing.exit_code == 1 and "Subject 'nope' not found" in missing.output


def test_a_malformed_reference_is_refused_with_a_message(run: Any, tmp_path: Path) -> None:
    schema = record(tmp_path / "u.avsc", {"name": "home", "type": "shop.Address"})
    answer = run("register", "u", str(schema), "--reference", "shop.Address")
    assert answer.exit_code == 1 and "name=subject:version" in answer.output
