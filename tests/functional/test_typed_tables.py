"""Topics as typed tables (issue 35): after compaction, pyiceberg and DuckDB read value
columns typed by the Schema Registry whose values equal the decoded records, through a schema
evolution and with undecodable records mixed in (none lost: each keeps its bytes and says why);
the table's field ids stay as it evolves, and fetches read the same bytes as before."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from objectlog import ObjectLog
from objectlog.clock import ManualClock
from objectlog.config import Config
from objectlog.errors import ObjectLogError
from objectlog.schemas.parsing import SchemaInput
from objectlog.schemas.typed_values import DECODED, ERROR, SCHEMA_ID
from tests.functional.test_tables import compacted_rows, duckdb_connection, maintain

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER_V2 = {  # BACKWARD compatible: a field with a default, and a nested record
    **ORDER_V1,
    "fields": [
        *ORDER_V1["fields"],
        {"name": "note", "type": ["null", "string"], "default": None},
        {
            "name": "ship",
            "type": [
                "null",
                {"type": "record", "name": "Ship", "fields": [{"name": "city", "type": "string"}]},
            ],
            "default": None,
        },
    ],
}


@pytest.fixture
def tabled(log_config: Config, clock: ManualClock, tmp_path: Path) -> Iterator[ObjectLog]:
    config = replace(log_config, catalog=f"sqlite:///{tmp_path}/catalog.db", delete_grace_ms=1_000)
    with ObjectLog(config, clock=clock) as log:
        log.ensure_resources()
        yield log


def register(log: ObjectLog, subject: str, schema: dict[str, Any]) -> int:
    return log.schema_registry.register(subject, SchemaInput(json.dumps(schema), "AVRO")).schema.id


def framed(schema_id: int, schema: dict[str, Any], datum: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def order(n: int, **more: Any) -> dict[str, Any]:
    from decimal import Decimal

    return {
        "id": n,
        "item": f"item-{n}",
        "price": Decimal(f"{n}.25"),
        "at": 1_700_000_000_000 + n,
        "tags": [f"t{n}"],
        **more,
    }


def produce(log: ObjectLog, topic: str, values: list[bytes | None]) -> None:
    clock = log.clock
    assert isinstance(clock, ManualClock)
    clock.advance(1)
    with log.producer() as producer:
        futures = [producer.send(topic, v, key=b"k%d" % i) for i, v in enumerate(values)]
    for future in futures:
        future.result()


def typed_rows(table: pa.Table) -> dict[int, tuple[Any, Any, Any]]:
    """offset -> (value_decoded, value_schema_id, value_error)."""
    columns = table.select(["offset", DECODED, SCHEMA_ID, ERROR]).to_pylist()
    return {r["offset"]: (r[DECODED], r[SCHEMA_ID], r[ERROR]) for r in columns}


def test_a_typed_table_holds_decoded_values_through_an_evolution_and_bad_records(
    tabled: ObjectLog,
) -> None:
    from decimal import Decimal

    topic = "orders"
    tabled.create_topic(
        topic, 1, {"objectlog.table.mode": "value_schema_id_prefix", "objectlog.table.lag.ms": 0}
    )
    v1 = register(tabled, f"{topic}-value", ORDER_V1)
    produce(tabled, topic, [framed(v1, ORDER_V1, order(n)) for n in range(3)])
    maintain(tabled)
    table = tabled.table(topic)
    assert table is not None
    first_ids = {f.name: f.field_id for f in table.schema().find_field(DECODED).field_type.fields}

    v2 = register(tabled, f"{topic}-value", ORDER_V2)
    bad = [
        b"plain bytes",  # not framed
        b"\x00\x00\x00\x99\x99{}",  # an id the registry does not hold
        framed(v2, ORDER_V2, order(9))[:-3],  # cut short
        None,  # a tombstone: no value, no error
    ]
    evolved = [
        framed(v2, ORDER_V2, order(n, note="fragile", ship={"city": "Oslo"})) for n in (3, 4)
    ]
    produce(tabled, topic, evolved + bad + [framed(v1, ORDER_V1, order(5))])
    report = maintain(tabled)
    assert sum(p.records_undecodable for p in report.partitions) == 3

    table = tabled.table(topic)
    assert table is not None
    decoded = table.schema().find_field(DECODED).field_type
    assert {f.name: f.field_id for f in decoded.fields if f.name in first_ids} == first_ids
    assert [f.name for f in decoded.fields] == ["id", "item", "price", "at", "tags", "note", "ship"]
    rows = typed_rows(table.scan().to_arrow())
    assert len(rows) == len(compacted_rows(tabled, topic)) == 10  # no record lost
    assert rows[0][0]["item"] == "item-0" and rows[0][0]["price"] == Decimal("0.25")
    assert rows[0][0]["note"] is None and rows[0][1] == v1  # written before the evolution
    assert rows[3][0]["ship"] == {"city": "Oslo"} and rows[3][1] == v2 and rows[3][2] is None
    assert rows[3][0]["at"].timestamp() * 1000 == 1_700_000_000_003
    assert rows[5][2].startswith("not framed") and rows[5][0] is None and rows[5][1] is None
    assert "schema 39321 is not in the registry" in rows[6][2] and rows[6][1] == 0x9999
    assert rows[7][2] and rows[7][1] == v2
    assert rows[8] == (None, None, None)
    assert rows[9][0]["id"] == 5 and rows[9][0]["ship"] is None

    with duckdb_connection(tabled) as connection:  # closed here (test_tables.duckdb_rows)
        duck = connection.execute(
            f'SELECT "offset", value_decoded.item, value_decoded.ship.city, value_error '
            f"FROM iceberg_scan('{table.metadata_location}') ORDER BY \"offset\""
        ).fetchall()
    assert duck[0][1] == "item-0" and duck[3][2] == "Oslo" and duck[5][3].startswith("not framed")


def test_fetches_read_the_same_bytes_and_records_from_a_typed_tables_files(
    tabled: ObjectLog,
) -> None:
    plain, typed = "plain", "typed"
    tabled.create_topic(plain, 1, {"objectlog.table.lag.ms": 0})
    tabled.create_topic(
        typed, 1, {"objectlog.table.mode": "value_schema_id_prefix", "objectlog.table.lag.ms": 0}
    )
    v1 = register(tabled, f"{typed}-value", ORDER_V1)
    values: list[bytes | None] = [framed(v1, ORDER_V1, order(n)) for n in range(200)]
    for name in (plain, typed):
        produce(tabled, name, values)
    maintain(tabled)
    for name in (plain, typed):
        head = tabled.metadata.get_head(name, 0)
        assert head is not None
    refs = {
        name: [
            p.ref.length for p in tabled.index.all_placed_refs(tabled.metadata.get_head(name, 0))
        ]
        for name in (plain, typed)
    }
    assert refs[typed] == pytest.approx(refs[plain], rel=0.02)  # ranges cover the Kafka columns
    fetched = {name: tabled.fetch(name, 0, 0, max_records=500).records for name in (plain, typed)}
    assert [r.value for r in fetched[typed]] == [r.value for r in fetched[plain]] == values


def test_the_latest_mode_decodes_values_written_without_the_prefix(tabled: ObjectLog) -> None:
    topic = "latest"
    tabled.create_topic(
        topic, 1, {"objectlog.table.mode": "value_schema_latest", "objectlog.table.lag.ms": 0}
    )
    produce(tabled, topic, [b"before any schema"])
    maintain(tabled)
    v1 = register(tabled, f"{topic}-value", ORDER_V1)
    produce(tabled, topic, [framed(v1, ORDER_V1, order(n))[5:] for n in range(2)])
    maintain(tabled)
    table = tabled.table(topic)
    assert table is not None
    rows = typed_rows(table.scan().to_arrow())
    assert "no latest schema" in rows[0][2]
    assert rows[1][0]["item"] == "item-0" and rows[1][1] == v1 and rows[2][0]["id"] == 1


def test_a_key_value_topic_keeps_the_kafka_columns_only(tabled: ObjectLog) -> None:
    tabled.create_topic("kv", 1, {"objectlog.table.lag.ms": 0})
    produce(tabled, "kv", [b"x"])
    maintain(tabled)
    table = tabled.table("kv")
    assert table is not None
    assert DECODED not in [f.name for f in table.schema().fields]
    with pytest.raises(ObjectLogError):
        tabled.create_topic("bad", 1, {"objectlog.table.mode": "typed"})


def json_value(schema_id: int, document: dict[str, Any]) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + json.dumps(document).encode()


def protobuf_value(log: ObjectLog, schema_id: int, fields: dict[str, Any]) -> bytes:
    from objectlog.schemas.protobuf_messages import ProtobufMessages

    parsed = log.schema_registry.parsed(log.schema_registry.schema_by_id(schema_id))
    message = ProtobufMessages(parsed).message_class((0,))(**fields)
    return b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + message.SerializeToString()


JSON_ORDER = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"],
}
PROTO_ORDER = 'syntax = "proto3";\nmessage Order {\n  int64 id = 1;\n  string item = 2;\n}\n'


@pytest.mark.parametrize("schema_type", ["JSON", "PROTOBUF"])
def test_json_schema_and_protobuf_values_become_typed_columns(
    tabled: ObjectLog, schema_type: str
) -> None:
    topic = f"orders-{schema_type.lower()}"
    tabled.create_topic(
        topic, 1, {"objectlog.table.mode": "value_schema_id_prefix", "objectlog.table.lag.ms": 0}
    )
    text = json.dumps(JSON_ORDER) if schema_type == "JSON" else PROTO_ORDER
    given = SchemaInput(text, schema_type)
    schema_id = tabled.schema_registry.register(f"{topic}-value", given).schema.id
    if schema_type == "JSON":
        values = [json_value(schema_id, {"id": n, "item": f"i{n}"}) for n in range(2)]
        values.append(json_value(schema_id, {"id": "not a number"}))
    else:
        values = [protobuf_value(tabled, schema_id, {"id": n, "item": f"i{n}"}) for n in range(2)]
        values.append(b"\x00" + schema_id.to_bytes(4, "big") + b"\x00\xff\xff")
    produce(tabled, topic, list(values))
    report = maintain(tabled)
    assert sum(p.records_undecodable for p in report.partitions) == 1
    table = tabled.table(topic)
    assert table is not None
    rows = typed_rows(table.scan().to_arrow())
    assert [rows[n][0] for n in range(2)] == [{"id": 0, "item": "i0"}, {"id": 1, "item": "i1"}]
    assert rows[2][0] is None and rows[2][1] == schema_id and rows[2][2]
