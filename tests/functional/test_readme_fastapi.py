"""README's FastAPI example, run as written: its block is saved as the app a user would serve
with uvicorn, started and stopped through its lifespan by Starlette's TestClient, in the
environment the quick start exports (pointed at this test's endpoint, bucket and table)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from objectlog import ObjectLog

README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN, END = "<!-- fastapi", "<!-- /fastapi -->"


def fastapi_block() -> str:
    section = README.read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    [block] = re.findall(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    return str(block)


def test_the_fastapi_example_produces_a_record_per_request(
    log: ObjectLog, log_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log.create_topic("orders", partitions=3)
    for name, value in log_env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "app.py").write_text(fastapi_block())
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "app", raising=False)
    import app  # type: ignore[import-not-found]  # the README's block, as `uvicorn app:app`

    with TestClient(app.app) as client:  # runs the lifespan: start, then stop at the end
        answers = [client.post(f"/orders/{who}", params={"amount": 3}) for who in ("alice", "bob")]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        refused = client.post("/orders/carol", params={"amount": "three"})
        assert refused.status_code == 422  # FastAPI's own validation, nothing produced
    placed = [a.json() for a in answers]
    for order in placed:
        [record] = log.fetch("orders", order["partition"], order["offset"], max_records=1).records
        assert record.value == b"3"
    assert sorted(
        log.fetch("orders", o["partition"], o["offset"]).records[0].key for o in placed
    ) == [b"alice", b"bob"]
    assert app.app.state.producer._closed  # stopped with the app
