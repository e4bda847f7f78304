"""Execution of one run message: claim with a lease, re-read the job, apply the policies, deliver
to the target with the run's idempotency key, and record the outcome fenced by the lease."""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.aws import AwsClients
from shared.clock import Clock, format_ms
from shared.models.job import JobStatus, OverlapPolicy, StoredJob
from shared.models.messages import RunMessage
from shared.models.run import (
    TERMINAL_RUN_STATUSES,
    AttemptRecord,
    RunRecord,
    RunStatus,
    RunTrigger,
)
from shared.observability import count, logger, milliseconds
from shared.policies import backoff_seconds
from shared.services.dispatcher import Dispatcher
from shared.services.notify import Notifier
from shared.services.queue import RunQueue
from shared.settings import Settings
from shared.storage.jobs import JobStore
from shared.storage.runs import Outcome, RunStore
from shared.targets import Delivery, DeliveryError, HandlerRegistry, deliver

# How long a buffered run waits before it looks at the running slot again.
BUFFER_POLL_SECONDS = 2
MAX_ERROR_MESSAGE = 1000
# Writers (create, schedule change, resume) send occurrences before they commit, so a worker
# can be faster than the commit: it re-reads briefly, then looks again a second later, for as
# long as the write could plausibly still land.
SETTLE_READS = 4
SETTLE_PAUSE_SECONDS = 0.1
SETTLE_READ_WINDOW_MS = 10_000
CREATE_SETTLE_MS = 300_000
WRITE_SETTLE_MS = 30_000

VisibilityExtender = Callable[[int], None]


@dataclass(frozen=True)
class ProcessResult:
    """What happened to one message (for tests, logs and the local runtime's run line)."""

    action: str  # claimed | duplicate | stale | hop | orphan
    status: RunStatus | None = None
    run: RunRecord | None = None


def idempotency_key(job_id: str, run_id: str) -> str:
    """The key every delivery of a run carries: <job_id>:<run_id>."""
    return f"{job_id}:{run_id}"


def dependency_run_id(upstream_run_id: str, upstream_job_id: str) -> str:
    """A dependent job's run id for one upstream run: stable, so duplicates are absorbed."""
    return f"{upstream_run_id}~{upstream_job_id[-12:]}"


# Heartbeats come well inside the shortest visibility timeout the queues use (60 s locally).
HEARTBEAT_MAX_INTERVAL_SECONDS = 20.0


class Heartbeat:
    """Extends the lease (and the message visibility) while a long target runs."""

    def __init__(
        self,
        runs: RunStore,
        run: RunRecord,
        owner: str,
        clock: Clock,
        lease_ms: int,
        extend_visibility: VisibilityExtender | None,
    ) -> None:
        self._runs, self._run, self._owner, self._clock = runs, run, owner, clock
        self._lease_ms = lease_ms
        self._extend_visibility = extend_visibility
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="heartbeat")
        self.lost = False
        self.beats = 0

    @property
    def interval_seconds(self) -> float:
        """How often the lease is pushed out: a third of the lease, at most 20 s."""
        return max(1.0, min(HEARTBEAT_MAX_INTERVAL_SECONDS, self._lease_ms / 3000))

    def beat(self) -> bool:
        """Push the lease and the message visibility out by one lease; False if the lease
        was lost (another worker owns the run now)."""
        until = self._clock.now_ms() + self._lease_ms
        if not self._runs.extend_lease(self._run, self._owner, until):
            self.lost = True
            return False
        if self._extend_visibility is not None:
            self._extend_visibility(self._lease_ms // 1000)
        self.beats += 1
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_seconds):
            if not self.beat():
                return

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Executor:
    """Processes run messages. One instance per worker process; thread-safe."""

    def __init__(
        self,
        *,
        jobs: JobStore,
        runs: RunStore,
        queue: RunQueue,
        dispatcher: Dispatcher,
        clients: AwsClients,
        settings: Settings,
        clock: Clock,
        handlers: HandlerRegistry | None = None,
        notifier: Notifier | None = None,
        owner: str | None = None,
        rand: Callable[[], float] | None = None,
    ) -> None:
        self._jobs, self._runs, self._queue = jobs, runs, queue
        self._dispatcher = dispatcher
        self._clients, self._settings, self._clock = clients, settings, clock
        self._handlers = handlers
        self._notifier = notifier
        self._owner = owner or f"worker-{secrets.token_hex(6)}"
        self._rand = rand

    # ---- entry point -------------------------------------------------------------------

    def process(
        self,
        msg: RunMessage,
        priority: str,
        extend_visibility: VisibilityExtender | None = None,
    ) -> ProcessResult:
        """Handle one message. Raises only when the message must be retried by SQS (an AWS
        call failed before the outcome was safely recorded)."""
        now = self._clock.now_ms()
        if msg.not_before > now:
            wait_ms = msg.not_before - now
            if wait_ms > self._settings.early_hold_seconds * 1000:
                # Longer than SQS can delay at once (or arrived early): hop with the remainder.
                self._queue.resend(priority, msg)
                count("MessagesHopped")
                return ProcessResult(action="hop")
            # SQS delays are whole seconds: hold the message the last moment for precision.
            self._clock.sleep_until(msg.not_before)
            now = self._clock.now_ms()
        lease_ms = (msg.timeout_seconds + self._settings.lease_margin_seconds) * 1000
        claim = self._runs.claim(
            msg, owner=self._owner, now_ms=now, lease_until_ms=now + lease_ms, priority=priority
        )
        if claim.run is None:
            return self._lost_claim(msg, claim.blocking, priority)
        run = claim.run
        milliseconds("StartLagMs", now - msg.not_before)
        job = self._read_job(msg, run)
        if job is None:
            return self._no_job(msg, run, priority)
        if self._ahead_of_job(msg, run, job):
            return self._write_not_landed(msg, run, priority)
        return self._run_claimed(msg, run, job, priority, now, lease_ms, extend_visibility)

    # ---- steps -------------------------------------------------------------------------

    def _read_job(self, msg: RunMessage, run: RunRecord) -> StoredJob | None:
        """The job, re-read a few times while the write that sent this message (writers send
        before they commit) may still be committing."""
        job: StoredJob | None = None
        # A message sent moments ago (a create, a change, a trigger) may come with a write
        # that has only just landed: an eventually consistent read could miss it. One sent
        # long before (the tick's, a minute or two ahead) reads as cheaply as allowed.
        fresh = self._clock.now_ms() - msg.dispatched_at < SETTLE_READ_WINDOW_MS
        consistent = self._settings.consistent_job_reads or fresh
        for _ in range(SETTLE_READS):
            job = self._jobs.get(msg.job_id, consistent=consistent)
            consistent = True
            if job is not None and job.state.tenant_id != msg.tenant_id:
                return None
            if job is not None and not self._ahead_of_job(msg, run, job):
                return job
            if self._clock.now_ms() - msg.dispatched_at > SETTLE_READ_WINDOW_MS:
                return job
            self._clock.sleep(SETTLE_PAUSE_SECONDS)
        return job

    def _ahead_of_job(self, msg: RunMessage, run: RunRecord, job: StoredJob) -> bool:
        """True when the job as read would skip this run only because the write that sent the
        message has not landed yet (a resume still reads paused, a schedule change still reads
        the old schedule): the job's version is older than the one that write commits. A
        message whose write lost to another one sees a version at least as new, and is
        judged on the job as it stands."""
        gate = self._gate(msg, run, job)
        return (
            gate is not None
            and gate[0] is RunStatus.SKIPPED
            and job.state.version < msg.after_version
        )

    def _write_not_landed(self, msg: RunMessage, run: RunRecord, priority: str) -> ProcessResult:
        """The claim is undone; the message looks again a second later while its write may
        still land. After that the write lost (a concurrent change won): its occurrence was
        never the job's, and nothing is recorded for it."""
        if self._clock.now_ms() - msg.dispatched_at < WRITE_SETTLE_MS:
            self._queue.resend(priority, msg, 1)
            self._runs.delete_orphan(run, self._owner)
            count("MessagesHopped")
            return ProcessResult(action="hop")
        self._runs.delete_orphan(run, self._owner)
        logger.info("unlanded_write_dropped", extra={"job_id": msg.job_id, "run_id": msg.run_id})
        return ProcessResult(action="stale")

    def _no_job(self, msg: RunMessage, run: RunRecord, priority: str) -> ProcessResult:
        """No job for this message: a create still committing (look again shortly), or one
        whose transaction lost (nothing to run). The claim is undone either way."""
        if self._clock.now_ms() - msg.dispatched_at < CREATE_SETTLE_MS:
            self._queue.resend(priority, msg, 1)
            self._runs.delete_orphan(run, self._owner)
            return ProcessResult(action="hop")
        self._runs.delete_orphan(run, self._owner)
        logger.warning("orphan_run_dropped", extra={"job_id": msg.job_id, "run_id": msg.run_id})
        count("OrphansDropped")
        return ProcessResult(action="orphan")

    def _lost_claim(
        self, msg: RunMessage, blocking: RunRecord | None, priority: str
    ) -> ProcessResult:
        if (
            blocking is not None
            and blocking.status is RunStatus.RUNNING
            and blocking.schedule_version < msg.schedule_version
            and msg.attempt == 1
        ):
            # The same time under the old schedule is being looked at right now (it will end
            # skipped): look again in a second and take the run over then.
            self._queue.resend(priority, msg, 1)
            count("MessagesHopped")
            return ProcessResult(action="hop", run=blocking)
        if blocking is not None and (
            blocking.status in TERMINAL_RUN_STATUSES or blocking.status is RunStatus.RUNNING
        ):
            # A transport duplicate (SQS at-least-once, a resent dispatch): absorbed here.
            count("DuplicatesPrevented")
            logger.info(
                "duplicate_prevented",
                extra={
                    "job_id": msg.job_id,
                    "run_id": msg.run_id,
                    "run_status": blocking.status.value,
                    "attempt": msg.attempt,
                },
            )
            return ProcessResult(action="duplicate", status=blocking.status, run=blocking)
        logger.info(
            "stale_message_dropped",
            extra={"job_id": msg.job_id, "run_id": msg.run_id, "attempt": msg.attempt},
        )
        return ProcessResult(action="stale", run=blocking)

    def _gate(
        self, msg: RunMessage, run: RunRecord, job: StoredJob
    ) -> tuple[RunStatus, str] | None:
        """Why the run must not execute, if it must not."""
        state = job.state
        if state.status is JobStatus.CANCELLED:
            return RunStatus.CANCELLED, "job_cancelled"
        first_scheduled = run.attempt_count == 1 and msg.trigger is RunTrigger.SCHEDULE
        if first_scheduled and state.status is JobStatus.PAUSED:
            return RunStatus.SKIPPED, "job_paused"
        if first_scheduled and msg.schedule_version != state.schedule_version:
            return RunStatus.SKIPPED, "schedule_changed"
        return None

    def _run_claimed(
        self,
        msg: RunMessage,
        run: RunRecord,
        job: StoredJob,
        priority: str,
        now: int,
        lease_ms: int,
        extend_visibility: VisibilityExtender | None,
    ) -> ProcessResult:
        gate = self._gate(msg, run, job)
        if gate is not None:
            return self._finish(
                msg, run, job, Outcome(status=gate[0], attempt=None, reason=gate[1])
            )
        overlap = job.definition.overlap
        holds_slot = False
        if overlap is not OverlapPolicy.ALLOW:
            holds_slot = self._jobs.acquire_slot(msg.job_id, msg.run_id, now + lease_ms, now)
            if holds_slot and overlap is OverlapPolicy.BUFFER_ONE:
                self._jobs.release_buffer(msg.job_id, msg.run_id)
            if not holds_slot:
                if overlap is OverlapPolicy.BUFFER_ONE and self._jobs.reserve_buffer(
                    msg.job_id, msg.run_id, now + lease_ms, now
                ):
                    # Wait for the running one: send the message again first, then let go.
                    self._queue.resend(priority, msg, BUFFER_POLL_SECONDS)
                    waiting = RunStatus.QUEUED if msg.attempt == 1 else RunStatus.RETRYING
                    outcome = Outcome(status=waiting, attempt=None, reason="buffered")
                    return self._finish(msg, run, job, outcome)
                outcome = Outcome(status=RunStatus.SKIPPED, attempt=None, reason="overlap")
                return self._finish(msg, run, job, outcome)
        try:
            if run.budget_used > job.definition.retry.max_attempts:
                # Taken over after a worker died on the last allowed attempt.
                attempt = AttemptRecord(
                    attempt=run.attempt_count,
                    started_at_ms=now,
                    finished_at_ms=now,
                    duration_ms=0,
                    status=RunStatus.DEAD.value,
                    error_code="attempts_exhausted",
                    error_message="a worker stopped during the last allowed attempt",
                )
                self._queue.send_dead_letter(priority, msg)
                return self._finish(msg, run, job, Outcome(status=RunStatus.DEAD, attempt=attempt))
            return self._execute(msg, run, job, priority, lease_ms, extend_visibility)
        finally:
            if holds_slot:
                self._jobs.release_slot(msg.job_id, msg.run_id)

    def _execute(
        self,
        msg: RunMessage,
        run: RunRecord,
        job: StoredJob,
        priority: str,
        lease_ms: int,
        extend_visibility: VisibilityExtender | None,
    ) -> ProcessResult:
        definition = job.definition
        started = self._clock.now_ms()
        delivery = Delivery(
            job_id=msg.job_id,
            run_id=msg.run_id,
            tenant_id=msg.tenant_id,
            attempt=run.attempt_count,
            scheduled_for_ms=run.scheduled_for_ms,
            idempotency_key=idempotency_key(msg.job_id, msg.run_id),
            payload=definition.payload,
            timeout_seconds=float(definition.timeout_seconds),
        )
        error: DeliveryError | None = None
        output: Any = None
        with Heartbeat(self._runs, run, self._owner, self._clock, lease_ms, extend_visibility):
            try:
                result = deliver(
                    definition.target,
                    delivery,
                    clients=self._clients,
                    clock=self._clock,
                    handlers=self._handlers,
                )
                output = result.output
            except DeliveryError as exc:
                error = exc
        finished = self._clock.now_ms()
        attempt = AttemptRecord(
            attempt=run.attempt_count,
            started_at_ms=started,
            finished_at_ms=finished,
            duration_ms=finished - started,
            status=RunStatus.SUCCEEDED.value,
        )
        milliseconds("RunDurationMs", finished - started)
        if error is None:
            return self._finish(
                msg, run, job, Outcome(status=RunStatus.SUCCEEDED, attempt=attempt, output=output)
            )
        attempt = attempt.model_copy(
            update={
                "status": RunStatus.FAILED.value,
                "error_code": error.code,
                "error_message": error.message[:MAX_ERROR_MESSAGE],
            }
        )
        if not error.retryable:
            return self._finish(msg, run, job, Outcome(status=RunStatus.FAILED, attempt=attempt))
        if run.budget_used < definition.retry.max_attempts:
            delay = backoff_seconds(definition.retry, run.budget_used, self._rand or random.random)
            next_at = finished + int(delay * 1000)
            retry = msg.model_copy(
                update={
                    "attempt": run.budget_used + 1,
                    "not_before": next_at,
                    "dispatched_at": finished,
                    "timeout_seconds": definition.timeout_seconds,
                }
            )
            # Send the next attempt first, then record: a crash in between duplicates, never loses.
            self._queue.resend(priority, retry)
            outcome = Outcome(
                status=RunStatus.RETRYING, attempt=attempt, next_attempt_at_ms=next_at
            )
            return self._finish(msg, run, job, outcome)
        self._queue.send_dead_letter(priority, msg)
        return self._finish(msg, run, job, Outcome(status=RunStatus.DEAD, attempt=attempt))

    def _finish(
        self, msg: RunMessage, run: RunRecord, job: StoredJob, outcome: Outcome
    ) -> ProcessResult:
        now = self._clock.now_ms()
        if not self._runs.finish(run, self._owner, outcome, now):
            # Our lease expired and another worker owns the run: its result stands.
            count("LeaseLost")
            logger.warning("lease_lost", extra={"job_id": run.job_id, "run_id": run.run_id})
            return ProcessResult(action="stale", run=run)
        self._observe(run, outcome, msg, now)
        if outcome.status is RunStatus.SUCCEEDED:
            self._trigger_dependents(job, run, now)
        if outcome.status in TERMINAL_RUN_STATUSES:
            self._complete_if_last(job, run, outcome.status, now)
            if self._notifier is not None:
                self._notifier.notify(job, run, outcome)
        return ProcessResult(action="claimed", status=outcome.status, run=run)

    def _observe(self, run: RunRecord, outcome: Outcome, msg: RunMessage, now: int) -> None:
        metric = {
            RunStatus.SUCCEEDED: "RunsSucceeded",
            RunStatus.FAILED: "RunsFailed",
            RunStatus.RETRYING: "RunsRetried",
            RunStatus.DEAD: "RunsDead",
            RunStatus.SKIPPED: "RunsSkipped",
            RunStatus.CANCELLED: "RunsCancelled",
        }.get(outcome.status)
        if metric:
            count(metric)
        attempt = outcome.attempt
        logger.info(
            "run_finished",
            extra={
                "job_id": run.job_id,
                "run_id": run.run_id,
                "tenant_id": run.tenant_id,
                "attempt": run.attempt_count,
                "status": outcome.status.value,
                "reason": outcome.reason,
                "error_code": attempt.error_code if attempt else None,
                "duration_ms": attempt.duration_ms if attempt else 0,
                "lag_ms": (attempt.started_at_ms if attempt else now) - msg.not_before,
                "trigger": run.trigger.value,
            },
        )

    def _complete_if_last(
        self, job: StoredJob, run: RunRecord, status: RunStatus, now: int
    ) -> None:
        """After the final occurrence of an exhausted schedule, the job completes (or fails)."""
        seen = job.state
        if (
            run.trigger is not RunTrigger.SCHEDULE
            or seen.next_fire_at_ms is not None
            or seen.last_scheduled_ms != run.scheduled_for_ms
        ):
            return
        state = self._jobs.get_state(seen.job_id)
        if (
            state is None
            or state.status is not JobStatus.ACTIVE
            or state.next_fire_at_ms is not None
            or state.last_scheduled_ms != run.scheduled_for_ms
        ):
            return
        final = (
            JobStatus.FAILED
            if status in (RunStatus.FAILED, RunStatus.DEAD)
            else (JobStatus.COMPLETED)
        )
        self._jobs.finish_one_shot(state, final, now)

    def _trigger_dependents(self, job: StoredJob, run: RunRecord, now: int) -> None:
        """Each active job that depends on this one gets a run (trigger: dependency)."""
        if job.state.dependents <= 0:
            return
        for dependent_id in self._jobs.dependents_of(job.state.job_id):
            state = self._jobs.get_state(dependent_id, consistent=False)
            if (
                state is None
                or state.status is not JobStatus.ACTIVE
                or state.tenant_id != job.state.tenant_id
            ):
                continue
            run_id = dependency_run_id(run.run_id, job.state.job_id)
            self._dispatcher.send_now(
                state,
                run_id=run_id,
                trigger=RunTrigger.DEPENDENCY,
                scheduled_for_ms=now,
                now_ms=now,
            )
            self._runs.put_queued(
                job_id=dependent_id,
                run_id=run_id,
                tenant_id=state.tenant_id,
                scheduled_for_ms=now,
                trigger=RunTrigger.DEPENDENCY,
                priority=state.priority.value,
                now_ms=now,
            )
            logger.info(
                "dependency_triggered",
                extra={
                    "job_id": dependent_id,
                    "run_id": run_id,
                    "upstream_job_id": job.state.job_id,
                    "scheduled_for": format_ms(now),
                },
            )
