"""Leaders, replicas and log dirs over Kafka: ElectLeaders, DescribeLogDirs, AlterReplicaLogDirs,
AlterPartitionReassignments and ListPartitionReassignments, answered as a one-broker Kafka 3.9
(KRaft) answers them (ReplicationControlManager, ReplicaManager, LogManager).

The agent advertises one broker, leader of every partition and its only replica, so there is
nothing to elect and nothing to move: every partition already has its preferred leader
(ELECTION_NOT_NEEDED), the only reassignment Kafka would accept, to ``[broker]``, changes
nothing, and none is ever in progress. The broker has one log dir, named for where the records
live (``s3://bucket/prefix``); a partition's size there is its bytes in the index, what
``ObjectLog.describe_topic`` reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode

from objectlog.config import Config
from objectlog.errors import InvalidTopicName, ObjectLogError, TopicNotFound
from objectlog.format.topics import validate_topic_name
from objectlog.kafka.admin import Refused, check_replicas
from objectlog.kafka.context import ApiContext
from objectlog.kafka.errors import error_code
from objectlog.kafka.wire import Request

PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' election types
ELECTION_NOT_NEEDED = "Leader election not needed for topic partition."  # Errors' message
UNKNOWN_SIZE = -1  # DescribeLogDirs v4's total and usable bytes: S3 has no volume to measure

Answer = tuple[ErrorCode, str | None]
NOT_NEEDED: Answer = (ErrorCode.election_not_needed, ELECTION_NOT_NEEDED)
DONE: Answer = (ErrorCode.none, None)


def log_dir(config: Config) -> str:
    """The broker's one log dir: the bucket and prefix its records live under."""
    return f"s3://{config.bucket}/{config.prefix}".rstrip("/")


class ClusterAdminApi:
    def __init__(self, ctx: ApiContext) -> None:
        self.ctx = ctx
        self.log_dir = log_dir(ctx.log.config)

    def _partition_count(self, name: str) -> int | None:
        """The topic's partitions now (read fresh), or None if it does not exist; a storage
        error is raised for the caller to answer."""
        try:
            return self.ctx.log.topic(validate_topic_name(name), fresh=True).partitions
        except (TopicNotFound, InvalidTopicName):
            return None

    # ---- ElectLeaders --------------------------------------------------------------------

    async def elect_leaders(self, request: Request) -> dict[str, Any]:
        body = request.body
        election_type = getattr(body, "election_type", PREFERRED)  # v0 elects the preferred
        asked = body.topic_partitions
        if asked is not None and not asked:  # Kafka's controller: nothing to do
            return _elections(ErrorCode.none, [])
        if election_type not in (PREFERRED, UNCLEAN):
            return _unknown_election_type(election_type, asked)
        if asked is None:
            names = await self.ctx.call(self.ctx.log.list_topics)
            # Kafka leaves out the partitions that already have the leader asked for: all
            return _elections(ErrorCode.none, [_election(name, []) for name in names])
        results = [await self.ctx.call(self._elected, t.topic, t.partitions) for t in asked]
        return _elections(ErrorCode.none, results)

    def _elected(self, name: str, partitions: Iterable[int]) -> dict[str, Any]:
        """Each partition's answer: its leader (the one broker) is already the preferred
        leader, and is live, so neither a preferred nor an unclean election is needed."""
        try:
            count = self._partition_count(name)
        except ObjectLogError as e:
            return _election(name, [_result(p, (error_code(e), str(e))) for p in partitions])
        return _election(name, [_result(p, _election_answer(name, p, count)) for p in partitions])

    # ---- DescribeLogDirs, AlterReplicaLogDirs -------------------------------------------------

    async def describe_log_dirs(self, request: Request) -> dict[str, Any]:
        result = await self.ctx.call(self._described_log_dir, request.body.topics)
        return {"throttle_time": 0, "error_code": ErrorCode.none, "results": [result]}

    def _described_log_dir(self, asked: Any) -> dict[str, Any]:
        """The one log dir with the partitions asked for (None: every partition) that exist,
        as Kafka leaves out those it does not host; a storage error fails the log dir, as
        Kafka answers a log dir it cannot read (KAFKA_STORAGE_ERROR)."""
        answer: dict[str, Any] = {"error_code": ErrorCode.none, "log_dir": self.log_dir}
        try:
            wanted = self._wanted(asked)
            sized = (self._sized(name, partitions) for name, partitions in wanted.items())
            topics = [topic for topic in sized if topic is not None and topic["partitions"]]
        except ObjectLogError as e:
            return {**answer, "error_code": error_code(e), "topics": []}
        return {
            **answer,
            "topics": topics,
            "total_bytes": UNKNOWN_SIZE,
            "usable_bytes": UNKNOWN_SIZE,
        }

    def _wanted(self, asked: Any) -> dict[str, set[int] | None]:
        """Topic -> the partitions asked for (None: all of them)."""
        if asked is None:
            return dict.fromkeys(self.ctx.log.list_topics())
        wanted: dict[str, set[int]] = {}
        for topic in asked:
            wanted.setdefault(topic.topic, set()).update(topic.partitions)
        return {name: partitions for name, partitions in wanted.items()}

    def _sized(self, name: str, partitions: set[int] | None) -> dict[str, Any] | None:
        """The topic's partitions (those asked for) with their bytes in the index: one read of
        the topic, one BatchGetItem of its heads, and each spilled index's manifest list
        (cached), as describe_topic reads them."""
        try:
            description = self.ctx.log.describe_topic(validate_topic_name(name))
        except (TopicNotFound, InvalidTopicName):
            return None
        return {
            "name": name,
            "partitions": [
                {
                    "partition_index": p.partition,
                    "partition_size": p.bytes,
                    "offset_lag": 0,  # the log's end is its high watermark: nothing to catch up
                    "is_future_key": False,  # no replica is ever moving to another log dir
                }
                for p in description.partitions
                if partitions is None or p.partition in partitions
            ],
        }

    async def alter_replica_log_dirs(self, request: Request) -> dict[str, Any]:
        destinations = _destinations(request.body.dirs)
        results = [
            await self.ctx.call(self._moved, name, paths) for name, paths in destinations.items()
        ]
        return {"throttle_time": 0, "results": results}

    def _moved(self, name: str, paths: dict[int, str]) -> dict[str, Any]:
        """Moving a replica to the log dir it is in is a no-op success, as in Kafka; any other
        path is not a log dir of the broker (LOG_DIR_NOT_FOUND, checked first, as Kafka's
        LogManager does)."""
        codes = {
            p: ErrorCode.log_dir_not_found for p, path in paths.items() if path != self.log_dir
        }
        in_place = [p for p in paths if p not in codes]
        if in_place:
            codes.update(self._hosted(name, in_place))
        return {
            "topic_name": name,
            "partitions": [{"partition_index": p, "error_code": codes[p]} for p in paths],
        }

    def _hosted(self, name: str, partitions: list[int]) -> dict[int, ErrorCode]:
        try:
            count = self._partition_count(name) or 0
        except ObjectLogError as e:
            return dict.fromkeys(partitions, error_code(e))
        return {
            p: ErrorCode.none if 0 <= p < count else ErrorCode.unknown_topic_or_partition
            for p in partitions
        }

    # ---- AlterPartitionReassignments, ListPartitionReassignments ------------------------------

    async def alter_partition_reassignments(self, request: Request) -> dict[str, Any]:
        responses = [
            await self.ctx.call(self._reassigned, topic.name, topic.partitions)
            for topic in request.body.topics
        ]
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "responses": responses,
        }

    def _reassigned(self, name: str, partitions: Iterable[Any]) -> dict[str, Any]:
        try:
            count = self._partition_count(name)
        except ObjectLogError as e:
            failed = (error_code(e), str(e))
            return _reassignment_topic(name, [_reassignment_result(p, failed) for p in partitions])
        return _reassignment_topic(
            name,
            [
                _reassignment_result(p, self._reassignment_answer(name, p, count))
                for p in partitions
            ],
        )

    def _reassignment_answer(self, name: str, partition: Any, count: int | None) -> Answer:
        """Kafka's controller's checks, in its order: the topic, the partition, then a
        cancellation (none is in progress) or the replicas (only [broker] is valid, and it is
        the partition's replica set already: nothing to move)."""
        index = partition.partition_index
        if count is None:
            return (ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {name}.")
        if not 0 <= index < count:
            return (
                ErrorCode.unknown_topic_or_partition,
                f"Unable to find partition {name}:{index}.",
            )
        if partition.replicas is None:
            # the message is the error's own, which Kafka then leaves out (ApiError)
            return (ErrorCode.no_reassignment_in_progress, None)
        try:
            check_replicas(partition.replicas, self.ctx.broker.node_id)
        except Refused as e:
            return (e.code, str(e))
        return DONE

    async def list_partition_reassignments(self, request: Request) -> dict[str, Any]:
        """No reassignment is ever in progress: one to the one broker completes at once, and
        Kafka lists only partitions being reassigned (none of the topics asked for, known or
        not), so the answer reads nothing."""
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "error_message": None,
            "topics": [],
        }


def _election_answer(name: str, partition: int, count: int | None) -> Answer:
    """Kafka's controller's checks (electLeader): the topic, the partition, then whether the
    leader asked for is there already (it is)."""
    if count is None:
        return (ErrorCode.unknown_topic_or_partition, f"No such topic as {name}")
    if not 0 <= partition < count:
        return (ErrorCode.unknown_topic_or_partition, f"No such partition as {name}-{partition}")
    return NOT_NEEDED


def _destinations(dirs: Iterable[Any]) -> dict[str, dict[int, str]]:
    """Topic -> partition -> the path asked for it; a partition named under two paths gets the
    later one, as Kafka's request (partitionDirs) reads it."""
    destinations: dict[str, dict[int, str]] = {}
    for directory in dirs:
        for topic in directory.topics:
            for partition in topic.partitions:
                destinations.setdefault(topic.name, {})[partition] = directory.path
    return destinations


def _elections(code: ErrorCode, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "replica_election_results": results}


def _election(name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"topic": name, "partition_result": results}


def _unknown_election_type(election_type: int, asked: Iterable[Any] | None) -> dict[str, Any]:
    """Kafka's answer when its controller refuses the request: INVALID_REQUEST, and on every
    partition asked for (none when all were)."""
    refused = (ErrorCode.invalid_request, f"Unknown election type {election_type}")
    results = [_election(t.topic, [_result(p, refused) for p in t.partitions]) for t in asked or ()]
    return _elections(ErrorCode.invalid_request, results)


def _result(partition: int, answer: Answer) -> dict[str, Any]:
    code, message = answer
    return {"partition_id": partition, "error_code": code, "error_message": message}


def _reassignment_topic(name: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "partitions": results}


def _reassignment_result(partition: Any, answer: Answer) -> dict[str, Any]:
    code, message = answer
    return {
        "partition_index": partition.partition_index,
        "error_code": code,
        "error_message": message,
    }
