"""Run repository: the claim with a lease, lease-fenced outcomes, history, dead letters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared import constants as c
from shared.models.messages import RunMessage
from shared.models.run import AttemptRecord, RunRecord, RunStatus, RunTrigger
from shared.storage import keys
from shared.storage.errors import (
    is_conditional_failure,
    old_item,
    raise_if_throttled,
    start_key_errors,
)
from shared.storage.expr import Expr, conditional_update
from shared.storage.items import attempt_to_value, run_from_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class ClaimResult:
    """Outcome of a claim: the run now owned, or the run that blocked the claim."""

    run: RunRecord | None
    blocking: RunRecord | None = None

    @property
    def claimed(self) -> bool:
        """True when this worker now holds the run's lease."""
        return self.run is not None


@dataclass(frozen=True)
class Outcome:
    """What a worker records when it lets go of a run."""

    status: RunStatus
    attempt: AttemptRecord | None  # None: nothing was executed (skip/cancel/buffer)
    reason: str | None = None
    next_attempt_at_ms: int | None = None
    output: Any = None


class RunStore:
    """DynamoDB access for runs."""

    def __init__(self, client: DynamoDBClient, table: str, retention_days: int) -> None:
        self._db = client
        self._table = table
        self._retention_s = retention_days * 86_400

    def _key(self, job_id: str, run_id: str) -> dict[str, Any]:
        return {c.RUNS_PK: {"S": job_id}, c.RUNS_SK: {"S": run_id}}

    # ---- reads -------------------------------------------------------------------------

    def get(self, job_id: str, run_id: str) -> RunRecord | None:
        """One run."""
        resp = self._db.get_item(
            TableName=self._table, Key=self._key(job_id, run_id), ConsistentRead=True
        )
        item = resp.get("Item")
        return run_from_item(dict(item)) if item else None

    def list_for_job(
        self, job_id: str, *, limit: int, start_key: dict[str, Any] | None
    ) -> tuple[list[RunRecord], dict[str, Any] | None]:
        """A job's runs, newest first (run ids sort by scheduled time)."""
        e = Expr()
        kwargs: dict[str, Any] = {"ExclusiveStartKey": start_key} if start_key else {}
        with start_key_errors(start_key):
            resp = self._db.query(
                TableName=self._table,
                KeyConditionExpression=f"{e.n(c.RUNS_PK)} = {e.v(job_id)}",
                ScanIndexForward=False,
                Limit=limit,
                **e.kwargs(),
                **kwargs,
            )
        last = resp.get("LastEvaluatedKey")
        return [run_from_item(dict(i)) for i in resp.get("Items", [])], (
            dict(last) if last else None
        )

    def list_dead(
        self, tenant_id: str, *, limit: int, start_key: dict[str, Any] | None
    ) -> tuple[list[RunRecord], dict[str, Any] | None]:
        """A tenant's dead runs, newest first (sparse dead index)."""
        e = Expr()
        kwargs: dict[str, Any] = {"ExclusiveStartKey": start_key} if start_key else {}
        with start_key_errors(start_key):
            resp = self._db.query(
                TableName=self._table,
                IndexName=c.DEAD_INDEX,
                KeyConditionExpression=f"{e.n(c.ATTR_DEAD_TENANT)} = {e.v(tenant_id)}",
                ScanIndexForward=False,
                Limit=limit,
                **e.kwargs(),
                **kwargs,
            )
        last = resp.get("LastEvaluatedKey")
        return [run_from_item(dict(i)) for i in resp.get("Items", [])], (
            dict(last) if last else None
        )

    def count_dead(self, tenant_id: str) -> int:
        """How many dead runs a tenant has."""
        e = Expr()
        total = 0
        kwargs: dict[str, Any] = {}
        while True:
            resp = self._db.query(
                TableName=self._table,
                IndexName=c.DEAD_INDEX,
                KeyConditionExpression=f"{e.n(c.ATTR_DEAD_TENANT)} = {e.v(tenant_id)}",
                Select="COUNT",
                **e.kwargs(),
                **kwargs,
            )
            total += int(resp.get("Count", 0))
            last = resp.get("LastEvaluatedKey")
            if not last:
                return total
            kwargs["ExclusiveStartKey"] = last

    def recent_activity(self, tenant_id: str, since_ms: int, cap: int) -> Iterator[RunRecord]:
        """Runs of a tenant whose status last changed at or after since_ms (up to cap), read
        from every activity shard of the tenant."""
        seen = 0
        for shard in range(c.ACTIVITY_SHARDS):
            e = Expr()
            kwargs: dict[str, Any] = {}
            while seen < cap:
                resp = self._db.query(
                    TableName=self._table,
                    IndexName=c.ACTIVITY_INDEX,
                    KeyConditionExpression=f"{e.n(c.ATTR_ACTIVITY_TENANT)} = "
                    f"{e.v(keys.activity_key(tenant_id, shard))} AND "
                    f"{e.n(c.ATTR_ACTIVITY_AT)} >= {e.v(since_ms)}",
                    Limit=min(1000, cap - seen),
                    **e.kwargs(),
                    **kwargs,
                )
                for item in resp.get("Items", []):
                    seen += 1
                    yield run_from_item(dict(item))
                last = resp.get("LastEvaluatedKey")
                if not last:
                    break
                kwargs["ExclusiveStartKey"] = last

    # ---- claim -------------------------------------------------------------------------

    def claim(
        self,
        msg: RunMessage,
        *,
        owner: str,
        now_ms: int,
        lease_until_ms: int,
        priority: str,
    ) -> ClaimResult:
        """Take the run with one conditional write: create it running, or take it over when it
        waits (queued, retrying at this attempt, finished but retried with a newer generation)
        or when its owner's lease expired. Returns the blocking run when the claim loses."""
        e = Expr()
        running = e.v(RunStatus.RUNNING.value)
        now = e.v(now_ms)
        fresh_budget = msg.attempt == 1 and msg.retry_gen > 0
        first_attempt = AttemptRecord(attempt=0, started_at_ms=now_ms)  # number fixed below
        sets = [
            f"{e.n(c.ATTR_TENANT_ID)} = if_not_exists({e.n(c.ATTR_TENANT_ID)}, "
            f"{e.v(msg.tenant_id)})",
            f"{e.n(c.ATTR_SCHEDULED_FOR)} = if_not_exists({e.n(c.ATTR_SCHEDULED_FOR)}, "
            f"{e.v(msg.scheduled_for)})",
            f"{e.n('trigger')} = if_not_exists({e.n('trigger')}, {e.v(msg.trigger.value)})",
            f"{e.n('created_at')} = if_not_exists({e.n('created_at')}, {now})",
            f"{e.n('start_lag_ms')} = if_not_exists({e.n('start_lag_ms')}, "
            f"{e.v(max(0, now_ms - msg.scheduled_for))})",
            f"{e.n('priority')} = {e.v(priority)}",
            f"{e.n(c.ATTR_STATUS)} = {running}",
            f"{e.n('lease_owner')} = {e.v(owner)}",
            f"{e.n('lease_expires_at')} = {e.v(lease_until_ms)}",
            f"{e.n('updated_at')} = {now}",
            f"{e.n(c.ATTR_EXPIRES_AT)} = {e.v(now_ms // 1000 + self._retention_s)}",
            f"{e.n('attempt_count')} = if_not_exists({e.n('attempt_count')}, {e.v(0)}) + {e.v(1)}",
            f"{e.n('attempts')} = list_append(if_not_exists({e.n('attempts')}, {e.v([])}), "
            f"{e.v([attempt_to_value(first_attempt)])})",
            f"{e.n('retry_gen')} = {e.v(msg.retry_gen)}",
            f"{e.n(c.ATTR_SCHEDULE_VERSION)} = {e.v(msg.schedule_version)}",
        ]
        if fresh_budget:
            sets.append(f"{e.n('budget_used')} = {e.v(1)}")
        else:
            sets.append(
                f"{e.n('budget_used')} = if_not_exists({e.n('budget_used')}, {e.v(0)}) + {e.v(1)}"
            )
        update = (
            "SET "
            + ", ".join(sets)
            + " REMOVE "
            + ", ".join(
                [e.n("next_attempt_at"), e.n(c.ATTR_DEAD_TENANT), e.n("finished_at"), e.n("reason")]
            )
        )
        expired = f"({e.n(c.ATTR_STATUS)} = {running} AND {e.n('lease_expires_at')} < {now})"
        if fresh_budget:
            queued = e.v(RunStatus.QUEUED.value)
            gen = e.v(msg.retry_gen)
            cond = (
                f"({e.n(c.ATTR_STATUS)} IN ({e.v(RunStatus.FAILED.value)}, "
                f"{e.v(RunStatus.DEAD.value)}) AND {e.n('retry_gen')} < {gen}) OR "
                f"({e.n(c.ATTR_STATUS)} = {queued} AND {e.n('retry_gen')} = {gen}) OR {expired}"
            )
        elif msg.attempt > 1:
            cond = (
                f"({e.n(c.ATTR_STATUS)} = {e.v(RunStatus.RETRYING.value)} AND "
                f"{e.n('budget_used')} = {e.v(msg.attempt - 1)} AND "
                f"{e.n('retry_gen')} = {e.v(msg.retry_gen)}) OR {expired}"
            )
        else:
            queued = e.v(RunStatus.QUEUED.value)
            # An occurrence skipped because its schedule changed may be run by the new
            # schedule's message for the same time.
            cond = (
                f"attribute_not_exists({e.n(c.RUNS_PK)}) OR ({e.n(c.ATTR_STATUS)} = {queued} "
                f"AND {e.n('retry_gen')} = {e.v(msg.retry_gen)}) OR {expired} OR "
                f"({e.n(c.ATTR_STATUS)} = {e.v(RunStatus.SKIPPED.value)} AND "
                f"{e.n(c.ATTR_SCHEDULE_VERSION)} < {e.v(msg.schedule_version)})"
            )
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=self._key(msg.job_id, msg.run_id),
                UpdateExpression=update,
                ConditionExpression=cond,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **e.kwargs(),
            )
        except ClientError as err:
            if is_conditional_failure(err):
                blocking = old_item(err)
                return ClaimResult(run=None, blocking=run_from_item(blocking) if blocking else None)
            raise_if_throttled(err)
            raise
        run = run_from_item(dict(resp["Attributes"]))
        # Number the attempt just appended (its index is attempt_count - 1).
        run.attempts[-1].attempt = run.attempt_count
        return ClaimResult(run=run)

    # ---- outcomes ------------------------------------------------------------------------

    def finish(self, run: RunRecord, owner: str, outcome: Outcome, now_ms: int) -> bool:
        """Record an outcome, fenced by this worker's lease. False means the lease was lost and
        another worker owns the run: nothing was written."""
        e = Expr()
        index = run.attempt_count - 1
        sets = [
            f"{e.n(c.ATTR_STATUS)} = {e.v(outcome.status.value)}",
            f"{e.n('updated_at')} = {e.v(now_ms)}",
            f"{e.n(c.ATTR_ACTIVITY_TENANT)} = {e.v(keys.activity_key_of(run))}",
            f"{e.n(c.ATTR_ACTIVITY_AT)} = {e.v(now_ms)}",
        ]
        removes = [e.n("lease_owner"), e.n("lease_expires_at")]
        # Attempts left "running" by workers that died are marked lost.
        for i, stale in enumerate(run.attempts[:index]):
            if stale.status == RunStatus.RUNNING.value:
                lost = stale.model_copy(
                    update={
                        "status": "lost",
                        "error_code": "lease_expired",
                        "error_message": "the worker stopped before recording an outcome",
                    }
                )
                sets.append(f"{e.n('attempts')}[{i}] = {e.v(attempt_to_value(lost))}")
        if outcome.attempt is None:
            removes.append(f"{e.n('attempts')}[{index}]")
            sets.append(f"{e.n('attempt_count')} = {e.v(index)}")
            sets.append(f"{e.n('budget_used')} = {e.n('budget_used')} - {e.v(1)}")
        else:
            sets.append(f"{e.n('attempts')}[{index}] = {e.v(attempt_to_value(outcome.attempt))}")
        if outcome.status in (RunStatus.RETRYING, RunStatus.QUEUED):
            if outcome.next_attempt_at_ms is not None:
                sets.append(f"{e.n('next_attempt_at')} = {e.v(outcome.next_attempt_at_ms)}")
        else:
            sets.append(f"{e.n('finished_at')} = {e.v(now_ms)}")
        if outcome.status is RunStatus.DEAD:
            sets.append(f"{e.n(c.ATTR_DEAD_TENANT)} = {e.v(run.tenant_id)}")
        if outcome.reason is not None:
            sets.append(f"{e.n('reason')} = {e.v(outcome.reason)}")
        if outcome.output is not None:
            sets.append(f"{e.n('output')} = {e.v(json.dumps(outcome.output))}")
        update = "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes)
        cond = (
            f"{e.n('lease_owner')} = {e.v(owner)} AND "
            f"{e.n(c.ATTR_STATUS)} = {e.v(RunStatus.RUNNING.value)}"
        )
        return conditional_update(
            self._db,
            table=self._table,
            key=self._key(run.job_id, run.run_id),
            update=update,
            condition=cond,
            expr=e,
        )

    def extend_lease(self, run: RunRecord, owner: str, until_ms: int) -> bool:
        """Heartbeat: push the lease out while the target still runs."""
        e = Expr()
        return conditional_update(
            self._db,
            table=self._table,
            key=self._key(run.job_id, run.run_id),
            update=f"SET {e.n('lease_expires_at')} = {e.v(until_ms)}",
            condition=f"{e.n('lease_owner')} = {e.v(owner)} AND "
            f"{e.n(c.ATTR_STATUS)} = {e.v(RunStatus.RUNNING.value)}",
            expr=e,
        )

    def delete_orphan(self, run: RunRecord, owner: str) -> None:
        """Remove a run claimed for a job that does not exist (a create that lost)."""
        e = Expr()
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=self._key(run.job_id, run.run_id),
                ConditionExpression=f"{e.n('lease_owner')} = {e.v(owner)}",
                **e.kwargs(),
            )
        except ClientError as err:
            if not is_conditional_failure(err):
                raise

    def put_queued(
        self,
        *,
        job_id: str,
        run_id: str,
        tenant_id: str,
        scheduled_for_ms: int,
        trigger: RunTrigger,
        priority: str,
        now_ms: int,
    ) -> RunRecord:
        """Record a run that was just sent (manual or dependency trigger). If the worker was
        faster, its item stands and is returned."""
        e = Expr()
        item = {
            c.RUNS_PK: {"S": job_id},
            c.RUNS_SK: {"S": run_id},
            c.ATTR_TENANT_ID: {"S": tenant_id},
            c.ATTR_SCHEDULED_FOR: {"N": str(scheduled_for_ms)},
            "trigger": {"S": trigger.value},
            c.ATTR_STATUS: {"S": RunStatus.QUEUED.value},
            "priority": {"S": priority},
            "created_at": {"N": str(now_ms)},
            "updated_at": {"N": str(now_ms)},
            "retry_gen": {"N": "0"},
            "attempt_count": {"N": "0"},
            "budget_used": {"N": "0"},
            "attempts": {"L": []},
            c.ATTR_EXPIRES_AT: {"N": str(now_ms // 1000 + self._retention_s)},
        }
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,  # type: ignore[arg-type]
                ConditionExpression=f"attribute_not_exists({e.n(c.RUNS_PK)})",
                **e.kwargs(),
            )
        except ClientError as err:
            if not is_conditional_failure(err):
                raise
            existing = self.get(job_id, run_id)
            if existing is not None:
                return existing
            raise
        return run_from_item(item)

    def mark_requeued(self, run: RunRecord, new_gen: int, now_ms: int) -> bool:
        """After a retry message was sent: a failed/dead run becomes queued with a fresh
        attempt budget. False when the worker already took it (or it changed)."""
        e = Expr()
        return conditional_update(
            self._db,
            table=self._table,
            key=self._key(run.job_id, run.run_id),
            update=f"SET {e.n(c.ATTR_STATUS)} = {e.v(RunStatus.QUEUED.value)}, "
            f"{e.n('trigger')} = {e.v(RunTrigger.RETRY.value)}, "
            f"{e.n('retry_gen')} = {e.v(new_gen)}, {e.n('updated_at')} = {e.v(now_ms)}, "
            f"{e.n(c.ATTR_ACTIVITY_TENANT)} = {e.v(keys.activity_key_of(run))}, "
            f"{e.n(c.ATTR_ACTIVITY_AT)} = {e.v(now_ms)} "
            f"REMOVE {e.n(c.ATTR_DEAD_TENANT)}, {e.n('finished_at')}",
            condition=f"{e.n(c.ATTR_STATUS)} = {e.v(run.status.value)} AND "
            f"{e.n('retry_gen')} = {e.v(run.retry_gen)}",
            expr=e,
        )
