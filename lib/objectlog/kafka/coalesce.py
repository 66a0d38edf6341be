"""The agent's group commit: the produce requests of all its connections that arrive while a
flush is being staged or committed become the next flush, one L0 object and, per partition, one
commit (services.group_commit plans it and says which batches share a commit).

A request that finds nothing in flight starts a flush at once: a lone producer waits no longer
than before. While flush N commits, flush N+1 is encoded and uploaded (Appender.stage, the
library Producer's pipeline); N+1 commits only after N has, so two flushes never commit to one
partition at once and a partition's requests commit in the order they came. A flush takes up
to MAX_FLUSH_BYTES of requests (a larger request goes alone); the rest wait for the next. If
a flush of several requests cannot be encoded, each of them is flushed alone, so one request's
data never fails another's. A request whose connection went away before its flush began is
dropped; one already in a flush is written, as it would have been alone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from objectlog.errors import StorageUnavailable
from objectlog.services.append import Appender
from objectlog.services.flushes import AppendOutcome, StagedFlush
from objectlog.services.group_commit import Entry, FlushPlan, entry_outcomes, plan_flush

logger = logging.getLogger(__name__)

MAX_FLUSH_BYTES = 16 * 1024 * 1024  # Arrow bytes of the requests one flush takes


@dataclass
class _Waiting:
    entries: list[Entry]
    answer: asyncio.Future[list[AppendOutcome]]
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = sum(entry.batch.table.nbytes for entry in self.entries)


@dataclass
class GroupCommitStats:
    requests: int = 0
    flushes: int = 0
    split_flushes: int = 0  # flushes of several requests that could not be encoded together


class GroupCommit:
    def __init__(self, appender: Appender, max_bytes: int = MAX_FLUSH_BYTES) -> None:
        self.appender = appender
        self.max_bytes = max_bytes
        self.stats = GroupCommitStats()
        self._waiting: list[_Waiting] = []
        self._runner: asyncio.Task[None] | None = None
        self._committing: asyncio.Task[None] | None = None  # the flush committing now

    async def append(self, entries: list[Entry]) -> list[AppendOutcome]:
        """The entries written in the next flush; their outcomes, one per entry, in order."""
        waiting = _Waiting(entries, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        self.stats.requests += 1
        if self._runner is None:
            self._runner = asyncio.create_task(self._run())
        return await waiting.answer

    async def stop(self) -> None:
        """Wait for the flushes under way; the requests still waiting for one are answered
        that the agent is stopping (their connections are closing), and none is taken."""
        stopping = StorageUnavailable("the agent is stopping: the request was not written")
        for waiting in self._waiting:
            _answer_error(waiting, stopping)
        self._waiting.clear()
        if self._runner is not None:
            await asyncio.wait([self._runner])

    async def _run(self) -> None:
        try:
            while self._waiting or self._committing is not None:
                if not self._waiting:
                    await self._committed()  # requests arriving meanwhile make the next flush
                    continue
                taken = self._take()
                staged = await self._stage(taken) if taken else None
                await self._committed()
                if staged is not None:
                    self._committing = asyncio.create_task(self._commit(taken, *staged))
        finally:
            self._runner = None

    async def _committed(self) -> None:
        """Once the flush committing now (if any) has committed."""
        if self._committing is not None:
            await self._committing
            self._committing = None

    def _take(self) -> list[_Waiting]:
        """The waiting requests, in order, up to max_bytes (at least one); those whose caller
        is gone are dropped."""
        taken: list[_Waiting] = []
        size = 0
        while self._waiting:
            waiting = self._waiting[0]
            if waiting.answer.done():  # cancelled: its connection went away
                self._waiting.pop(0)
                continue
            if taken and size + waiting.size > self.max_bytes:
                break
            taken.append(self._waiting.pop(0))
            size += waiting.size
        return taken

    async def _stage(self, taken: list[_Waiting]) -> tuple[FlushPlan, StagedFlush] | None:
        """The flush planned, encoded and its PUT started; None when it could not be (each
        request is then flushed alone, or answered with the error when it was alone)."""
        entries = [entry for waiting in taken for entry in waiting.entries]
        try:
            plan = plan_flush(entries)
            staged = await asyncio.to_thread(self.appender.stage, plan.batches, plan.producers)
        except Exception as e:
            if len(taken) == 1:
                _answer_error(taken[0], e)
                return None
            logger.warning("a flush of %d produce requests failed (%s): each alone", len(taken), e)
            self.stats.split_flushes += 1
            for waiting in taken:
                await self._alone(waiting)
            return None
        self.stats.flushes += 1
        return plan, staged

    async def _alone(self, waiting: _Waiting) -> None:
        staged = await self._stage([waiting])
        await self._committed()
        if staged is not None:
            await self._commit([waiting], *staged)

    async def _commit(self, taken: list[_Waiting], plan: FlushPlan, staged: StagedFlush) -> None:
        try:
            outcomes = await asyncio.to_thread(self.appender.commit_staged, staged, None)
            entries = [entry for waiting in taken for entry in waiting.entries]
            answers = entry_outcomes(plan, entries, outcomes)
        except Exception as e:
            for waiting in taken:
                _answer_error(waiting, e)
            return
        for waiting in taken:
            mine, answers = answers[: len(waiting.entries)], answers[len(waiting.entries) :]
            if not waiting.answer.done():
                waiting.answer.set_result(mine)


def _answer_error(waiting: _Waiting, error: Exception) -> None:
    if not waiting.answer.done():
        waiting.answer.set_exception(error)
