"""kafka-python group members for tests, which know their topic's partitions before they join
(a kafka-python 3.0.12 bug otherwise can leave a leader stuck mid-join:
objectlog.tools.verify.workload.learn_partitions_before_joining)."""

from __future__ import annotations

from typing import Any

from objectlog.tools.verify.workload import learn_partitions_before_joining


def kafka_python_member(address: str, topic: str, group_id: str, **options: Any) -> Any:
    """A kafka-python KafkaConsumer in group_id, subscribed to topic, reading from the
    earliest offset, committing only when told, heartbeating every 200 ms; options override."""
    from kafka import KafkaConsumer

    settings: dict[str, Any] = {
        "bootstrap_servers": address,
        "group_id": group_id,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "heartbeat_interval_ms": 200,
        **options,
    }
    member = KafkaConsumer(topic, **settings)
    learn_partitions_before_joining(member, topic)
    return member
