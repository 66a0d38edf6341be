"""Authorized operations, as Metadata, DescribeCluster and DescribeGroups report them.

objectlog has no ACLs: a client that may connect (authenticated, where SASL is required) may do
everything Kafka defines for the resource. Asked for, the answer is that bit set (one bit per
AclOperation code, as Kafka encodes it); not asked for, Kafka's INT32_MIN. Clients decode the
bits into their AclOperation enums, so only operations Kafka defines for the resource are set.
"""

from __future__ import annotations

NOT_ASKED = -(2**31)  # Kafka's "not asked for"

# Kafka's AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

TOPIC = (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
GROUP = (READ, DELETE, DESCRIBE)
CLUSTER = (
    CREATE,
    ALTER,
    DESCRIBE,
    CLUSTER_ACTION,
    DESCRIBE_CONFIGS,
    ALTER_CONFIGS,
    IDEMPOTENT_WRITE,
)


def authorized(operations: tuple[int, ...], asked: object) -> int:
    """The bit set of operations when the request asked for it (a truthy flag), else
    NOT_ASKED."""
    if not asked:
        return NOT_ASKED
    return sum(1 << operation for operation in operations)
