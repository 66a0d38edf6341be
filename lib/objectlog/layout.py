"""Where objects live in the bucket (all below the configured prefix).

l0/<xy>/<ulid>.l0                                   L0 intake objects; <xy> = the ULID's
                                                    last two (random) characters, spreading
                                                    writes over 1,024 prefixes
index/<topic-id>/<partition>/m-<ulid>.json          manifests
index/<topic-id>/<partition>/l-<ulid>.json          manifest lists
topics/<topic>/<topic-id>/partition=<p>/<...>.parquet   L1 files (the compactor's)
"""

from __future__ import annotations

L0_DIR = "l0/"
INDEX_DIR = "index/"


def l0_key(prefix: str, ulid: str) -> str:
    return f"{prefix}{L0_DIR}{ulid[-2:]}/{ulid}.l0"


def manifest_key(prefix: str, topic_id: str, partition: int, ulid: str) -> str:
    return f"{prefix}{INDEX_DIR}{topic_id}/{partition}/m-{ulid}.json"


def manifest_list_key(prefix: str, topic_id: str, partition: int, ulid: str) -> str:
    return f"{prefix}{INDEX_DIR}{topic_id}/{partition}/l-{ulid}.json"


def object_key(prefix: str, level: int, object_id: str) -> str:
    """The key of a ref's object: L0 refs carry only the ULID, L1 refs the key below prefix."""
    return l0_key(prefix, object_id) if level == 0 else f"{prefix}{object_id}"
