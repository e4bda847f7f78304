"""Job repository: definition + state items, guards, quota, dependents, the due index, the tick
watermark. Every write that can race is conditional; every attribute name is aliased."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from shared import constants as c
from shared.models.job import JobDefinition, JobState, JobStatus, StoredJob
from shared.storage import keys
from shared.storage.codec import from_item, to_item
from shared.storage.errors import start_key_errors, transaction_failure
from shared.storage.expr import Expr, conditional_update
from shared.storage.items import (
    definition_from_item,
    definition_to_item,
    state_from_item,
    state_to_item,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

T = TypeVar("T")
LIVE_STATUSES = frozenset({JobStatus.ACTIVE, JobStatus.PAUSED})


@dataclass(frozen=True)
class CreateGuards:
    """What must be unique or counted when a job is created."""

    max_jobs: int
    idempotency_key: str | None = None
    request_hash: str | None = None
    idempotency_expires_at_s: int | None = None


class CreateConflict(Exception):
    """A create lost on one of its guards."""

    def __init__(self, what: str, upstream: str | None = None) -> None:
        super().__init__(what)
        self.what = what  # "name" | "idempotency" | "quota" | "dependency" | "exists"
        self.upstream = upstream


class VersionConflict(Exception):
    """A conditional write on the state item lost (version or status changed)."""


@dataclass(frozen=True)
class StatusChange:
    """The outcome of a status transition."""

    state: JobState
    previous: JobState


class JobStore:
    """DynamoDB access for jobs."""

    def __init__(self, client: DynamoDBClient, table: str, shards: int) -> None:
        self._db = client
        self._table = table
        self._shards = shards

    # ---- reads -------------------------------------------------------------------------

    def get(self, job_id: str, *, consistent: bool = True) -> StoredJob | None:
        """Definition and state of a job, in one query."""
        e = Expr()
        resp = self._db.query(
            TableName=self._table,
            KeyConditionExpression=f"{e.n(c.PK)} = {e.v(keys.job_pk(job_id))}",
            ConsistentRead=consistent,
            **e.kwargs(),
        )
        definition: JobDefinition | None = None
        state: JobState | None = None
        for item in resp.get("Items", []):
            sk = item[c.SK]["S"]
            if sk == c.SK_DEFINITION:
                definition = definition_from_item(dict(item))
            elif sk == c.SK_STATE:
                state = state_from_item(dict(item))
        if definition is None or state is None:
            return None
        return StoredJob(definition=definition, state=state)

    def get_state(self, job_id: str, *, consistent: bool = True) -> JobState | None:
        """Only the small state item."""
        resp = self._db.get_item(
            TableName=self._table,
            Key={c.PK: {"S": keys.job_pk(job_id)}, c.SK: {"S": c.SK_STATE}},
            ConsistentRead=consistent,
        )
        item = resp.get("Item")
        return state_from_item(dict(item)) if item else None

    def get_idempotency_guard(self, tenant_id: str, key: str) -> dict[str, Any] | None:
        """The remembered create for an Idempotency-Key, if any."""
        resp = self._db.get_item(
            TableName=self._table,
            Key={c.PK: {"S": keys.idempotency_guard_pk(tenant_id, key)}, c.SK: {"S": c.SK_GUARD}},
            ConsistentRead=True,
        )
        item = resp.get("Item")
        return from_item(dict(item)) if item else None

    def list_states(
        self, tenant_id: str, *, limit: int, start_key: dict[str, Any] | None
    ) -> tuple[list[JobState], dict[str, Any] | None]:
        """A tenant's jobs, newest first: one page of the (keys-only) tenant index, then the
        state items themselves by key."""
        e = Expr()
        kwargs: dict[str, Any] = {}
        if start_key:
            kwargs["ExclusiveStartKey"] = start_key
        with start_key_errors(start_key):
            resp = self._db.query(
                TableName=self._table,
                IndexName=c.TENANT_INDEX,
                KeyConditionExpression=f"{e.n(c.ATTR_TENANT_ID)} = {e.v(tenant_id)}",
                ScanIndexForward=False,
                Limit=limit,
                **e.kwargs(),
                **kwargs,
            )
        job_ids = [
            str(from_item(dict(i))[c.PK]).removeprefix(c.JOB_PREFIX) for i in resp.get("Items", [])
        ]
        found = {s.job_id: s for s in self._batch_get(job_ids, c.SK_STATE, state_from_item)}
        last = resp.get("LastEvaluatedKey")
        return [found[j] for j in job_ids if j in found], (dict(last) if last else None)

    def _batch_get(
        self, job_ids: list[str], sk: str, read: Callable[[dict[str, Any]], T]
    ) -> list[T]:
        """Items of several jobs by key (BatchGetItem, retried until nothing is unprocessed)."""
        out: list[T] = []
        for start in range(0, len(job_ids), 100):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": [
                        {c.PK: {"S": keys.job_pk(j)}, c.SK: {"S": sk}}
                        for j in job_ids[start : start + 100]
                    ]
                }
            }
            while request:
                resp = self._db.batch_get_item(RequestItems=request)
                out.extend(read(dict(i)) for i in resp.get("Responses", {}).get(self._table, []))
                request = dict(resp.get("UnprocessedKeys") or {})
        return out

    @staticmethod
    def tenant_index_key(state: JobState) -> dict[str, Any]:
        """The tenant-index key of a state item: a paging start key that resumes after it."""
        return {
            c.PK: {"S": keys.job_pk(state.job_id)},
            c.SK: {"S": c.SK_STATE},
            c.ATTR_TENANT_ID: {"S": state.tenant_id},
            c.ATTR_LIST_KEY: {"S": keys.list_key(state.created_at_ms, state.job_id)},
        }

    def get_definitions(self, job_ids: list[str]) -> dict[str, JobDefinition]:
        """Definitions of several jobs, by job id."""
        pairs = self._batch_get(
            job_ids,
            c.SK_DEFINITION,
            lambda item: (str(from_item(item)["job_id"]), definition_from_item(item)),
        )
        return dict(pairs)

    def dependents_of(self, upstream_job_id: str) -> list[str]:
        """Ids of the jobs that declared depends_on the upstream job."""
        e = Expr()
        out: list[str] = []
        kwargs: dict[str, Any] = {}
        while True:
            resp = self._db.query(
                TableName=self._table,
                KeyConditionExpression=f"{e.n(c.PK)} = {e.v(keys.dependents_pk(upstream_job_id))}",
                ConsistentRead=False,
                **e.kwargs(),
                **kwargs,
            )
            out.extend(str(from_item(dict(i))["job_id"]) for i in resp.get("Items", []))
            last = resp.get("LastEvaluatedKey")
            if not last:
                return out
            kwargs["ExclusiveStartKey"] = last

    def query_due(self, bucket: str, until_ms: int) -> Iterator[JobState]:
        """State items in one due-index partition whose next_fire_at is at or before until_ms."""
        e = Expr()
        cond = f"{e.n(c.ATTR_DUE_BUCKET)} = {e.v(bucket)} AND {e.n(c.ATTR_NEXT_FIRE_AT)} <= " + (
            e.v(until_ms)
        )
        kwargs: dict[str, Any] = {}
        while True:
            resp = self._db.query(
                TableName=self._table,
                IndexName=c.DUE_INDEX,
                KeyConditionExpression=cond,
                **e.kwargs(),
                **kwargs,
            )
            for item in resp.get("Items", []):
                yield state_from_item(dict(item))
            last = resp.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    # ---- writes ------------------------------------------------------------------------

    def create(
        self,
        definition: JobDefinition,
        state: JobState,
        guards: CreateGuards,
    ) -> None:
        """Write a new job with its name guard, quota count, idempotency guard and dependency
        edges in one transaction. Raises CreateConflict naming the guard that lost."""
        items: list[TransactWriteItemTypeDef] = []
        labels: list[tuple[str, str | None]] = []
        not_exists = Expr()
        not_exists_cond = f"attribute_not_exists({not_exists.n(c.PK)})"
        items.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": definition_to_item(state.job_id, state.tenant_id, definition),
                    "ConditionExpression": not_exists_cond,
                    "ExpressionAttributeNames": not_exists.names,
                }
            }
        )
        labels.append(("exists", None))
        items.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": state_to_item(state, self._shards),
                    "ConditionExpression": not_exists_cond,
                    "ExpressionAttributeNames": not_exists.names,
                }
            }
        )
        labels.append(("exists", None))
        items.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            c.PK: keys.name_guard_pk(state.tenant_id, state.name),
                            c.SK: c.SK_GUARD,
                            "job_id": state.job_id,
                        }
                    ),
                    "ConditionExpression": not_exists_cond,
                    "ExpressionAttributeNames": not_exists.names,
                }
            }
        )
        labels.append(("name", None))
        if state.status in LIVE_STATUSES:
            items.append(self._quota_item(state.tenant_id, 1, guards.max_jobs))
            labels.append(("quota", None))
        if guards.idempotency_key is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                c.PK: keys.idempotency_guard_pk(
                                    state.tenant_id, guards.idempotency_key
                                ),
                                c.SK: c.SK_GUARD,
                                "job_id": state.job_id,
                                "request_hash": guards.request_hash,
                                c.ATTR_EXPIRES_AT: guards.idempotency_expires_at_s,
                            }
                        ),
                        "ConditionExpression": not_exists_cond,
                        "ExpressionAttributeNames": not_exists.names,
                    }
                }
            )
            labels.append(("idempotency", None))
        for upstream in definition.depends_on:
            items.extend(self._dependency_items(state, upstream))
            labels += [("dependency", upstream), ("edge", None)]
        try:
            self._db.transact_write_items(TransactItems=items)
        except ClientError as err:
            failure = transaction_failure(err)
            for (what, upstream_id), reason in zip(labels, failure.reasons, strict=False):
                if reason == "ConditionalCheckFailed":
                    raise CreateConflict(what, upstream_id) from err
            raise

    def _state_put(self, state: JobState, previous: JobState) -> TransactWriteItemTypeDef:
        """Write the whole state item, guarded by what the caller read: the version, the status
        and the dependents count (which changes without a version bump)."""
        e = Expr()
        dependents = e.n("dependents")
        seen_dependents = (
            f"(attribute_not_exists({dependents}) OR {dependents} = {e.v(0)})"
            if previous.dependents == 0
            else f"{dependents} = {e.v(previous.dependents)}"
        )
        return {
            "Put": {
                "TableName": self._table,
                "Item": state_to_item(state, self._shards),
                "ConditionExpression": f"{e.n(c.ATTR_VERSION)} = {e.v(previous.version)} AND "
                f"{e.n(c.ATTR_STATUS)} = {e.v(previous.status.value)} AND {seen_dependents}",
                **e.kwargs(),  # type: ignore[typeddict-item]
            }
        }

    def _quota_item(
        self, tenant_id: str, delta: int, max_jobs: int | None = None
    ) -> TransactWriteItemTypeDef:
        """Count a tenant's live jobs up or down; counting up is refused at max_jobs."""
        q = Expr()
        live = q.n("live_jobs")
        update: dict[str, Any] = {
            "TableName": self._table,
            "Key": {c.PK: {"S": keys.quota_pk(tenant_id)}, c.SK: {"S": c.SK_QUOTA}},
            "UpdateExpression": f"ADD {live} {q.v(delta)}",
        }
        if max_jobs is not None:
            update["ConditionExpression"] = (
                f"attribute_not_exists({live}) OR {live} < {q.v(max_jobs)}"
            )
        update.update(q.kwargs())
        return {"Update": update}  # type: ignore[typeddict-item]

    def _dependency_items(self, state: JobState, upstream: str) -> list[TransactWriteItemTypeDef]:
        """Check the upstream job is the tenant's and not cancelled, count one more dependent on
        it (so its worker only looks for dependents when there are some), and record the edge.
        The count is not a client-visible change, so the upstream's version stays; full writes
        of the upstream's state are conditioned on the count they read instead."""
        d = Expr()
        return [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": {c.PK: {"S": keys.job_pk(upstream)}, c.SK: {"S": c.SK_STATE}},
                    "UpdateExpression": f"ADD {d.n('dependents')} {d.v(1)}",
                    "ConditionExpression": f"{d.n(c.ATTR_TENANT_ID)} = {d.v(state.tenant_id)}"
                    f" AND {d.n(c.ATTR_STATUS)} <> {d.v(JobStatus.CANCELLED.value)}",
                    **d.kwargs(),  # type: ignore[typeddict-item]
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(
                        {
                            c.PK: keys.dependents_pk(upstream),
                            c.SK: state.job_id,
                            "job_id": state.job_id,
                        }
                    ),
                }
            },
        ]

    def update_definition(
        self,
        definition: JobDefinition,
        state: JobState,
        previous: JobState,
        *,
        rename_from: str | None,
        dependencies_added: list[str] | None = None,
        dependencies_removed: list[str] | None = None,
        max_jobs: int | None = None,
    ) -> None:
        """Replace definition and state together, guarded by the version the caller read.
        A rename moves the name guard, and dependency edges follow depends_on, in the same
        transaction."""
        items: list[TransactWriteItemTypeDef] = []
        labels: list[str] = []
        for upstream in dependencies_added or []:
            items.extend(self._dependency_items(state, upstream))
            labels += ["dependency:" + upstream, "edge"]
        for upstream in dependencies_removed or []:
            r = Expr()
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": {c.PK: {"S": keys.job_pk(upstream)}, c.SK: {"S": c.SK_STATE}},
                        "UpdateExpression": f"ADD {r.n('dependents')} {r.v(-1)}",
                        "ConditionExpression": f"attribute_exists({r.n(c.PK)})",
                        **r.kwargs(),  # type: ignore[typeddict-item]
                    }
                }
            )
            items.append(
                {
                    "Delete": {
                        "TableName": self._table,
                        "Key": {
                            c.PK: {"S": keys.dependents_pk(upstream)},
                            c.SK: {"S": state.job_id},
                        },
                    }
                }
            )
            labels += ["edge", "edge"]
        items.append(
            {
                "Put": {
                    "TableName": self._table,
                    "Item": definition_to_item(state.job_id, state.tenant_id, definition),
                }
            }
        )
        labels.append("definition")
        items.append(self._state_put(state, previous))
        labels.append("version")
        if previous.status not in LIVE_STATUSES and state.status in LIVE_STATUSES:
            # A finished job made live again by a new schedule takes a quota slot back.
            items.append(self._quota_item(state.tenant_id, 1, max_jobs))
            labels.append("quota")
        if rename_from is not None:
            g = Expr()
            items.append(
                {
                    "Delete": {
                        "TableName": self._table,
                        "Key": {
                            c.PK: {"S": keys.name_guard_pk(state.tenant_id, rename_from)},
                            c.SK: {"S": c.SK_GUARD},
                        },
                        "ConditionExpression": f"{g.n('job_id')} = {g.v(state.job_id)}",
                        **g.kwargs(),  # type: ignore[typeddict-item]
                    }
                }
            )
            labels.append("version")
            ne = Expr()
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(
                            {
                                c.PK: keys.name_guard_pk(state.tenant_id, state.name),
                                c.SK: c.SK_GUARD,
                                "job_id": state.job_id,
                            }
                        ),
                        "ConditionExpression": f"attribute_not_exists({ne.n(c.PK)})",
                        "ExpressionAttributeNames": ne.names,
                    }
                }
            )
            labels.append("name")
        try:
            self._db.transact_write_items(TransactItems=items)
        except ClientError as err:
            failure = transaction_failure(err)
            for label, reason in zip(labels, failure.reasons, strict=False):
                if reason == "ConditionalCheckFailed":
                    if label in ("name", "quota"):
                        raise CreateConflict(label) from err
                    if label.startswith("dependency:"):
                        raise CreateConflict("dependency", label.split(":", 1)[1]) from err
                    raise VersionConflict() from err
            raise

    def change_status(self, state: JobState, previous: JobState) -> None:
        """Write a new state (status transition), guarded by the version read. Leaving the live
        statuses gives back the quota slot; cancelling frees the name."""
        items: list[TransactWriteItemTypeDef] = []
        items.append(self._state_put(state, previous))
        if previous.status in LIVE_STATUSES and state.status not in LIVE_STATUSES:
            items.append(self._quota_item(state.tenant_id, -1))
        if state.status is JobStatus.CANCELLED and previous.status is not JobStatus.CANCELLED:
            g = Expr()
            items.append(
                {
                    "Delete": {
                        "TableName": self._table,
                        "Key": {
                            c.PK: {"S": keys.name_guard_pk(state.tenant_id, state.name)},
                            c.SK: {"S": c.SK_GUARD},
                        },
                        "ConditionExpression": f"{g.n('job_id')} = {g.v(state.job_id)}",
                        **g.kwargs(),  # type: ignore[typeddict-item]
                    }
                }
            )
        try:
            self._db.transact_write_items(TransactItems=items)
        except ClientError as err:
            failure = transaction_failure(err)
            if failure.reasons and failure.reasons[0] == "ConditionalCheckFailed":
                raise VersionConflict() from err
            raise

    def commit_dispatch(
        self,
        job_id: str,
        *,
        seen_version: int,
        next_fire_at_ms: int | None,
        last_scheduled_ms: int | None,
        now_ms: int,
    ) -> bool:
        """Advance an active job's schedule state past what was just dispatched.
        Returns False when a concurrent writer got there first (the send may be duplicated,
        never lost: the worker absorbs duplicates)."""
        e = Expr()
        sets = [
            f"{e.n(c.ATTR_VERSION)} = {e.v(seen_version + 1)}",
            f"{e.n('updated_at')} = {e.v(now_ms)}",
        ]
        removes: list[str] = []
        if last_scheduled_ms is not None:
            sets.append(f"{e.n('last_scheduled')} = {e.v(last_scheduled_ms)}")
        if next_fire_at_ms is None:
            removes += [e.n(c.ATTR_NEXT_FIRE_AT), e.n(c.ATTR_DUE_BUCKET)]
        else:
            shard = keys.shard_of(job_id, self._shards)
            sets.append(f"{e.n(c.ATTR_NEXT_FIRE_AT)} = {e.v(next_fire_at_ms)}")
            sets.append(
                f"{e.n(c.ATTR_DUE_BUCKET)} = {e.v(keys.due_bucket(next_fire_at_ms, shard))}"
            )
        update = "SET " + ", ".join(sets)
        if removes:
            update += " REMOVE " + ", ".join(removes)
        cond = (
            f"{e.n(c.ATTR_STATUS)} = {e.v(JobStatus.ACTIVE.value)} AND "
            f"{e.n(c.ATTR_VERSION)} = {e.v(seen_version)}"
        )
        return conditional_update(
            self._db,
            table=self._table,
            key={c.PK: {"S": keys.job_pk(job_id)}, c.SK: {"S": c.SK_STATE}},
            update=update,
            condition=cond,
            expr=e,
        )

    def finish_one_shot(self, state: JobState, status: JobStatus, now_ms: int) -> bool:
        """Mark an exhausted job completed/failed after its last run; False if it changed."""
        new_state = state.model_copy(
            update={"status": status, "version": state.version + 1, "updated_at_ms": now_ms}
        )
        try:
            self.change_status(new_state, state)
        except VersionConflict:
            return False
        return True

    # ---- overlap slot --------------------------------------------------------------------

    def _slot_key(self, job_id: str) -> dict[str, Any]:
        return {c.PK: {"S": keys.job_pk(job_id)}, c.SK: {"S": c.SK_SLOT}}

    def _take_place(self, job_id: str, place: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        """Hold one named place of the slot item for a run until until_ms: free, expired, or
        already this run's."""
        e = Expr()
        holder, until = e.n(place), e.n(f"{place}_until")
        return conditional_update(
            self._db,
            table=self._table,
            key=self._slot_key(job_id),
            update=f"SET {holder} = {e.v(run_id)}, {until} = {e.v(until_ms)}",
            condition=f"attribute_not_exists({holder}) OR {until} < {e.v(now_ms)} OR "
            f"{holder} = {e.v(run_id)}",
            expr=e,
        )

    def _free_place(self, job_id: str, place: str, run_id: str) -> None:
        """Let go of a place if this run holds it (if not, someone else's hold stands)."""
        e = Expr()
        holder, until = e.n(place), e.n(f"{place}_until")
        conditional_update(
            self._db,
            table=self._table,
            key=self._slot_key(job_id),
            update=f"REMOVE {holder}, {until}",
            condition=f"{holder} = {e.v(run_id)}",
            expr=e,
        )

    def acquire_slot(self, job_id: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        """Take the job's single running slot (overlap skip/buffer_one)."""
        return self._take_place(job_id, "running", run_id, until_ms, now_ms)

    def release_slot(self, job_id: str, run_id: str) -> None:
        """Give the running slot back if this run holds it."""
        self._free_place(job_id, "running", run_id)

    def reserve_buffer(self, job_id: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        """Take the job's single waiting place (overlap buffer_one)."""
        return self._take_place(job_id, "buffered", run_id, until_ms, now_ms)

    def release_buffer(self, job_id: str, run_id: str) -> None:
        """Free the waiting place if this run holds it."""
        self._free_place(job_id, "buffered", run_id)

    # ---- tick watermark ------------------------------------------------------------------

    def get_watermark(self) -> int | None:
        """The first due-index minute (epoch ms) the tick has not emptied yet."""
        resp = self._db.get_item(
            TableName=self._table,
            Key={c.PK: {"S": c.TICK_PK}, c.SK: {"S": c.SK_WATERMARK}},
            ConsistentRead=True,
        )
        item = resp.get("Item")
        return int(from_item(dict(item))["minute"]) if item else None

    def advance_watermark(self, seen: int | None, minute_ms: int) -> bool:
        """Move the watermark forward from the value read; False if another tick moved it."""
        e = Expr()
        minute = e.n("minute")
        cond = f"attribute_not_exists({minute})" if seen is None else f"{minute} = {e.v(seen)}"
        return conditional_update(
            self._db,
            table=self._table,
            key={c.PK: {"S": c.TICK_PK}, c.SK: {"S": c.SK_WATERMARK}},
            update=f"SET {minute} = {e.v(minute_ms)}",
            condition=cond,
            expr=e,
        )
