"""What each Kafka API the agent offers requires of the principal (issue 37, docs/security.md):
the operations Kafka's broker checks for it (KafkaApis' authorize calls, Kafka 3.9), on which
resource, and how a missing permission shows: the whole request refused with the API's
``*_AUTHORIZATION_FAILED`` error (REFUSE), or the resources the principal may not see left out
of the answer (FILTER: Metadata, ListGroups, OffsetFetch of all partitions,
ListTransactions), or each resource answered with its own error (EACH: Produce's partitions,
CreateTopics' topics, DescribeConfigs' resources...).

tests/unit/test_kafka_acl_operations.py checks that every API in kafka.handlers.SUPPORTED has
a row, so no API can be offered without saying what it needs. The APIs that need nothing
(ApiVersions, the SASL handshake) have an empty row.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from objectlog.format.acls import Operation, ResourceType


class Shown(enum.Enum):
    REFUSE = "refuse"  # the request answered *_AUTHORIZATION_FAILED
    EACH = "each"  # each resource of the request answered its own error
    FILTER = "filter"  # the resources the principal may not see left out


@dataclass(frozen=True)
class Requirement:
    operation: Operation
    resource: ResourceType
    shown: Shown
    when: str = ""  # the case it applies to, where not every request


T, G, C, X = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
)
O = Operation  # noqa: E741  (the table reads better short)
REFUSE, EACH, FILTER = Shown.REFUSE, Shown.EACH, Shown.FILTER


def req(operation: Operation, resource: ResourceType, shown: Shown, when: str = "") -> Requirement:
    return Requirement(operation, resource, shown, when)


# API key -> what Kafka's broker checks, in the order it checks them.
REQUIRED: dict[int, tuple[Requirement, ...]] = {
    0: (  # Produce (since Kafka 3.0 no IDEMPOTENT_WRITE check: InitProducerId has it)
        req(O.WRITE, X, REFUSE, "a transactional batch: its transactional id"),
        req(O.WRITE, T, EACH),
    ),
    1: (req(O.READ, T, EACH),),  # Fetch (CLUSTER_ACTION for followers: there are none)
    2: (req(O.DESCRIBE, T, EACH),),  # ListOffsets
    3: (  # Metadata
        req(O.DESCRIBE, T, FILTER),
        req(O.CREATE, T, EACH, "a topic created on first use (CREATE on the cluster also)"),
    ),
    8: (req(O.READ, G, REFUSE), req(O.READ, T, EACH)),  # OffsetCommit
    9: (req(O.DESCRIBE, G, REFUSE), req(O.DESCRIBE, T, FILTER)),  # OffsetFetch
    10: (  # FindCoordinator
        req(O.DESCRIBE, G, EACH, "a group's coordinator"),
        req(O.DESCRIBE, X, EACH, "a transactional id's coordinator"),
    ),
    11: (req(O.READ, G, REFUSE),),  # JoinGroup
    12: (req(O.READ, G, REFUSE),),  # Heartbeat
    13: (req(O.READ, G, REFUSE),),  # LeaveGroup
    14: (req(O.READ, G, REFUSE),),  # SyncGroup
    15: (req(O.DESCRIBE, G, EACH),),  # DescribeGroups
    16: (req(O.DESCRIBE, G, FILTER, "or DESCRIBE on the cluster: every group"),),  # ListGroups
    17: (),  # SaslHandshake
    18: (),  # ApiVersions
    19: (  # CreateTopics
        req(O.CREATE, T, EACH, "or CREATE on the cluster"),
        req(O.DESCRIBE_CONFIGS, T, EACH, "the configs answered (v5+)"),
    ),
    20: (req(O.DELETE, T, EACH),),  # DeleteTopics
    21: (req(O.DELETE, T, EACH),),  # DeleteRecords
    22: (  # InitProducerId
        req(O.WRITE, X, REFUSE, "with a transactional id"),
        req(O.IDEMPOTENT_WRITE, C, REFUSE, "without one (WRITE on a topic implies it)"),
    ),
    24: (req(O.WRITE, X, REFUSE), req(O.WRITE, T, EACH)),  # AddPartitionsToTxn
    25: (req(O.WRITE, X, REFUSE), req(O.READ, G, REFUSE)),  # AddOffsetsToTxn
    26: (req(O.WRITE, X, REFUSE),),  # EndTxn
    28: (  # TxnOffsetCommit
        req(O.WRITE, X, REFUSE),
        req(O.READ, G, REFUSE),
        req(O.READ, T, EACH),
    ),
    29: (req(O.DESCRIBE, C, REFUSE),),  # DescribeAcls
    30: (req(O.ALTER, C, REFUSE),),  # CreateAcls
    31: (req(O.ALTER, C, REFUSE),),  # DeleteAcls
    32: (  # DescribeConfigs
        req(O.DESCRIBE_CONFIGS, T, EACH),
        req(O.DESCRIBE_CONFIGS, C, EACH, "a broker's configs"),
    ),
    33: (  # AlterConfigs
        req(O.ALTER_CONFIGS, T, EACH),
        req(O.ALTER_CONFIGS, C, EACH, "a broker's configs"),
    ),
    34: (req(O.ALTER, C, REFUSE),),  # AlterReplicaLogDirs
    35: (req(O.DESCRIBE, C, REFUSE),),  # DescribeLogDirs
    36: (),  # SaslAuthenticate
    37: (req(O.ALTER, T, EACH),),  # CreatePartitions
    42: (req(O.DELETE, G, EACH),),  # DeleteGroups
    43: (req(O.ALTER, C, REFUSE),),  # ElectLeaders
    44: (  # IncrementalAlterConfigs
        req(O.ALTER_CONFIGS, T, EACH),
        req(O.ALTER_CONFIGS, C, EACH, "a broker's configs"),
    ),
    45: (req(O.ALTER, C, REFUSE),),  # AlterPartitionReassignments
    46: (req(O.DESCRIBE, C, REFUSE),),  # ListPartitionReassignments
    47: (req(O.DELETE, G, REFUSE), req(O.READ, T, EACH)),  # OffsetDelete
    60: (req(O.DESCRIBE, C, REFUSE),),  # DescribeCluster
    61: (req(O.READ, T, EACH),),  # DescribeProducers
    65: (req(O.DESCRIBE, X, EACH),),  # DescribeTransactions
    66: (req(O.DESCRIBE, X, FILTER),),  # ListTransactions
    68: (req(O.READ, G, REFUSE), req(O.DESCRIBE, T, FILTER)),  # ConsumerGroupHeartbeat
    69: (req(O.DESCRIBE, G, EACH),),  # ConsumerGroupDescribe
    74: (req(O.DESCRIBE_CONFIGS, C, REFUSE),),  # ListConfigResources
    75: (req(O.DESCRIBE, T, FILTER),),  # DescribeTopicPartitions
}
