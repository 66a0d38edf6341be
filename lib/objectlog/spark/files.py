"""The live L1 Parquet files of a topic, as the index lists them, for ``spark.read.parquet``.

L1 files (the compactor's) are plain Parquet with absolute offsets, under
``topics/<topic>/<topic-id>/partition=<p>/``. Do not read that directory bare: a compaction
swap replaces files but deletes the old ones only after a grace period (so readers in flight
never see NoSuchKey), and a deleted and recreated topic leaves the old topic id's files behind
until garbage collection. Both would show up twice, or from the wrong topic. The heads and the
manifests they point at list exactly the files that are live now.
"""

from __future__ import annotations

from objectlog.clients.direct import ObjectLog
from objectlog.format.index import LEVEL_L1
from objectlog.format.layout import object_key


def live_files(log: ObjectLog, topic: str, *, scheme: str = "s3") -> list[str]:
    """URIs of the topic's live L1 files, partition by partition, in offset order."""
    info = log.topic(topic, fresh=True)
    heads = log.metadata.get_heads(topic, range(info.partitions))
    files: list[str] = []
    seen: set[str] = set()
    for partition in sorted(heads):
        for placed in log.index.all_placed_refs(heads[partition]):
            if placed.ref.level != LEVEL_L1:
                continue
            key = object_key(log.config.prefix, LEVEL_L1, placed.ref.object_id)
            if key not in seen:
                seen.add(key)
                files.append(f"{scheme}://{log.config.bucket}/{key}")
    return files
