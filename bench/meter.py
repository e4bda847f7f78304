"""Counts what AWS would bill for the calls a boto3 client makes, through botocore's event hooks.

moto reports ConsumedCapacity as 1.0 whatever the item, so the meter works the units out itself
(bench/billing.py): before a DynamoDB write it reads the item(s) the write touches with a
separate, unmetered "shadow" client, after the write it reads them again, and bills the larger
image, every GSI whose entry changes, and the transaction factor. Reads bill the sizes returned.
SQS calls bill one request per 64 KB chunk of payload. Each charge is labelled with the phase
(set by the caller: tick, worker, api, esm) and the project function that made the call."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import billing

ROOT = Path(__file__).resolve().parents[1]
SHARED = str(ROOT / "shared")
SERVICES = str(ROOT / "shared" / "services")
STORAGE = str(ROOT / "shared" / "storage")

WRITE_OPS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)
FREE_OPS = frozenset(
    {"DescribeTable", "CreateTable", "UpdateTimeToLive", "ListTables", "DescribeTimeToLive"}
)
SQS_PAYLOAD_OPS = frozenset({"SendMessage", "SendMessageBatch", "ReceiveMessage"})


@dataclass(frozen=True)
class Charge:
    """One billed quantity of one AWS request."""

    phase: str
    service: str  # dynamodb | sqs
    operation: str
    label: str  # the project function that made the call (and its service-level caller)
    target: str  # table, table/index or queue name
    kind: str  # write | read | gsi-write | request
    units: float
    items: int = 0  # items read, or messages carried
    size: int = 0  # bytes billed on
    call: int = 0  # which request it belongs to (one request may bill several charges)


@dataclass
class _Schema:
    keys: list[str]
    indexes: dict[str, list[str]]
    # Attributes each index holds: None for projection ALL.
    projected: dict[str, list[str] | None] = field(default_factory=dict)


@dataclass
class Meter:
    """Attach to clients with `attach`; read `charges`. `phase` is set by the caller."""

    shadow: Any  # an unmetered DynamoDB client on the same endpoint
    phase: str = "setup"
    charges: list[Charge] = field(default_factory=list)
    # One entry per metered request: "<service>:<operation>".
    requests: list[str] = field(default_factory=list)
    enabled: bool = True
    # CPU seconds spent inside the meter's own hooks (shadow reads included), per thread.
    cpu_seconds: float = 0.0
    _calls: int = 0
    _schemas: dict[str, _Schema] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)

    # ---- wiring -------------------------------------------------------------------------

    def attach(self, client: Any) -> None:
        """Meter every call of a DynamoDB or SQS client."""
        service = client.meta.service_model.service_name
        events = client.meta.events
        events.register(f"before-parameter-build.{service}", self._timed(self._before))
        events.register(f"after-call.{service}", self._timed(self._after))

    @contextmanager
    def in_phase(self, phase: str) -> Iterator[None]:
        """Label every charge made inside the block with `phase`."""
        previous, self.phase = self.phase, phase
        try:
            yield
        finally:
            self.phase = previous

    def inside_hook(self) -> bool:
        """True while this thread runs a meter hook (its shadow calls are not the project's)."""
        return bool(getattr(self._local, "depth", 0))

    def _timed(self, hook: Callable[..., None]) -> Callable[..., None]:
        def wrapper(**kwargs: Any) -> None:
            if not self.enabled:
                return
            self._local.depth = getattr(self._local, "depth", 0) + 1
            start = time.thread_time()
            try:
                hook(**kwargs)
            finally:
                spent = time.thread_time() - start
                self._local.depth -= 1
                with self._lock:
                    self.cpu_seconds += spent

        return wrapper

    def _add(self, charge: Charge) -> None:
        with self._lock:
            self.charges.append(charge)

    # ---- labels -------------------------------------------------------------------------

    @staticmethod
    def caller_label() -> str:
        """`Store.method <- Service.method`: the innermost storage/queue function on the stack
        and the service-level function that called it."""
        frame = sys._getframe(1)
        inner: str | None = None
        outer: str | None = None
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(SHARED) and not filename.endswith("expr.py"):
                name = frame.f_code.co_qualname
                if inner is None:
                    inner = name
                elif filename.startswith(SERVICES) and not name.startswith("RunQueue"):
                    outer = name
                    break
            frame = frame.f_back  # type: ignore[assignment]
        if inner is None:
            return ""
        return f"{inner} <- {outer}" if outer and outer != inner else inner

    # ---- DynamoDB -----------------------------------------------------------------------

    def _schema(self, table: str) -> _Schema:
        if table not in self._schemas:
            desc = self.shadow.describe_table(TableName=table)["Table"]
            keys = [k["AttributeName"] for k in desc["KeySchema"]]
            indexes = {
                gsi["IndexName"]: [k["AttributeName"] for k in gsi["KeySchema"]]
                for gsi in desc.get("GlobalSecondaryIndexes", [])
            }
            projected: dict[str, list[str] | None] = {}
            for gsi in desc.get("GlobalSecondaryIndexes", []):
                projection = gsi.get("Projection", {})
                kind = projection.get("ProjectionType", "ALL")
                index_keys = [k["AttributeName"] for k in gsi["KeySchema"]]
                projected[gsi["IndexName"]] = (
                    None
                    if kind == "ALL"
                    else [*keys, *index_keys, *projection.get("NonKeyAttributes", [])]
                )
            self._schemas[table] = _Schema(keys, indexes, projected)
        return self._schemas[table]

    def _key_of(self, table: str, item: dict[str, Any]) -> dict[str, Any]:
        return {k: item[k] for k in self._schema(table).keys}

    def _read_item(self, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        item = self.shadow.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        return dict(item) if item else None

    def _write_targets(self, op: str, params: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """(table, key) of every item a write request touches."""
        if op == "PutItem":
            return [(params["TableName"], self._key_of(params["TableName"], params["Item"]))]
        if op in ("UpdateItem", "DeleteItem"):
            return [(params["TableName"], dict(params["Key"]))]
        out: list[tuple[str, dict[str, Any]]] = []
        if op == "BatchWriteItem":
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        out.append((table, self._key_of(table, request["PutRequest"]["Item"])))
                    else:
                        out.append((table, dict(request["DeleteRequest"]["Key"])))
            return out
        for entry in params["TransactItems"]:
            ((_action, body),) = entry.items()
            table = body["TableName"]
            key = body["Key"] if "Key" in body else self._key_of(table, body["Item"])
            out.append((table, dict(key)))
        return out

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        op = model.name
        if op in FREE_OPS:
            return
        with self._lock:
            self._calls += 1
            call = self._calls
        info: dict[str, Any] = {
            "call": call,
            "op": op,
            "params": params,
            "phase": self.phase,
            "label": self.caller_label() or op,
            "service": model.service_model.service_name,
        }
        if op in WRITE_OPS:
            targets = self._write_targets(op, params)
            info["targets"] = targets
            info["before"] = [self._read_item(t, k) for t, k in targets]
        context["bench_meter"] = info

    def _after(
        self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        info = context.pop("bench_meter", None)
        if info is None:
            return
        ok = http_response.status_code < 300
        with self._lock:
            self.requests.append(f"{info['service']}:{info['op']}")
        if info["service"] == "sqs":
            self._bill_sqs(info, parsed)
        elif info["op"] in WRITE_OPS:
            self._bill_write(info, ok)
        else:
            self._bill_read(info, parsed)

    def _charge(self, info: dict[str, Any], **kwargs: Any) -> None:
        self._add(
            Charge(
                phase=info["phase"],
                service=info["service"],
                operation=info["op"],
                label=info["label"],
                call=info["call"],
                **kwargs,
            )
        )

    def _bill_write(self, info: dict[str, Any], ok: bool) -> None:
        op = info["op"]
        transactional = op == "TransactWriteItems"
        targets = info["targets"]
        befores = info["before"]
        afters = [self._read_item(t, k) for t, k in targets] if ok else befores
        for (table, _key), before, after in zip(targets, befores, afters, strict=True):
            units = billing.item_write_units(before, after, transactional=transactional)
            size = max(billing.item_size(before), billing.item_size(after))
            self._charge(info, target=table, kind="write", units=units, items=1, size=size)
            if not ok:
                continue  # a failed condition writes no index entry
            for index, keys in self._schema(table).indexes.items():
                projected = self._schema(table).projected.get(index)
                for units_ in billing.gsi_writes(before, after, keys, projected):
                    self._charge(
                        info,
                        target=f"{table}/{index}",
                        kind="gsi-write",
                        units=units_,
                        items=1,
                        size=billing.item_size(after or before),
                    )

    def _bill_read(self, info: dict[str, Any], parsed: dict[str, Any]) -> None:
        op, params = info["op"], info["params"]
        if op == "GetItem":
            size = billing.item_size(parsed.get("Item"))
            consistent = bool(params.get("ConsistentRead", False))
            units = billing.read_units(size, consistent=consistent)
            self._charge(
                info,
                target=params["TableName"],
                kind="read",
                units=units,
                items=1 if parsed.get("Item") else 0,
                size=size,
            )
        elif op in ("Query", "Scan"):
            items = parsed.get("Items")
            if items is None:  # Select=COUNT: the evaluated items are billed all the same
                shadow_params = {k: v for k, v in params.items() if k != "Select"}
                items = getattr(self.shadow, op.lower())(**shadow_params).get("Items", [])
            size = sum(billing.item_size(i) for i in items)
            index = params.get("IndexName")
            consistent = bool(params.get("ConsistentRead", False)) and index is None
            units = billing.read_units(size, consistent=consistent)
            target = f"{params['TableName']}/{index}" if index else params["TableName"]
            self._charge(info, target=target, kind="read", units=units, items=len(items), size=size)
        elif op in ("BatchGetItem", "TransactGetItems"):
            transactional = op == "TransactGetItems"
            if transactional:
                found = [r.get("Item") for r in parsed.get("Responses", [])]
                tables = [e["Get"]["TableName"] for e in params["TransactItems"]]
                pairs = list(zip(tables, found, strict=False))
            else:
                pairs = [(t, i) for t, items in parsed.get("Responses", {}).items() for i in items]
            for table, item in pairs:
                consistent = bool(
                    params.get("RequestItems", {}).get(table, {}).get("ConsistentRead")
                )
                size = billing.item_size(item)
                units = billing.read_units(size, consistent=consistent, transactional=transactional)
                self._charge(info, target=table, kind="read", units=units, items=1, size=size)
        else:
            self._charge(info, target=params.get("TableName", ""), kind="request", units=0.0)

    # ---- SQS ----------------------------------------------------------------------------

    def _bill_sqs(self, info: dict[str, Any], parsed: dict[str, Any]) -> None:
        op, params = info["op"], info["params"]
        queue = str(params.get("QueueUrl", "")).rstrip("/").rsplit("/", 1)[-1]
        messages = 0
        size = 0
        if op == "SendMessage":
            messages = 1
            size = billing.sqs_message_bytes(params["MessageBody"], params.get("MessageAttributes"))
        elif op == "SendMessageBatch":
            messages = len(params["Entries"])
            size = sum(
                billing.sqs_message_bytes(e["MessageBody"], e.get("MessageAttributes"))
                for e in params["Entries"]
            )
        elif op == "ReceiveMessage":
            received = parsed.get("Messages") or []
            messages = len(received)
            size = sum(
                billing.sqs_message_bytes(m["Body"], m.get("MessageAttributes")) for m in received
            )
        elif op in ("DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
            messages = len(params.get("Entries", []))
        units = billing.sqs_requests(size) if op in SQS_PAYLOAD_OPS else 1
        self._charge(
            info, target=queue, kind="request", units=float(units), items=messages, size=size
        )
