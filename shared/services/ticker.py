"""The tick: walk the due index from the watermark to now + HORIZON and dispatch what is due."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from shared.clock import Clock
from shared.observability import logger, milliseconds
from shared.services.dispatcher import Dispatcher
from shared.settings import Settings
from shared.storage import keys
from shared.storage.jobs import JobStore

MINUTE_MS = 60_000
# A tick with no watermark yet (first run) looks back this far.
FIRST_LOOKBACK_MS = 10 * MINUTE_MS


@dataclass
class ShardResult:
    """What draining one bucket shard did."""

    dispatched: int = 0
    lost: int = 0
    errors: int = 0

    @property
    def emptied(self) -> bool:
        """True when every due job in the shard was dispatched and committed."""
        return self.lost == 0 and self.errors == 0


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


class Ticker:
    """Runs one tick pass; the tick Lambda and the local loop call `tick()`."""

    def __init__(
        self, jobs: JobStore, dispatcher: Dispatcher, settings: Settings, clock: Clock
    ) -> None:
        self._jobs = jobs
        self._dispatcher = dispatcher
        self._settings = settings
        self._clock = clock

    def _drain_shard(self, minute_ms: int, shard: int, until_ms: int) -> ShardResult:
        """Dispatch every due job in one bucket shard."""
        result = ShardResult()
        bucket = f"{keys.bucket_name(minute_ms)}#{shard:02d}"
        for state in self._jobs.query_due(bucket, until_ms):
            try:
                committed = self._dispatcher.dispatch(state, self._clock.now_ms(), until_ms)
            except Exception:  # noqa: BLE001 - one bad job must not stop the others; logged.
                logger.exception("dispatch_failed", extra={"job_id": state.job_id})
                result.errors += 1
                continue
            result.dispatched += 1
            if not committed:
                # A concurrent writer moved the job; re-query the bucket next tick to be sure.
                result.lost += 1
        return result

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
        shards = range(self._settings.shards)
        with ThreadPoolExecutor(max_workers=min(8, self._settings.shards)) as pool:
            while minute <= last_minute:
                if self._clock.now_ms() - start > budget_ms:
                    report.out_of_time = True
                    break
                results = list(pool.map(lambda s, m=minute: self._drain_shard(m, s, until), shards))
                emptied = all(r.emptied for r in results)
                report.buckets_scanned += len(shards)
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
