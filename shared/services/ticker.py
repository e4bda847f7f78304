"""The tick: walk the due index from the watermark to now + HORIZON and dispatch what is due.

One tick invocation dispatches a few hundred jobs a second at most (each is an SQS send and a
conditional commit, and one Python process has one CPU). To go further the tick fans out: it
hands each (minute, shard range) of the due index to a dispatch invocation (`LambdaFanOut`,
functions/dispatch), waits for their results and moves the watermark as before, only past
minutes every range emptied."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from shared.clock import Clock
from shared.models.job import JobState
from shared.observability import logger, milliseconds
from shared.services.dispatcher import Dispatcher, MapFn
from shared.settings import Settings
from shared.storage import keys
from shared.storage.jobs import JobStore

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

MINUTE_MS = 60_000
# A tick with no watermark yet (first run) looks back this far.
FIRST_LOOKBACK_MS = 10 * MINUTE_MS
# Threads of one tick over the shards of a minute (in-process drain).
TICK_THREADS = 8
# Threads of one dispatch invocation over the jobs of its shards, and how many jobs it hands
# them at a time (the due index is read page by page, never whole).
DRAIN_THREADS = 8
DRAIN_CHUNK = 64
# Chunks one dispatch invocation works on at once: each may wait (under a second) to time its
# sends, and the others use the CPU meanwhile.
CHUNKS_IN_FLIGHT = 4
# Parallel synchronous invokes of the dispatch function (the Lambda client's connection pool).
FAN_OUT_PARALLEL = 32


@dataclass
class ShardResult:
    """What draining one bucket shard (or a range of them) did."""

    dispatched: int = 0
    lost: int = 0
    errors: int = 0
    stopped: bool = False  # ran out of time before the shards were empty

    @property
    def emptied(self) -> bool:
        """True when every due job in the shard was dispatched and committed."""
        return self.lost == 0 and self.errors == 0 and not self.stopped

    def add(self, other: ShardResult) -> None:
        """Fold another result into this one."""
        self.dispatched += other.dispatched
        self.lost += other.lost
        self.errors += other.errors
        self.stopped = self.stopped or other.stopped

    def to_payload(self) -> dict[str, Any]:
        """The dispatch function's answer."""
        return {
            "dispatched": self.dispatched,
            "lost": self.lost,
            "errors": self.errors,
            "stopped": self.stopped,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> ShardResult:
        """Read a dispatch function's answer."""
        return cls(
            dispatched=int(payload["dispatched"]),
            lost=int(payload["lost"]),
            errors=int(payload["errors"]),
            stopped=bool(payload.get("stopped", False)),
        )


@dataclass(frozen=True)
class DispatchRange:
    """One unit of tick work: the shards [shard_start, shard_end) of one due-index minute,
    dispatched up to until_ms."""

    minute_ms: int
    shard_start: int
    shard_end: int
    until_ms: int

    def __post_init__(self) -> None:
        if self.minute_ms % MINUTE_MS or not 0 <= self.shard_start < self.shard_end:
            raise ValueError(f"invalid dispatch range {self!r}")

    @property
    def shards(self) -> range:
        """The shards of the range."""
        return range(self.shard_start, self.shard_end)

    def to_event(self) -> dict[str, int]:
        """The dispatch function's event."""
        return {
            "minute": self.minute_ms,
            "shard_start": self.shard_start,
            "shard_end": self.shard_end,
            "until": self.until_ms,
        }

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> DispatchRange:
        """Read a dispatch function's event (ValueError if it is not one)."""
        try:
            return cls(
                minute_ms=int(event["minute"]),
                shard_start=int(event["shard_start"]),
                shard_end=int(event["shard_end"]),
                until_ms=int(event["until"]),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a dispatch range: {event!r}") from err


FanOut = Callable[[Sequence[DispatchRange]], list[ShardResult]]


def split_shards(shards: int, per_range: int) -> list[tuple[int, int]]:
    """[start, end) pairs covering range(shards), `per_range` shards each (the last may be
    shorter)."""
    step = max(1, per_range)
    return [(start, min(shards, start + step)) for start in range(0, shards, step)]


@dataclass
class TickReport:
    """What one tick did."""

    now_ms: int
    until_ms: int
    watermark_before: int | None
    watermark_after: int | None
    buckets_scanned: int = 0
    jobs_dispatched: int = 0
    commits_lost: int = 0
    errors: int = 0
    out_of_time: bool = False
    ranges: int = 0


class Ticker:
    """Runs one tick pass; the tick Lambda and the local loop call `tick()`, the dispatch
    Lambda calls `drain()` for the range it was handed."""

    def __init__(
        self,
        jobs: JobStore,
        dispatcher: Dispatcher,
        settings: Settings,
        clock: Clock,
        *,
        fan_out: FanOut | None = None,
        shards_per_range: int = 1,
    ) -> None:
        self._jobs = jobs
        self._dispatcher = dispatcher
        self._settings = settings
        self._clock = clock
        self._fan_out = fan_out
        self._shards_per_range = shards_per_range

    def _dispatch_chunk(
        self, states: list[JobState], until_ms: int, map_fn: MapFn | None = None
    ) -> ShardResult:
        """Dispatch a chunk of due jobs together: their messages share SQS requests, timed so
        that they arrive just after they are due rather than up to a second early (when the
        worker would hold them, billed)."""
        outcomes = self._dispatcher.dispatch_many(
            states,
            self._clock.now_ms(),
            until_ms,
            **({"map_fn": map_fn} if map_fn else {}),
            align=True,
        )
        result = ShardResult()
        for committed in outcomes:
            if committed is None:
                result.errors += 1
            else:
                result.dispatched += 1
                # A lost commit: a concurrent writer moved the job; re-query next tick.
                result.lost += 0 if committed else 1
        return result

    def _due(self, minute_ms: int, shard: int, until_ms: int) -> Iterator[JobState]:
        bucket = f"{keys.bucket_name(minute_ms)}#{shard:02d}"
        return self._jobs.query_due(bucket, until_ms)

    def _drain_shard(self, minute_ms: int, shard: int, until_ms: int) -> ShardResult:
        """Dispatch every due job in one bucket shard, a chunk at a time."""
        result = ShardResult()
        due = self._due(minute_ms, shard, until_ms)
        while chunk := list(islice(due, DRAIN_CHUNK)):
            result.add(self._dispatch_chunk(chunk, until_ms))
        return result

    def _drain_range(self, work: DispatchRange) -> ShardResult:
        result = ShardResult()
        for shard in work.shards:
            result.add(self._drain_shard(work.minute_ms, shard, work.until_ms))
        return result

    def drain(self, work: DispatchRange, deadline_ms: int | None = None) -> ShardResult:
        """Dispatch every due job of a range's shards, DRAIN_THREADS at a time (the dispatch
        function's entry point). Stops taking jobs at deadline_ms: the result is then not
        `emptied`, so the tick keeps its watermark and the next tick finishes the work."""
        result = ShardResult()
        in_flight: deque[Future[ShardResult]] = deque()
        with (
            ThreadPoolExecutor(max_workers=DRAIN_THREADS) as pool,
            ThreadPoolExecutor(max_workers=CHUNKS_IN_FLIGHT) as chunks,
        ):
            try:
                for shard in work.shards:
                    due = self._due(work.minute_ms, shard, work.until_ms)
                    while chunk := list(islice(due, DRAIN_CHUNK)):
                        if deadline_ms is not None and self._clock.now_ms() >= deadline_ms:
                            result.stopped = True
                            return result
                        in_flight.append(
                            chunks.submit(self._dispatch_chunk, chunk, work.until_ms, pool.map)
                        )
                        while len(in_flight) >= CHUNKS_IN_FLIGHT:
                            result.add(in_flight.popleft().result())
            finally:
                while in_flight:
                    result.add(in_flight.popleft().result())
        return result

    def ranges(self, minute_ms: int, until_ms: int) -> list[DispatchRange]:
        """The work of one minute, as ranges of shards."""
        return [
            DispatchRange(minute_ms, start, end, until_ms)
            for start, end in split_shards(self._settings.shards, self._shards_per_range)
        ]

    def tick(self) -> TickReport:
        """One pass. Safe to run concurrently with another tick or with API writers: every
        state write is conditional and every send is absorbed if duplicated."""
        start = self._clock.now_ms()
        until = start + self._settings.horizon_seconds * 1000
        seen = self._jobs.get_watermark()
        minute = seen if seen is not None else keys.minute_of(start) - FIRST_LOOKBACK_MS
        last_minute = keys.minute_of(until)
        report = TickReport(
            now_ms=start, until_ms=until, watermark_before=seen, watermark_after=seen
        )
        new_watermark = minute
        contiguous = True
        budget_ms = int(self._settings.tick_budget_seconds * 1000)
        with ThreadPoolExecutor(max_workers=min(TICK_THREADS, self._settings.shards)) as pool:
            while minute <= last_minute:
                # A fanned-out minute may take up to a dispatch invocation's timeout: start it
                # only if that still ends inside the budget (the next tick does the rest).
                reserve_ms = (
                    int(self._settings.dispatch_timeout_seconds * 1000) if self._fan_out else 0
                )
                if self._clock.now_ms() - start + reserve_ms > budget_ms:
                    report.out_of_time = True
                    break
                work = self.ranges(minute, until)
                if self._fan_out is not None:
                    results = self._fan_out(work)
                else:
                    results = list(pool.map(self._drain_range, work))
                emptied = len(results) == len(work) and all(r.emptied for r in results)
                report.ranges += len(work)
                report.buckets_scanned += self._settings.shards
                report.jobs_dispatched += sum(r.dispatched for r in results)
                report.commits_lost += sum(r.lost for r in results)
                report.errors += sum(r.errors for r in results)
                # The minute holding `until` is only partly due, so the watermark stops there.
                if contiguous and emptied and minute < last_minute:
                    new_watermark = minute + MINUTE_MS
                else:
                    contiguous = False
                minute += MINUTE_MS
        if new_watermark != seen and self._jobs.advance_watermark(seen, new_watermark):
            report.watermark_after = new_watermark
        milliseconds("TickDurationMs", self._clock.now_ms() - start)
        logger.info("tick_finished", extra=report.__dict__)
        return report


class LambdaFanOut:
    """Hands each range to the dispatch function (synchronous invokes, in parallel) and returns
    what each did. An invoke that fails or times out counts as an error: the tick then keeps
    its watermark on that minute and the next tick drains it again (duplicate sends are
    absorbed by the worker's claim; nothing is missed)."""

    def __init__(
        self, client: LambdaClient, function_name: str, max_parallel: int = FAN_OUT_PARALLEL
    ) -> None:
        self._client = client
        self._function = function_name
        self._max_parallel = max_parallel

    def __call__(self, ranges: Sequence[DispatchRange]) -> list[ShardResult]:
        """Invoke the dispatch function once per range, up to max_parallel at a time."""
        if not ranges:
            return []
        with ThreadPoolExecutor(max_workers=min(self._max_parallel, len(ranges))) as pool:
            return list(pool.map(self._invoke, ranges))

    def _invoke(self, work: DispatchRange) -> ShardResult:
        extra = {"function": self._function, **work.to_event()}
        try:
            response = self._client.invoke(
                FunctionName=self._function,
                InvocationType="RequestResponse",
                Payload=json.dumps(work.to_event()).encode(),
            )
            body = response["Payload"].read()
        except (BotoCoreError, ClientError):
            logger.exception("dispatch_invoke_failed", extra=extra)
            return ShardResult(errors=1)
        if response.get("FunctionError"):
            logger.error("dispatch_function_error", extra={**extra, "error": body[:500]})
            return ShardResult(errors=1)
        try:
            return ShardResult.from_payload(json.loads(body))
        except (ValueError, KeyError, TypeError):
            logger.error("dispatch_bad_answer", extra={**extra, "answer": body[:500]})
            return ShardResult(errors=1)
