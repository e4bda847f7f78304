"""Part 3: what one tick costs with 100 due jobs among 1,000 and among 100,000 jobs.

The jobs' state items (`state_to_item`, as the API would leave them) are written straight into
the table, not through the API: the 100 due ones with BatchWriteItem, the others loaded into the
emulator's table directly (100,000 BatchWriteItem round trips through moto take minutes). The
due ones sit in the next minute's buckets, the others in buckets beyond the horizon (one in ten
paused, outside the index). The watermark is where the previous tick left it (this minute), so
the tick walks the three minutes up to now + HORIZON.

Each size is ticked several times (the 100 due items and the watermark put back in between):
the first tick is metered for requests and units, the next runs as deployed for wall time, the
others run on one thread for CPU (median). On the small table one more tick with nothing due
gives the fixed part, so the CPU of one dispatch is (tick - empty tick) / 100."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.world import TENANT, World

DUE = 100
# Ticks per size: one metered (requests, units), WALL_TICKS - 1 timed as deployed (8 shard
# threads), CPU_TICKS on one thread for CPU (see _tick_threads).
WALL_TICKS = 2
CPU_TICKS = 3
# The tick with nothing due (for the per-dispatch CPU) is measured on tables up to this size.
EMPTY_TICK_MAX_TOTAL = 10_000
SEED_BATCH = 25


@dataclass
class TickCost:
    """One tick over `total` jobs, `DUE` of them due."""

    total: int
    dispatched: int
    requests: dict[str, int]
    requests_total: int
    write_units: float
    read_units: float
    sqs_requests: float
    own_cpu_ms: float
    botocore_cpu_ms: float
    moto_cpu_ms: float
    wall_ms: float
    seed_seconds: float
    # The same tick with nothing due (fixed walk over the buckets), for the per-dispatch CPU.
    empty_own_cpu_ms: float = 0.0
    empty_botocore_cpu_ms: float = 0.0
    samples: dict[str, list[float]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def _state_item(job_id: str, next_fire_at: int, now: int, paused: bool, shards: int) -> Any:
    from shared.models.job import JobState, JobStatus, MisfirePolicy, Priority
    from shared.storage.items import state_to_item

    # model_construct: the values are valid by construction and 100,000 validations are slow.
    state = JobState.model_construct(
        job_id=job_id,
        tenant_id=TENANT,
        name=f"bench-{job_id}",
        status=JobStatus.PAUSED if paused else JobStatus.ACTIVE,
        version=3,
        schedule_version=1,
        next_fire_at_ms=next_fire_at,
        schedule="cron(0 9 * * *)",
        timezone="UTC",
        anchor_ms=now - 86_400_000,
        priority=Priority.MEDIUM,
        misfire=MisfirePolicy.FIRE_ONCE,
        misfire_grace_seconds=60,
        timeout_seconds=300,
        created_at_ms=now - 86_400_000,
        updated_at_ms=now - 60_000,
        last_scheduled_ms=next_fire_at - 60_000,
    )
    return state_to_item(state, shards)


def _load_items(world: World, items: list[Any]) -> Any:
    """Bulk-load items straight into the emulator's table: the same items BatchWriteItem would
    store, without 100,000 round trips through botocore and moto's HTTP layer. Returns the
    emulator's table."""
    from moto.dynamodb.models import dynamodb_backends

    from local.environment import ACCOUNT_ID

    table = dynamodb_backends[ACCOUNT_ID]["us-east-1"].get_table(world.settings.jobs_table)
    for item in items:
        table.put_item(item)
    return table


def _put_items(world: World, items: list[Any]) -> None:
    db = world.clients.dynamodb
    for start in range(0, len(items), SEED_BATCH):
        request: dict[str, Any] = {
            world.settings.jobs_table: [
                {"PutRequest": {"Item": item}} for item in items[start : start + SEED_BATCH]
            ]
        }
        while request:
            resp = db.batch_write_item(RequestItems=request)
            request = dict(resp.get("UnprocessedItems") or {})


@contextmanager
def _tick_threads(threads: int | None) -> Iterator[None]:
    """Run the tick's shards on `threads` threads (None: as deployed). CPU is timed on one
    thread: with eight, threads queueing for the GIL behind moto's long scans burn CPU in
    wake-ups that grow with moto's time, an artefact of sharing the process with the
    emulator, which would make the project's CPU look as if it grew with the table."""
    from shared.services import ticker

    saved = ticker.TICK_THREADS
    if threads is not None:
        ticker.TICK_THREADS = threads
    try:
        yield
    finally:
        ticker.TICK_THREADS = saved


def _put_watermark(world: World, minute_ms: int) -> None:
    from shared import constants as c

    world.clients.dynamodb.put_item(
        TableName=world.settings.jobs_table,
        Item={c.PK: {"S": c.TICK_PK}, c.SK: {"S": c.SK_WATERMARK}, "minute": {"N": str(minute_ms)}},
    )


def measure(
    total: int, *, start_ms: int, shards: int = 16, keep: list[Any] | None = None
) -> TickCost:
    """Seed `total` jobs (DUE due), tick them, return the figures. `keep` receives the
    emulator's table, so the caller can hold it in memory while it measures a smaller table:
    both ticks then run in a process of the same size (a 100,000-item emulator table makes
    every instruction of the process slower through caches, the project's code included)."""
    import gc
    import time

    from shared.storage import keys

    now = start_ms
    minute = keys.minute_of(now)
    with World(start_ms=now, shards=shards) as world:
        world.meter.enabled = False
        seed_start = time.perf_counter()
        due = [
            _state_item(f"due{i:06d}", minute + 60_000 + (i * 599) % 60_000, now, False, shards)
            for i in range(DUE)
        ]
        rest = []
        for i in range(total - DUE):
            later = minute + 10 * 60_000 + (i % 1440) * 60_000 + (i * 7919) % 60_000
            rest.append(_state_item(f"job{i:07d}", later, now, i % 10 == 0, shards))
        table = _load_items(world, rest)
        if keep is not None:
            keep.append(table)
        seed_seconds = time.perf_counter() - seed_start
        # The emulator's table is now millions of objects in this process; on Lambda it lives
        # elsewhere. Keep the garbage collector from walking it during the measured tick.
        gc.collect()
        gc.freeze()
        samples: dict[str, list[float]] = {"own": [], "botocore": [], "moto": [], "wall": []}
        result: TickCost | None = None
        for attempt in range(WALL_TICKS + CPU_TICKS):
            metered = attempt == 0
            timing_cpu = attempt >= WALL_TICKS
            world.meter.enabled = False
            _put_items(world, due)
            _put_watermark(world, minute)
            world.clock.set(now + 30_500)
            world.meter.enabled = metered
            world.meter.charges.clear()
            world.meter.requests.clear()
            world.cpu.reset()
            with _tick_threads(1 if timing_cpu else None):
                report = world.tick()
            cpu = world.cpu.totals["tick"]
            if timing_cpu:
                samples["own"].append(cpu.own * 1000)
                samples["botocore"].append(cpu.botocore * 1000)
                samples["moto"].append(cpu.moto * 1000)
            elif not metered:
                samples["wall"].append(cpu.wall * 1000)
            if not metered:
                continue
            requests: dict[str, int] = {}
            for op in world.meter.requests:
                requests[op] = requests.get(op, 0) + 1
            charges = world.meter.charges
            result = TickCost(
                total=total,
                dispatched=int(report["jobs_dispatched"]),
                requests=requests,
                requests_total=sum(requests.values()),
                write_units=sum(c.units for c in charges if c.kind in ("write", "gsi-write")),
                read_units=sum(c.units for c in charges if c.kind == "read"),
                sqs_requests=sum(c.units for c in charges if c.service == "sqs"),
                own_cpu_ms=0.0,
                botocore_cpu_ms=0.0,
                moto_cpu_ms=0.0,
                wall_ms=0.0,
                seed_seconds=seed_seconds,
            )
        assert result is not None
        if total <= EMPTY_TICK_MAX_TOTAL:
            # Nothing due now (the due jobs moved to tomorrow): the tick's fixed part.
            world.meter.enabled = False
            _put_watermark(world, minute)
            world.cpu.reset()
            with _tick_threads(1):
                world.tick()
            empty = world.cpu.totals["tick"]
            result.empty_own_cpu_ms = empty.own * 1000
            result.empty_botocore_cpu_ms = empty.botocore * 1000
        result.own_cpu_ms = statistics.median(samples["own"])
        result.botocore_cpu_ms = statistics.median(samples["botocore"])
        result.moto_cpu_ms = statistics.median(samples["moto"])
        result.wall_ms = statistics.median(samples["wall"])
        result.samples = samples
    gc.unfreeze()
    return result
