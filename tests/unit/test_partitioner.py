import random

import pytest

from objectlog.format.partitioner import (
    StickyPartitioner,
    murmur2,
    partition_for_key,
    partitions_for_keys,
    to_positive,
)

# Apache Kafka's own vectors (clients/src/test/.../utils/UtilsTest.testMurmur2)
KAFKA_VECTORS = [
    pytest.param(b"21", -973932308, id="21"),
    pytest.param(b"foobar", -790332482, id="foobar"),
    pytest.param(b"a-little-bit-long-string", -985981536, id="long"),
    pytest.param(b"a-little-bit-longer-string", -1486304829, id="longer"),
    pytest.param(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, id="48-bytes"),
    pytest.param(b"abc", 479470107, id="abc"),
    pytest.param(b"", 275646681, id="empty"),
]


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_the_java_client(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_keyed_partition_is_to_positive_murmur2_mod_partitions() -> None:
    # toPositive(-790332482) = 1357151166; 1357151166 % 50 = 16
    assert to_positive(murmur2(b"foobar")) == 1357151166
    assert partition_for_key(b"foobar", 50) == 16


def test_vectorized_partitions_agree_with_the_scalar_path() -> None:
    rng = random.Random(7)
    keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(2000)]
    keys += [b"user-%06d" % i for i in range(500)]
    for partitions in (1, 3, 7, 64):
        vectorized = partitions_for_keys(keys, partitions).tolist()
        assert vectorized == [partition_for_key(k, partitions) for k in keys]


def test_sticky_partitioner_sticks_until_the_next_batch() -> None:
    sticky = StickyPartitioner(random.Random(1))
    first = sticky.partition("t", 8)
    assert all(sticky.partition("t", 8) == first for _ in range(20))
    seen = set()
    for _ in range(50):
        sticky.next_batch()
        seen.add(sticky.partition("t", 8))
    assert len(seen) > 1
    assert all(0 <= p < 8 for p in seen)


def test_arrow_fixed_and_variable_length_keys_agree_with_the_scalar_path() -> None:
    import pyarrow as pa

    from objectlog.format.partitioner import partitions_for_key_array

    fixed = [b"id-%08d" % i for i in range(1000)]
    sliced = pa.array([b"x" * 11] * 5 + fixed, pa.binary()).slice(5)
    assert partitions_for_key_array(sliced, 7).tolist() == [partition_for_key(k, 7) for k in fixed]
    mixed = [b"a", None, b"longer-key", b""]
    got = partitions_for_key_array(pa.array(mixed, pa.binary()), 5).tolist()
    assert got == [
        partition_for_key(b"a", 5),
        -1,
        partition_for_key(b"longer-key", 5),
        partition_for_key(b"", 5),
    ]
