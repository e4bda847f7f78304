"""Dispatch: send every occurrence due before the horizon, then commit the schedule state.

Send-then-commit: if the commit loses or the process dies before it, an occurrence may be sent
twice, never zero times; the worker's conditional claim absorbs the duplicate."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from shared.clock import format_ms
from shared.models.job import JobState, JobStatus
from shared.models.messages import RunMessage
from shared.models.run import RunTrigger
from shared.observability import count, logger, milliseconds
from shared.policies import plan_misfires
from shared.schedule import Schedule, parse_schedule
from shared.services.queue import Outgoing, RunQueue
from shared.settings import Settings
from shared.storage.jobs import JobStore

# A schedule is at most one occurrence a second, so a pass never sends more than the horizon
# in seconds; this bound only protects against a bug looping forever.
MAX_OCCURRENCES_PER_PASS = 2_000
# How far a misfire scan walks one by one before it jumps to the present.
MAX_MISFIRE_SCAN = 10_000


MapFn = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


def _serial_map(fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterable[Any]:
    return map(fn, items)


@dataclass(frozen=True)
class Advance:
    """What one dispatch pass did for a job."""

    sent: list[int]  # scheduled times sent, in order
    skipped: int  # missed occurrences dropped by the misfire policy
    next_fire_at_ms: int | None  # the first occurrence not sent (None: schedule exhausted)

    @property
    def last_scheduled_ms(self) -> int | None:
        """The latest scheduled time sent in this pass."""
        return self.sent[-1] if self.sent else None


def schedule_of(state: JobState) -> Schedule:
    """The parsed schedule of a stored job."""
    return parse_schedule(
        state.schedule,
        timezone=state.timezone,
        anchor_ms=state.anchor_ms,
        start_at_ms=state.start_at_ms,
        end_at_ms=state.end_at_ms,
    )


def scheduled_run_id(scheduled_ms: int) -> str:
    """A scheduled occurrence's run id: its time, RFC 3339 with milliseconds."""
    return format_ms(scheduled_ms)


class Dispatcher:
    """The one dispatcher, used by the tick and by the API (create, update, resume)."""

    def __init__(self, jobs: JobStore, queue: RunQueue, settings: Settings) -> None:
        self._jobs = jobs
        self._queue = queue
        self._settings = settings

    def plan(self, state: JobState, now_ms: int, until_ms: int) -> tuple[Advance, list[int]]:
        """Work out which occurrences to send now (misfires first), without sending.
        Returns the advance and the `not_before` for each sent occurrence (misfires run now)."""
        if state.status is not JobStatus.ACTIVE or state.next_fire_at_ms is None:
            return Advance(sent=[], skipped=0, next_fire_at_ms=state.next_fire_at_ms), []
        schedule = schedule_of(state)
        cutoff = now_ms - state.misfire_grace_seconds * 1000
        t: int | None = state.next_fire_at_ms
        missed: list[int] = []
        while t is not None and t < cutoff and len(missed) < MAX_MISFIRE_SCAN:
            missed.append(t)
            t = schedule.next_at_or_after(t + 1)
        total_missed = len(missed)
        if t is not None and t < cutoff:
            # Denser than we walk one by one: count the rest as missed and jump to the present.
            total_missed += 1
            t = schedule.next_at_or_after(cutoff)
        plan = plan_misfires(state.misfire, missed, total_missed, self._settings.fire_all_cap)
        sent = list(plan.run)
        not_before = [max(now_ms, s) for s in sent]
        while t is not None and t <= until_ms and len(sent) < MAX_OCCURRENCES_PER_PASS:
            sent.append(t)
            not_before.append(t)
            t = schedule.next_at_or_after(t + 1)
        return Advance(sent=sent, skipped=plan.skipped, next_fire_at_ms=t), not_before

    def _prepare(
        self, state: JobState, now_ms: int, until_ms: int, after_version: int
    ) -> tuple[Advance, list[Outgoing]]:
        """The plan for one job and the messages it sends; nothing is sent here."""
        advance, not_before = self.plan(state, now_ms, until_ms)
        outgoing = [
            Outgoing(
                RunMessage(
                    job_id=state.job_id,
                    tenant_id=state.tenant_id,
                    run_id=scheduled_run_id(scheduled),
                    scheduled_for=scheduled,
                    schedule_version=state.schedule_version,
                    trigger=RunTrigger.SCHEDULE,
                    not_before=nb,
                    timeout_seconds=state.timeout_seconds,
                    after_version=after_version,
                    dispatched_at=now_ms,
                ),
            )
            for scheduled, nb in zip(advance.sent, not_before, strict=True)
        ]
        return advance, outgoing

    def _observe(self, state: JobState, advance: Advance, now_ms: int) -> None:
        if advance.sent:
            count("OccurrencesDispatched", len(advance.sent))
            for scheduled in advance.sent:
                milliseconds("TriggerLagMs", now_ms - scheduled)
        if advance.skipped:
            count("RunsSkipped", advance.skipped)
            logger.info(
                "misfires_skipped",
                extra={
                    "job_id": state.job_id,
                    "skipped": advance.skipped,
                    "policy": state.misfire.value,
                },
            )

    def send_due(
        self, state: JobState, now_ms: int, until_ms: int, *, commits_version: int | None = None
    ) -> Advance:
        """Send the occurrences due up to until_ms; nothing is committed here. The write that
        follows will commit `commits_version` (default: the version read, plus one)."""
        after_version = state.version + 1 if commits_version is None else commits_version
        advance, outgoing = self._prepare(state, now_ms, until_ms, after_version)
        if outgoing:
            self._queue.send(state.priority.value, outgoing)
        self._observe(state, advance, now_ms)
        return advance

    def send_now(
        self,
        state: JobState,
        *,
        run_id: str,
        trigger: RunTrigger,
        scheduled_for_ms: int,
        now_ms: int,
        retry_gen: int = 0,
    ) -> RunMessage:
        """Send one run to start now, outside the schedule (manual, dependency, or a retry with
        a fresh attempt budget when retry_gen > 0). Returns the message sent."""
        message = RunMessage(
            job_id=state.job_id,
            tenant_id=state.tenant_id,
            run_id=run_id,
            scheduled_for=scheduled_for_ms,
            schedule_version=state.schedule_version,
            trigger=trigger,
            attempt=1,
            retry_gen=retry_gen,
            not_before=now_ms,
            timeout_seconds=state.timeout_seconds,
            dispatched_at=now_ms,
        )
        self._queue.send(state.priority.value, [Outgoing(message, 0)])
        return message

    def apply(self, state: JobState, advance: Advance, now_ms: int) -> JobState:
        """The state after an advance: next occurrence and last scheduled time updated."""
        return state.model_copy(
            update={
                "next_fire_at_ms": advance.next_fire_at_ms,
                "last_scheduled_ms": advance.last_scheduled_ms or state.last_scheduled_ms,
                "updated_at_ms": now_ms,
            }
        )

    def dispatch(self, state: JobState, now_ms: int, until_ms: int) -> bool:
        """Tick path for one job: send what is due, then commit with one conditional update.
        Returns False when a concurrent writer changed the job (the send may be a duplicate)."""
        advance = self.send_due(state, now_ms, until_ms)
        return self._commit(state, advance, now_ms)

    def dispatch_many(
        self,
        states: Sequence[JobState],
        now_ms: int,
        until_ms: int,
        map_fn: MapFn = _serial_map,
        *,
        align: bool = False,
    ) -> list[bool | None]:
        """Tick path for a batch of jobs: the messages of all of them go out together (ten to
        an SQS request, whatever job they belong to), then each job is committed (through
        map_fn, e.g. a thread pool's map). Per job: True committed, False lost to a concurrent
        writer, None failed (logged; nothing of it committed, the next tick sends it again).
        `align`: time the sends so delayed messages land just after their due time (a wait of
        under a second; see RunQueue.send)."""
        prepared: list[tuple[JobState, Advance, list[Outgoing]] | None] = []
        for state in states:
            try:
                prepared.append((state, *self._prepare(state, now_ms, until_ms, state.version + 1)))
            except Exception:  # noqa: BLE001 - one bad job must not stop the others; logged.
                logger.exception("dispatch_failed", extra={"job_id": state.job_id})
                prepared.append(None)
        by_priority: dict[str, list[Outgoing]] = defaultdict(list)
        for entry in prepared:
            if entry is not None:
                by_priority[entry[0].priority.value].extend(entry[2])
        failed: set[str] = set()
        for priority, outgoing in by_priority.items():
            try:
                self._queue.send(priority, outgoing, align=align)
            except Exception:  # noqa: BLE001 - those jobs stay due; the next tick resends.
                logger.exception("dispatch_send_failed", extra={"priority": priority})
                failed.add(priority)

        def commit(entry: tuple[JobState, Advance, list[Outgoing]] | None) -> bool | None:
            if entry is None or entry[0].priority.value in failed:
                return None
            state, advance, _ = entry
            self._observe(state, advance, now_ms)
            try:
                return self._commit(state, advance, now_ms)
            except Exception:  # noqa: BLE001 - as above: logged, retried by the next tick.
                logger.exception("dispatch_failed", extra={"job_id": state.job_id})
                return None

        return list(map_fn(commit, prepared))

    def _commit(self, state: JobState, advance: Advance, now_ms: int) -> bool:
        if advance.next_fire_at_ms is None and not advance.sent:
            # Nothing left and nothing in flight from this pass (e.g. the last occurrences
            # were skipped misfires): the job is complete now.
            exhausted = self.apply(state, advance, now_ms)
            return self._jobs.finish_one_shot(exhausted, JobStatus.COMPLETED, now_ms)
        committed = self._jobs.commit_dispatch(
            state.job_id,
            seen_version=state.version,
            next_fire_at_ms=advance.next_fire_at_ms,
            last_scheduled_ms=advance.last_scheduled_ms,
            now_ms=now_ms,
        )
        if not committed:
            logger.info("dispatch_commit_lost", extra={"job_id": state.job_id})
        return committed
