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


def live_files(log: ObjectLog, topic: str, *, scheme: str = "s3") -> list[str]:
    """URIs of the topic's live L1 files, partition by partition, in offset order."""
    return log.live_files(topic, scheme=scheme)
