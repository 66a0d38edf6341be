import pyarrow as pa
import pytest

from objectlog.format.index import Manifest, ManifestEntry, ManifestList, SegmentRef, place
from objectlog.format.segment import (
    SCHEMA,
    decode_parquet,
    encode_parquet,
    slice_table,
    table_to_records,
    with_absolute_offsets,
)

CASES = [
    pytest.param([b"k"], [b"v"], [[("h", b"x")]], id="simple"),
    pytest.param([None], [None], [[]], id="null-key-and-value"),
    pytest.param([b"\x00\xff"], [bytes(range(256))], [[]], id="binary"),
    pytest.param(["ключ".encode()], ["значение ✓".encode()], [[]], id="unicode"),
    pytest.param(
        [b"a", b"a"], [b"1", b"2"], [[("d", b"1"), ("d", b"2")], [("n", None)]], id="dup-headers"
    ),
]


@pytest.mark.parametrize(("keys", "values", "headers"), CASES)
@pytest.mark.parametrize("compression", ["none", "zstd", "snappy"])
def test_slice_round_trip(keys, values, headers, compression) -> None:
    table = slice_table(
        "orders",
        3,
        keys,
        values,
        [1_700_000_000_000 + i for i in range(len(keys))],
        0,
        [[{"key": k, "value": v} for k, v in h] for h in headers],
    )
    decoded = with_absolute_offsets(decode_parquet(encode_parquet(table, compression)), 40)
    assert decoded.schema == SCHEMA
    records = table_to_records(decoded)
    assert [r.offset for r in records] == [40 + i for i in range(len(keys))]
    assert [r.key for r in records] == keys
    assert [r.value for r in records] == values
    assert [r.headers for r in records] == headers
    assert {r.topic for r in records} == {"orders"}
    assert {r.partition for r in records} == {3}
    assert records[0].timestamp == 1_700_000_000_000


def test_concatenated_slices_are_each_readable_by_range() -> None:
    blobs = [
        encode_parquet(slice_table("t", p, [b"k"] * n, [b"v%d" % i for i in range(n)], [0] * n, 0))
        for p, n in ((0, 3), (1, 5), (2, 1))
    ]
    body = b"".join(blobs)
    start = 0
    for p, blob in enumerate(blobs):
        table = decode_parquet(memoryview(body)[start : start + len(blob)])
        assert table.column("partition").to_pylist() == [p] * table.num_rows
        start += len(blob)


def test_schema_is_sparks_kafka_schema() -> None:
    assert SCHEMA.names == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    assert SCHEMA.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert SCHEMA.field("partition").type == pa.int32()
    assert SCHEMA.field("offset").type == pa.int64()


def test_ref_encoding_round_trips_and_is_compact() -> None:
    ref = SegmentRef(
        0, "01JABCDEFGHJKMNPQRSTVWXYZ0", 123, 4567, 89, 89, 1_700_000_000_000, 1_700_000_000_500
    )
    assert SegmentRef.decode(ref.encode()) == ref
    assert len(ref.encode()) < 80


def test_manifest_list_finds_the_manifest_covering_an_offset() -> None:
    refs = [SegmentRef(0, f"o{i}", 0, 10, 5, 5, i, i) for i in range(6)]
    first, second = Manifest(0, tuple(refs[:3])), Manifest(15, tuple(refs[3:]))
    listing = ManifestList(
        (ManifestEntry.summarize("m1", first), ManifestEntry.summarize("m2", second))
    )
    assert ManifestList.from_json(listing.to_json()) == listing
    assert [e.key for e in listing.covering(0)] == ["m1", "m2"]
    assert [e.key for e in listing.covering(14)] == ["m1", "m2"]
    assert [e.key for e in listing.covering(15)] == ["m2"]
    assert list(listing.covering(30)) == []
    assert [p.base_offset for p in place(15, refs[3:])] == [15, 20, 25]
    assert Manifest.from_json(second.to_json()) == second


def test_placed_refs_start_at_the_ref_covering_the_offset() -> None:
    from objectlog.clock import ManualClock
    from objectlog.services.index import IndexStore
    from objectlog.stores.metadata import PartitionHead
    from objectlog.stores.objects import MemoryObjectStore

    store = MemoryObjectStore()
    refs = [SegmentRef(0, f"o{i}", 0, 10, 5, 5, i, i) for i in range(12)]
    first, second = Manifest(0, tuple(refs[:6])), Manifest(30, tuple(refs[6:10]))
    store.put_if_absent("m1", first.to_json())
    store.put_if_absent("m2", second.to_json())
    listing = ManifestList(
        (ManifestEntry.summarize("m1", first), ManifestEntry.summarize("m2", second))
    )
    store.put_if_absent("l", listing.to_json())
    head = PartitionHead("t", 0, "tid", 60, 0, 50, tuple(refs[10:]), "l", 1, 0)
    index = IndexStore(store, None, "", ManualClock())  # type: ignore[arg-type]
    for offset in (0, 4, 5, 29, 30, 33, 49, 50, 54, 55, 59):
        placed = list(index.placed_refs(head, offset))
        assert placed[0].base_offset <= offset < placed[0].end_offset
        assert [p.base_offset for p in placed] == list(range(placed[0].base_offset, 60, 5))
