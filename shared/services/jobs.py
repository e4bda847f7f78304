"""The API's use cases: jobs, runs, dead letters and metrics, scoped to one tenant."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from shared.clock import Clock, format_ms, parse_rfc3339_ms
from shared.errors import (
    Conflict,
    FieldError,
    NotFound,
    PreconditionFailed,
    QuotaExceeded,
    ValidationFailed,
)
from shared.models.api import (
    JobCreate,
    JobList,
    JobOut,
    JobPatch,
    MetricsOut,
    QueueDepth,
    RedrivenRun,
    RedriveResult,
    RunList,
    RunOut,
)
from shared.models.job import JobDefinition, JobState, JobStatus, StoredJob
from shared.models.run import RunRecord, RunStatus, RunTrigger
from shared.schedule import Schedule, ScheduleError, validate_new_schedule
from shared.services.dispatcher import Dispatcher
from shared.settings import Settings
from shared.storage.jobs import CreateConflict, CreateGuards, JobStore, VersionConflict
from shared.storage.runs import RunStore

JOB_ID_PATTERN = re.compile(r"^[0-9a-f]{22}$")
DIGITS = re.compile(r"[0-9]{1,18}")
SCHEDULE_FIELDS = ("schedule", "timezone", "start_at", "end_at")
METRICS_WINDOW_MINUTES = 15
METRICS_CAP = 10_000
LIST_SCAN_PAGE = 100
REDRIVE_CAP = 1_000
MAX_LIMIT = 100


def new_job_id(now_ms: int) -> str:
    """A job id that sorts by creation time: 12 hex digits of ms, 10 random."""
    return f"{now_ms:012x}{secrets.token_hex(5)}"


def request_hash(body: bytes) -> str:
    """Fingerprint of a create body, to tell a replay from a different request."""
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
    except ValueError:
        canonical = body
    return hashlib.sha256(canonical).hexdigest()


def encode_token(key: dict[str, Any] | None, scope: str) -> str | None:
    """Opaque pagination token from a LastEvaluatedKey, bound to the list it pages (`scope`)."""
    if not key:
        return None
    value = {"scope": scope, "key": key}
    return base64.urlsafe_b64encode(json.dumps(value, sort_keys=True).encode()).decode()


def _is_key_attribute(value: Any) -> bool:
    # A key attribute as DynamoDB returns it: {"S": "..."} or {"N": "..."}.
    if not isinstance(value, dict) or len(value) != 1:
        return False
    kind, raw = next(iter(value.items()))
    return kind in ("S", "N") and isinstance(raw, str)


def decode_token(token: str | None, scope: str) -> dict[str, Any] | None:
    """LastEvaluatedKey from a token. A token that is malformed or was issued for another list
    (another tenant, job or endpoint) is a 400 on next_token, never a failed AWS call."""
    if not token:
        return None
    invalid = ValidationFailed(
        "invalid next_token",
        [FieldError("next_token", "not a token this API issued for this list")],
    )
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error) as exc:
        raise invalid from exc
    if not isinstance(value, dict) or value.get("scope") != scope:
        raise invalid
    key = value.get("key")
    if not isinstance(key, dict) or not key or not all(map(_is_key_attribute, key.values())):
        raise invalid
    return key


def parse_limit(raw: str | None, default: int = 50) -> int:
    """The `limit` query parameter: 1 to 100."""
    if raw is None or raw == "":
        return default
    # ASCII digits only: str.isdigit() also accepts "²" (which int() refuses) and other scripts.
    if not DIGITS.fullmatch(raw) or not 1 <= int(raw) <= MAX_LIMIT:
        raise ValidationFailed(
            "invalid limit", [FieldError("limit", f"must be an integer from 1 to {MAX_LIMIT}")]
        )
    return int(raw)


def validation_details(err: ValidationError, prefix: str = "") -> list[FieldError]:
    """pydantic errors as field/reason pairs (dotted paths)."""
    details = []
    for e in err.errors():
        path = ".".join(str(p) for p in e["loc"]) or "body"
        details.append(FieldError(f"{prefix}{path}", e["msg"]))
    return details


def next_schedule_version(old: int, now_ms: int) -> int:
    """A schedule version no concurrent writer can also pick (two PATCHes that read the same
    version must not both mint the same one) and that grows over time."""
    return max(old + 1, now_ms * 1000 + secrets.randbelow(1000))


def percentile(values: list[int], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 1))))
    return float(ordered[rank - 1])


class JobService:
    """Use cases behind the HTTP API. Every method takes the caller's tenant."""

    def __init__(
        self,
        *,
        jobs: JobStore,
        runs: RunStore,
        dispatcher: Dispatcher,
        settings: Settings,
        clock: Clock,
        queue_depths: Any = None,
    ) -> None:
        self._jobs, self._runs = jobs, runs
        self._dispatcher, self._settings, self._clock = dispatcher, settings, clock
        self._queue_depths = queue_depths

    # ---- helpers -----------------------------------------------------------------------

    def _horizon_end(self, now_ms: int) -> int:
        s = self._settings
        return now_ms + (s.horizon_seconds + s.dispatch_margin_seconds) * 1000

    def _load(self, tenant_id: str, job_id: str) -> StoredJob:
        if not JOB_ID_PATTERN.match(job_id):
            raise NotFound(f"job {job_id} not found")
        job = self._jobs.get(job_id)
        if job is None or job.state.tenant_id != tenant_id:
            raise NotFound(f"job {job_id} not found")
        return job

    def _render(self, job: StoredJob) -> JobOut:
        runs, _ = self._runs.list_for_job(job.state.job_id, limit=1, start_key=None)
        return JobOut.of(job, runs[0] if runs else None)

    def _check_payload(self, payload: Any) -> None:
        # UTF-8 bytes, as stored and delivered (escaping non-ASCII would count é as 6 bytes).
        size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
        if size > self._settings.max_payload_bytes:
            raise ValidationFailed(
                "payload too large",
                [
                    FieldError(
                        "payload",
                        f"{size} bytes; the limit is {self._settings.max_payload_bytes} bytes",
                    )
                ],
            )

    def _times(self, definition: JobDefinition) -> tuple[int | None, int | None]:
        out: list[int | None] = []
        for name in ("start_at", "end_at"):
            raw = getattr(definition, name)
            if raw is None:
                out.append(None)
                continue
            try:
                out.append(parse_rfc3339_ms(raw))
            except ValueError as exc:
                raise ValidationFailed(
                    f"invalid {name}",
                    [FieldError(name, "must be an RFC 3339 timestamp with Z or an offset")],
                ) from exc
        return out[0], out[1]

    def _schedule(self, definition: JobDefinition, now_ms: int) -> Schedule:
        start, end = self._times(definition)
        try:
            return validate_new_schedule(
                definition.schedule,
                timezone=definition.timezone,
                now_ms=now_ms,
                start_at_ms=start,
                end_at_ms=end,
                anchor_ms=now_ms,
            )
        except ScheduleError as exc:
            raise ValidationFailed(
                f"invalid {exc.field}", [FieldError(exc.field, exc.message)]
            ) from exc

    @staticmethod
    def _first(schedule: Schedule, now_ms: int) -> int | None:
        # An at() up to 60 s in the past is accepted and runs at once (misfire rules apply).
        return schedule.next_at_or_after(now_ms - 60_000 if schedule.kind == "at" else now_ms)

    def _normalized(self, definition: JobDefinition, schedule: Schedule) -> JobDefinition:
        return definition.model_copy(
            update={
                "start_at": format_ms(schedule.start_at_ms) if schedule.start_at_ms else None,
                "end_at": format_ms(schedule.end_at_ms) if schedule.end_at_ms else None,
            }
        )

    def _check_dependencies(self, tenant_id: str, job_id: str | None, deps: list[str]) -> None:
        if len(set(deps)) != len(deps):
            raise ValidationFailed(
                "invalid depends_on", [FieldError("depends_on", "lists a job more than once")]
            )
        for dep in deps:
            if dep == job_id:
                raise ValidationFailed(
                    "invalid depends_on",
                    [FieldError("depends_on", "a job cannot depend on itself")],
                )
            if not JOB_ID_PATTERN.match(dep):
                raise ValidationFailed(
                    "invalid depends_on", [FieldError("depends_on", f"{dep!r} is not a job id")]
                )

    # ---- jobs --------------------------------------------------------------------------

    def create(
        self, tenant_id: str, body: JobCreate, *, idempotency_key: str | None, body_hash: str
    ) -> tuple[JobOut, bool]:
        """Create a job; returns (job, created). A replayed Idempotency-Key returns the first
        job with created=False; the same key with another body is a 409."""
        if idempotency_key is not None:
            replay = self._replay(tenant_id, idempotency_key, body_hash)
            if replay is not None:
                return replay, False
        self._check_payload(body.payload)
        definition = JobDefinition.model_validate(body.model_dump())
        now = self._clock.now_ms()
        schedule = self._schedule(definition, now)
        definition = self._normalized(definition, schedule)
        job_id = new_job_id(now)
        self._check_dependencies(tenant_id, job_id, definition.depends_on)
        state = JobState(
            job_id=job_id,
            tenant_id=tenant_id,
            name=definition.name,
            status=JobStatus.ACTIVE,
            version=1,
            schedule_version=1,
            next_fire_at_ms=self._first(schedule, now),
            schedule=definition.schedule,
            timezone=definition.timezone,
            start_at_ms=schedule.start_at_ms,
            end_at_ms=schedule.end_at_ms,
            anchor_ms=now,
            priority=definition.priority,
            misfire=definition.misfire,
            misfire_grace_seconds=definition.misfire_grace_seconds,
            timeout_seconds=definition.timeout_seconds,
            created_at_ms=now,
            updated_at_ms=now,
        )
        # Send first, then commit: a job inside the horizon must not wait for a tick that may
        # already have passed its bucket.
        advance = self._dispatcher.send_due(
            state, now, self._horizon_end(now), commits_version=state.version
        )
        state = self._dispatcher.apply(state, advance, now)
        if advance.next_fire_at_ms is None and not advance.sent:
            state = state.model_copy(update={"status": JobStatus.COMPLETED})
        guards = CreateGuards(
            max_jobs=self._settings.max_jobs_per_tenant,
            idempotency_key=idempotency_key,
            request_hash=body_hash,
            idempotency_expires_at_s=now // 1000
            + self._settings.idempotency_retention_days * 86_400,
        )
        try:
            self._jobs.create(definition, state, guards)
        except CreateConflict as conflict:
            self._raise_create_conflict(conflict, tenant_id, definition, idempotency_key, body_hash)
            raise  # pragma: no cover - _raise_create_conflict always raises or returns
        return JobOut.of(StoredJob(definition=definition, state=state), None), True

    def _raise_create_conflict(
        self,
        conflict: CreateConflict,
        tenant_id: str,
        definition: JobDefinition,
        idempotency_key: str | None,
        body_hash: str,
    ) -> None:
        if conflict.what == "name":
            raise Conflict(
                f"a job named {definition.name!r} already exists",
                [
                    FieldError(
                        "name", "must be unique among the tenant's jobs that are not cancelled"
                    )
                ],
            )
        if conflict.what == "quota":
            raise QuotaExceeded(
                f"the tenant has {self._settings.max_jobs_per_tenant} live jobs, the limit"
            )
        if conflict.what == "dependency":
            raise ValidationFailed(
                "invalid depends_on",
                [
                    FieldError(
                        "depends_on", f"job {conflict.upstream} does not exist or is cancelled"
                    )
                ],
            )
        if conflict.what == "idempotency" and idempotency_key is not None:
            raise Conflict(
                "a concurrent request with this Idempotency-Key is being processed; retry",
                [FieldError("Idempotency-Key", "in use by a concurrent request")],
            )
        raise Conflict("the job could not be created; retry")

    def _replay(self, tenant_id: str, key: str, body_hash: str) -> JobOut | None:
        guard = self._jobs.get_idempotency_guard(tenant_id, key)
        if guard is None:
            return None
        if guard.get("request_hash") != body_hash:
            raise Conflict(
                "this Idempotency-Key was used with a different request",
                [FieldError("Idempotency-Key", "already used with a different body")],
            )
        return self._render(self._load(tenant_id, str(guard["job_id"])))

    def get(self, tenant_id: str, job_id: str) -> JobOut:
        """One job."""
        return self._render(self._load(tenant_id, job_id))

    def list_jobs(
        self, tenant_id: str, *, status: str | None, limit: int, next_token: str | None
    ) -> JobList:
        """A page of the tenant's jobs, newest first, optionally only one status."""
        wanted: JobStatus | None = None
        if status:
            try:
                wanted = JobStatus(status)
            except ValueError as exc:
                allowed = ", ".join(s.value for s in JobStatus)
                raise ValidationFailed(
                    "invalid status", [FieldError("status", f"must be one of {allowed}")]
                ) from exc
        scope = f"jobs:{tenant_id}"
        start = decode_token(next_token, scope)
        states: list[JobState] = []
        # With a filter, read whole pages (not one job per query when matches are rare) and
        # resume after the last job returned, wherever in its page that was.
        page_size = LIST_SCAN_PAGE if wanted is not None else limit
        while True:
            page, page_end = self._jobs.list_states(tenant_id, limit=page_size, start_key=start)
            start = page_end
            for state in page:
                if wanted is not None and state.status is not wanted:
                    continue
                states.append(state)
                if len(states) == limit:
                    if state is not page[-1] or page_end is not None:
                        start = self._jobs.tenant_index_key(state)
                    break
            if len(states) >= limit or start is None:
                break
        definitions = self._jobs.get_definitions([s.job_id for s in states])
        jobs = [
            self._render(StoredJob(definition=definitions[s.job_id], state=s))
            for s in states
            if s.job_id in definitions
        ]
        return JobList(jobs=jobs, next_token=encode_token(start, scope))

    def update(
        self,
        tenant_id: str,
        job_id: str,
        patch: JobPatch,
        *,
        if_match: str | None,
    ) -> JobOut:
        """Change writable fields. A changed schedule takes effect from the next occurrence:
        occurrences already sent for the old one end skipped."""
        job = self._load(tenant_id, job_id)
        state = job.state
        if if_match is not None:
            expected = if_match.strip().strip('"')
            if not DIGITS.fullmatch(expected):
                raise ValidationFailed(
                    "invalid If-Match", [FieldError("If-Match", "must be the job's version")]
                )
            if int(expected) != state.version:
                raise PreconditionFailed(
                    f"version is {state.version}, not {expected}",
                    [FieldError("If-Match", f"the current version is {state.version}")],
                )
        if state.status is JobStatus.CANCELLED:
            raise Conflict("a cancelled job cannot be changed")
        merged = job.definition.model_dump(mode="json")
        for name in patch.model_fields_set:
            value = getattr(patch, name)
            merged[name] = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
        if "payload" in patch.model_fields_set:
            self._check_payload(patch.payload)
        try:
            definition = JobDefinition.model_validate(merged)
        except ValidationError as err:
            raise ValidationFailed("invalid job", validation_details(err)) from err
        now = self._clock.now_ms()
        old = job.definition
        schedule_changed = any(getattr(definition, f) != getattr(old, f) for f in SCHEDULE_FIELDS)
        self._check_dependencies(tenant_id, job_id, definition.depends_on)
        new_state = state.model_copy(
            update={
                "name": definition.name,
                "priority": definition.priority,
                "misfire": definition.misfire,
                "misfire_grace_seconds": definition.misfire_grace_seconds,
                "timeout_seconds": definition.timeout_seconds,
                "version": state.version + 1,
                "updated_at_ms": now,
            }
        )
        if schedule_changed:
            schedule = self._schedule(definition, now)
            definition = self._normalized(definition, schedule)
            new_state = new_state.model_copy(
                update={
                    "schedule": definition.schedule,
                    "timezone": definition.timezone,
                    "start_at_ms": schedule.start_at_ms,
                    "end_at_ms": schedule.end_at_ms,
                    "anchor_ms": now,
                    "schedule_version": next_schedule_version(state.schedule_version, now),
                    "next_fire_at_ms": self._first(schedule, now),
                    "last_scheduled_ms": None,
                }
            )
            if new_state.status in (JobStatus.COMPLETED, JobStatus.FAILED):
                # A new schedule gives a finished job a future again.
                new_state = new_state.model_copy(update={"status": JobStatus.ACTIVE})
            if new_state.status is JobStatus.ACTIVE:
                advance = self._dispatcher.send_due(
                    new_state, now, self._horizon_end(now), commits_version=new_state.version
                )
                new_state = self._dispatcher.apply(new_state, advance, now)
                if advance.next_fire_at_ms is None and not advance.sent:
                    new_state = new_state.model_copy(update={"status": JobStatus.COMPLETED})
        try:
            self._jobs.update_definition(
                definition,
                new_state,
                state,
                rename_from=old.name if definition.name != old.name else None,
                dependencies_added=[d for d in definition.depends_on if d not in old.depends_on],
                dependencies_removed=[d for d in old.depends_on if d not in definition.depends_on],
                max_jobs=self._settings.max_jobs_per_tenant,
            )
        except CreateConflict as conflict:
            if conflict.what == "quota":
                raise QuotaExceeded(
                    f"the tenant has {self._settings.max_jobs_per_tenant} live jobs, the limit"
                ) from conflict
            if conflict.what == "dependency":
                raise ValidationFailed(
                    "invalid depends_on",
                    [
                        FieldError(
                            "depends_on", f"job {conflict.upstream} does not exist or is cancelled"
                        )
                    ],
                ) from conflict
            raise Conflict(
                f"a job named {definition.name!r} already exists",
                [
                    FieldError(
                        "name", "must be unique among the tenant's jobs that are not cancelled"
                    )
                ],
            ) from conflict
        except VersionConflict as err:
            if if_match is not None:
                raise PreconditionFailed("the job changed meanwhile") from err
            raise Conflict("the job changed meanwhile; read it again and retry") from err
        return self._render(StoredJob(definition=definition, state=new_state))

    def _transition(self, job: StoredJob, new_state: JobState) -> JobOut:
        try:
            self._jobs.change_status(new_state, job.state)
        except VersionConflict as err:
            raise Conflict("the job changed meanwhile; retry") from err
        return self._render(StoredJob(definition=job.definition, state=new_state))

    def pause(self, tenant_id: str, job_id: str) -> JobOut:
        """Stop scheduling; occurrences already sent end skipped. Pausing a paused job is a
        no-op."""
        job = self._load(tenant_id, job_id)
        if job.state.status is JobStatus.PAUSED:
            return self._render(job)
        if job.state.status is not JobStatus.ACTIVE:
            raise Conflict(f"a {job.state.status.value} job cannot be paused")
        now = self._clock.now_ms()
        new_state = job.state.model_copy(
            update={
                "status": JobStatus.PAUSED,
                "version": job.state.version + 1,
                "updated_at_ms": now,
            }
        )
        return self._transition(job, new_state)

    def resume(self, tenant_id: str, job_id: str) -> JobOut:
        """Schedule again; occurrences missed while paused follow the misfire policy."""
        job = self._load(tenant_id, job_id)
        if job.state.status is JobStatus.ACTIVE:
            return self._render(job)
        if job.state.status is not JobStatus.PAUSED:
            raise Conflict(f"a {job.state.status.value} job cannot be resumed")
        now = self._clock.now_ms()
        new_state = job.state.model_copy(
            update={
                "status": JobStatus.ACTIVE,
                "version": job.state.version + 1,
                "updated_at_ms": now,
            }
        )
        advance = self._dispatcher.send_due(
            new_state, now, self._horizon_end(now), commits_version=new_state.version
        )
        new_state = self._dispatcher.apply(new_state, advance, now)
        if advance.next_fire_at_ms is None and not advance.sent:
            new_state = new_state.model_copy(update={"status": JobStatus.COMPLETED})
        return self._transition(job, new_state)

    def cancel(self, tenant_id: str, job_id: str) -> JobOut:
        """Cancel for good: no further run starts, including ones already queued."""
        job = self._load(tenant_id, job_id)
        if job.state.status is JobStatus.CANCELLED:
            return self._render(job)
        now = self._clock.now_ms()
        new_state = job.state.model_copy(
            update={
                "status": JobStatus.CANCELLED,
                "version": job.state.version + 1,
                "updated_at_ms": now,
                "next_fire_at_ms": None,
            }
        )
        return self._transition(job, new_state)

    def trigger(self, tenant_id: str, job_id: str) -> RunOut:
        """Run the job now, outside its schedule."""
        job = self._load(tenant_id, job_id)
        if job.state.status is JobStatus.CANCELLED:
            raise Conflict("a cancelled job cannot be triggered")
        now = self._clock.now_ms()
        run_id = f"{format_ms(now)}~{secrets.token_hex(3)}"
        state = job.state
        self._dispatcher.send_now(
            state, run_id=run_id, trigger=RunTrigger.MANUAL, scheduled_for_ms=now, now_ms=now
        )
        run = self._runs.put_queued(
            job_id=job_id,
            run_id=run_id,
            tenant_id=tenant_id,
            scheduled_for_ms=now,
            trigger=RunTrigger.MANUAL,
            priority=state.priority.value,
            now_ms=now,
        )
        return RunOut.of(run)

    # ---- runs --------------------------------------------------------------------------

    def list_runs(
        self, tenant_id: str, job_id: str, *, limit: int, next_token: str | None
    ) -> RunList:
        """A job's runs, newest first."""
        self._load(tenant_id, job_id)
        scope = f"runs:{tenant_id}:{job_id}"
        runs, last = self._runs.list_for_job(
            job_id, limit=limit, start_key=decode_token(next_token, scope)
        )
        return RunList(runs=[RunOut.of(r) for r in runs], next_token=encode_token(last, scope))

    def _load_run(self, tenant_id: str, job_id: str, run_id: str) -> tuple[StoredJob, RunRecord]:
        job = self._load(tenant_id, job_id)
        run = self._runs.get(job_id, run_id)
        if run is None:
            raise NotFound(f"run {run_id} of job {job_id} not found")
        return job, run

    def get_run(self, tenant_id: str, job_id: str, run_id: str) -> RunOut:
        """One run with its attempts."""
        return RunOut.of(self._load_run(tenant_id, job_id, run_id)[1])

    def retry_run(self, tenant_id: str, job_id: str, run_id: str) -> RunOut:
        """A fresh attempt budget for a failed or dead run."""
        job, run = self._load_run(tenant_id, job_id, run_id)
        if run.status not in (RunStatus.FAILED, RunStatus.DEAD):
            raise Conflict(f"only failed or dead runs can be retried; this one is {run.status}")
        if job.state.status is JobStatus.CANCELLED:
            raise Conflict("the job is cancelled")
        return RunOut.of(self._requeue(job, run))

    def _requeue(self, job: StoredJob, run: RunRecord) -> RunRecord:
        now = self._clock.now_ms()
        gen = run.retry_gen + 1
        # Send, then mark: if the worker is faster, its claim (newer generation) wins.
        self._dispatcher.send_now(
            job.state,
            run_id=run.run_id,
            trigger=RunTrigger.RETRY,
            scheduled_for_ms=run.scheduled_for_ms,
            now_ms=now,
            retry_gen=gen,
        )
        self._runs.mark_requeued(run, gen, now)
        return self._runs.get(run.job_id, run.run_id) or run

    # ---- operations --------------------------------------------------------------------

    def list_dead(self, tenant_id: str, *, limit: int, next_token: str | None) -> RunList:
        """The tenant's dead runs, newest first."""
        scope = f"dead:{tenant_id}"
        runs, last = self._runs.list_dead(
            tenant_id, limit=limit, start_key=decode_token(next_token, scope)
        )
        return RunList(runs=[RunOut.of(r) for r in runs], next_token=encode_token(last, scope))

    def redrive(self, tenant_id: str, run_ids: list[str] | None) -> RedriveResult:
        """Re-queue dead runs: all of them (up to 1,000 a call) or the listed ones."""
        wanted_pairs: set[tuple[str, str]] = set()
        wanted_runs: set[str] = set()
        for raw in run_ids or []:
            job_part, sep, run_part = raw.partition(":")
            if sep and JOB_ID_PATTERN.match(job_part):
                wanted_pairs.add((job_part, run_part))
            else:
                wanted_runs.add(raw)
        redriven: list[RedrivenRun] = []
        jobs: dict[str, StoredJob | None] = {}

        def requeue(run: RunRecord) -> None:
            if run.job_id not in jobs:
                jobs[run.job_id] = self._jobs.get(run.job_id)
            job = jobs[run.job_id]
            if job is None or job.state.tenant_id != tenant_id:
                return
            if job.state.status is JobStatus.CANCELLED or run.status is not RunStatus.DEAD:
                return
            self._requeue(job, run)
            redriven.append(RedrivenRun(job_id=run.job_id, run_id=run.run_id))

        # Named <job_id>:<run_id> pairs are looked up directly, wherever they are in the list.
        for job_id, run_id in sorted(wanted_pairs):
            found = self._runs.get(job_id, run_id)
            if found is not None and found.tenant_id == tenant_id:
                requeue(found)
        if run_ids is not None and not wanted_runs:
            return RedriveResult(redriven=redriven, count=len(redriven))
        start: dict[str, Any] | None = None
        scanned = 0
        while scanned < REDRIVE_CAP:
            page, start = self._runs.list_dead(tenant_id, limit=100, start_key=start)
            scanned += len(page)
            for run in page:
                if run_ids is None or run.run_id in wanted_runs:
                    requeue(run)
            if start is None:
                break
        return RedriveResult(redriven=redriven, count=len(redriven))

    def metrics(self, tenant_id: str) -> MetricsOut:
        """Counts by run status and start lag over the last 15 minutes, queue depths, dead
        letters."""
        now = self._clock.now_ms()
        since = now - METRICS_WINDOW_MINUTES * 60_000
        by_status: dict[str, int] = {s.value: 0 for s in RunStatus}
        lags: list[int] = []
        for run in self._runs.recent_activity(tenant_id, since, METRICS_CAP):
            by_status[run.status.value] += 1
            if run.start_lag_ms is not None:
                lags.append(run.start_lag_ms)
        depths: Mapping[str, QueueDepth] = (
            self._queue_depths() if self._queue_depths is not None else {}
        )
        return MetricsOut(
            window_minutes=METRICS_WINDOW_MINUTES,
            runs_by_status=by_status,
            start_lag_ms_p50=percentile(lags, 0.50),
            start_lag_ms_p99=percentile(lags, 0.99),
            queues=dict(depths),
            dead_letter_depth=self._runs.count_dead(tenant_id),
        )
