"""A topic as an Iceberg table: its name in a catalog, and the field ids its files carry.

Kafka topic names allow ASCII letters, digits, ``.``, ``_`` and ``-`` (249 characters); Glue
and Athena want lower-case ``[a-z0-9_]`` (255). The mapping is deterministic: lower-case, every
other character becomes ``_``, and where that loses information (any capital, ``.`` or ``-``)
a short hash of the original name is appended, so ``Orders.v1-EU`` (``orders_v1_eu_b88ddab6``)
and ``orders_v1_eu`` (unchanged) never collide.

L1 files carry Parquet field ids (``PARQUET:field_id``) matching FIELD_IDS, so every engine
resolves columns by id, as Iceberg readers do; files written before carry none and are read
through the table's name mapping.
"""

from __future__ import annotations

import hashlib
import re

MAX_TABLE_NAME = 255
HASH_CHARS = 8
_PLAIN = re.compile(r"^[a-z0-9_]+$")

# Iceberg field ids of the segment schema's columns (nested: headers' element and its fields).
FIELD_IDS: dict[str, int] = {
    "key": 1,
    "value": 2,
    "topic": 3,
    "partition": 4,
    "offset": 5,
    "timestamp": 6,
    "timestampType": 7,
    "headers": 8,
    "headers.element": 9,
    "headers.element.key": 10,
    "headers.element.value": 11,
}

# Table properties naming the topic a table belongs to (a recreated topic gets a fresh table).
PROPERTY_TOPIC = "objectlog.topic"
PROPERTY_TOPIC_ID = "objectlog.topic-id"


def table_name(topic: str) -> str:
    """The topic's table name: lower-case [a-z0-9_], hashed where the mapping loses anything."""
    plain = re.sub(r"[^a-z0-9_]", "_", topic.lower())
    if plain == topic and len(plain) <= MAX_TABLE_NAME:
        return plain
    digest = hashlib.sha256(topic.encode()).hexdigest()[:HASH_CHARS]
    return f"{plain[: MAX_TABLE_NAME - HASH_CHARS - 1]}_{digest}"
