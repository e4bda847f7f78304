"""Part 2 (and the worker half of part 4): AWS requests, billed units, Lambda time and log bytes
per execution, for a daily cron job, a `rate(1 minute)` job and a `now` job.

Each scenario runs Punctual in-process on moto through its real handlers (bench/world.py):
the EventBridge rule is a tick every minute at .5 s into the minute (the mean of a uniform
offset), the SQS event source mapping is a pump every second with the deployed batch size (the
medium queue's, from infra/config.py). Charges are split into:
- fixed: what the tick and the event source mapping spend whatever runs (watermark, due-index
  queries that find nothing, empty receives) - shown per tick / per month;
- per execution: everything else, divided by the runs that executed in the measured window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench import prices
from bench.meter import Charge
from bench.model import batch_ms, deployed, vcpu
from bench.world import World


def deployed_batch_size() -> int:
    """The medium queue's event source mapping batch size, as the stack deploys it."""
    from infra.config import load_config

    return load_config("prod").queues["medium"].batch_size


MINUTE = 60_000
TICK_OFFSET_MS = 500

# Jobs per scenario: enough for stable averages, few enough for the 10-minute budget.
DAILY_JOBS = 96
RATE_JOBS = 32
RATE_WINDOW_MINUTES = 4
NOW_JOBS = 48

FIXED_LABELS = ("JobStore.get_watermark", "JobStore.advance_watermark")


def is_fixed(charge: Charge) -> bool:
    """A charge the scheduler pays whatever runs: tick bookkeeping, queries and receives that
    find nothing."""
    inner = charge.label.split(" <- ")[0]
    if inner in FIXED_LABELS:
        return True
    if charge.operation == "Query" and charge.phase == "tick" and charge.items == 0:
        return True
    return charge.operation == "ReceiveMessage" and charge.items == 0


def line_name(charge: Charge) -> str:
    """`phase: Function [target]`, e.g. `worker: RunStore.finish [runs/activity-index]`."""
    inner = charge.label.split(" <- ")[0] or charge.operation
    target = charge.target.removeprefix("punctual-")
    return f"{charge.phase}: {inner} [{target}]"


@dataclass
class Scenario:
    """What one kind of job costs per execution."""

    name: str
    executions: int
    write_units: float
    read_units: float
    sqs_requests: float
    lambda_invocations: float
    api_gateway_requests: float
    log_bytes: float
    hold_ms_mean: float
    duration_ms: dict[str, float]
    gb_seconds: float
    cpu_ms: dict[str, float]
    aws_requests: dict[str, float]
    breakdown: list[dict[str, Any]]
    fixed_per_tick: dict[str, float]
    usd_per_million: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def summarize(
    name: str,
    world: World,
    executions: int,
    ticks: int,
    holds: list[int],
    tick_cpu_per_dispatch: dict[str, float] | None = None,
) -> Scenario:
    """Turn the meter's charges, the invocation counts and the CPU totals into per-execution
    figures (`tick_cpu_per_dispatch`: the tick's marginal CPU per dispatched job, ms, from
    part 3, since a tick's own CPU here is mostly its fixed walk over empty buckets)."""
    charges = world.meter.charges
    variable = [c for c in charges if not is_fixed(c)]
    fixed = [c for c in charges if is_fixed(c)]
    n = max(1, executions)

    lines: dict[str, dict[str, float]] = {}
    counted: set[int] = set()
    for c in variable:
        line = lines.setdefault(
            line_name(c),
            {"write_units": 0.0, "read_units": 0.0, "sqs_requests": 0.0, "requests": 0.0},
        )
        if c.kind in ("write", "gsi-write"):
            line["write_units"] += c.units
        elif c.kind == "read":
            line["read_units"] += c.units
        if c.service == "sqs":
            line["sqs_requests"] += c.units
        if c.call not in counted:
            counted.add(c.call)
            line["requests"] += 1
    breakdown = [
        {"line": key, **{k: round(v / n, 4) for k, v in value.items()}}
        for key, value in sorted(lines.items())
    ]
    write_units = sum(c.units for c in variable if c.kind in ("write", "gsi-write")) / n
    read_units = sum(c.units for c in variable if c.kind == "read") / n
    sqs = sum(c.units for c in variable if c.service == "sqs") / n

    # AWS requests each function makes per execution (for the modelled duration).
    requests: dict[str, float] = {"tick": 0.0, "worker": 0.0, "api": 0.0, "esm": 0.0}
    calls = {c.call: c.phase for c in variable}
    for phase in calls.values():
        requests[phase] = requests.get(phase, 0.0) + 1 / n

    counts = world.invocations.counts
    totals = world.cpu.totals
    cpu: dict[str, float] = {}
    for function in ("worker", "api"):
        t = totals.get(function)
        cpu[f"{function}_own"] = (t.own * 1000 / n) if t else 0.0
        cpu[f"{function}_botocore"] = (t.botocore * 1000 / n) if t else 0.0
        cpu[f"{function}_moto"] = (t.moto * 1000 / n) if t else 0.0
    per_dispatch = tick_cpu_per_dispatch or {"own": 0.0, "botocore": 0.0}
    commits = {c.call for c in variable if c.label.startswith("JobStore.commit_dispatch")}
    dispatches = len(commits) / n
    cpu["tick_own"] = per_dispatch["own"] * dispatches
    cpu["tick_botocore"] = per_dispatch["botocore"] * dispatches

    hold = sum(holds) / len(holds) if holds else 0.0
    # Modelled Lambda duration per execution: CPU stretched to the function's vCPU share and
    # one round trip per AWS request. A worker invocation runs its records side by side: it
    # lasts one batch's hold plus the longer of their CPU in turn and one record's CPU and round
    # trips (bench/model.py batch_ms), shared by its records. The tick works 8 shards at once.
    d = deployed()
    records = counts["worker"] and executions / counts["worker"]
    worker_cpu = cpu["worker_own"] + cpu["worker_botocore"]
    duration = {
        "worker": (
            batch_ms(
                records,
                worker_cpu,
                requests["worker"],
                hold,
                d.worker_memory_mb,
                prices.AWS_ROUND_TRIP_MS,
            )
            / records
            if records
            else 0.0
        ),
        "tick": (cpu["tick_own"] + cpu["tick_botocore"]) / vcpu(d.tick_memory_mb)
        + requests["tick"] * prices.AWS_ROUND_TRIP_MS / 8,
        "api": (cpu["api_own"] + cpu["api_botocore"]) / vcpu(d.api_memory_mb)
        + requests["api"] * prices.AWS_ROUND_TRIP_MS,
    }
    memory_gb = {
        "worker": d.worker_memory_mb / 1024,
        "tick": d.tick_memory_mb / 1024,
        "api": d.api_memory_mb / 1024,
    }
    gb_seconds = sum(duration[f] / 1000 * memory_gb[f] for f in duration)
    invocations = (counts["worker"] + counts["api"]) / n
    log_bytes = (
        world.logs.bytes_by_function.get("worker", 0) + world.logs.bytes_by_function.get("api", 0)
    ) / n + invocations * prices.LAMBDA_PLATFORM_LOG_BYTES
    api_gateway = counts["api"] / n

    fixed_per_tick = {
        "write_units": sum(c.units for c in fixed if c.kind == "write" and c.phase == "tick")
        / max(1, ticks),
        "read_units": sum(c.units for c in fixed if c.kind == "read") / max(1, ticks),
        "esm_empty_receives": sum(1 for c in fixed if c.operation == "ReceiveMessage")
        / max(1, ticks),
    }
    scenario = Scenario(
        name=name,
        executions=executions,
        write_units=round(write_units, 4),
        read_units=round(read_units, 4),
        sqs_requests=round(sqs, 4),
        lambda_invocations=round(invocations, 4),
        api_gateway_requests=round(api_gateway, 4),
        log_bytes=round(log_bytes, 1),
        hold_ms_mean=round(hold, 1),
        duration_ms={k: round(v, 2) for k, v in duration.items()},
        gb_seconds=round(gb_seconds, 6),
        cpu_ms={k: round(v, 3) for k, v in cpu.items()},
        aws_requests={k: round(v, 3) for k, v in requests.items()},
        breakdown=breakdown,
        fixed_per_tick={k: round(v, 3) for k, v in fixed_per_tick.items()},
    )
    scenario.usd_per_million = price_per_million(scenario)
    return scenario


def price_per_million(s: Scenario) -> dict[str, float]:
    """Dollars per million executions, by service, at the prices in bench/prices.py."""
    m = 1_000_000
    usd = {
        "dynamodb": m
        * (s.write_units * prices.DYNAMODB_WRITE_UNIT + s.read_units * prices.DYNAMODB_READ_UNIT),
        "sqs": m * s.sqs_requests * prices.SQS_REQUEST,
        "lambda": m
        * (
            s.lambda_invocations * prices.LAMBDA_REQUEST
            + s.gb_seconds * prices.LAMBDA_GB_SECOND_ARM
        ),
        "api_gateway": m * s.api_gateway_requests * prices.API_GATEWAY_REST_REQUEST,
        "logs": m * s.log_bytes / 1e9 * prices.CLOUDWATCH_LOGS_GB,
    }
    usd["total"] = sum(usd.values())
    return {k: round(v, 3) for k, v in usd.items()}


def _ticks(start: int, end: int) -> set[int]:
    first = start - start % MINUTE + TICK_OFFSET_MS
    return {t for t in range(first, end + 1, MINUTE) if t >= start}


def _begin_window(world: World) -> None:
    world.meter.enabled = True
    world.meter.charges.clear()
    world.meter.requests.clear()
    world.cpu.reset()
    world.logs.reset()
    world.clock.held_ms.clear()
    world.invocations.counts = {k: 0 for k in world.invocations.counts}


def daily_cron(day_ms: int, tick_cpu: dict[str, float] | None) -> Scenario:
    """DAILY_JOBS jobs `cron(0 9 * * *)`, created ten minutes before; the ticks around 09:00 and
    the runs at 09:00:00."""
    nine = day_ms + 9 * 3_600_000
    with World(
        batch_size=deployed_batch_size(), start_ms=nine - 10 * MINUTE + TICK_OFFSET_MS
    ) as world:
        world.meter.enabled = False
        for i in range(DAILY_JOBS):
            world.create_job(f"daily-{i:03d}", "cron(0 9 * * *)")
        # The tick of the minute before the window leaves its watermark, as in steady state.
        world.clock.set(nine - 4 * MINUTE + TICK_OFFSET_MS)
        world.tick()
        start = nine - 3 * MINUTE + TICK_OFFSET_MS
        world.clock.set(start)
        _begin_window(world)
        end = nine + 3_000
        ticks = _ticks(start, end)
        executed = world.run_until(end, tick_at=ticks)
        return summarize(
            "daily cron", world, executed, len(ticks), list(world.clock.held_ms), tick_cpu
        )


def rate_minute(day_ms: int, tick_cpu: dict[str, float] | None) -> Scenario:
    """RATE_JOBS jobs `rate(1 minute)` anchored on a whole minute; RATE_WINDOW_MINUTES minutes
    measured after the API's first dispatch has been overtaken by the ticks."""
    t0 = day_ms + 8 * 3_600_000
    with World(batch_size=deployed_batch_size(), start_ms=t0 + TICK_OFFSET_MS) as world:
        world.meter.enabled = False
        anchor = "2026-11-23T08:01:00Z"
        for i in range(RATE_JOBS):
            world.create_job(f"rate-{i:03d}", "rate(1 minute)", start_at=anchor)
        warm_end = t0 + 5 * MINUTE
        world.run_until(warm_end - 1_000, tick_at=_ticks(t0 + TICK_OFFSET_MS, warm_end))
        _begin_window(world)
        start = world.clock.now_ms()
        end = start + RATE_WINDOW_MINUTES * MINUTE - 1_000
        ticks = _ticks(start, end)
        executed = world.run_until(end, tick_at=ticks)
        return summarize(
            "rate(1 minute)", world, executed, len(ticks), list(world.clock.held_ms), tick_cpu
        )


def now_job(day_ms: int) -> Scenario:
    """NOW_JOBS jobs `now`: the API create (which dispatches), the run and the completion."""
    with World(
        batch_size=deployed_batch_size(), start_ms=day_ms + 10 * 3_600_000 + TICK_OFFSET_MS
    ) as world:
        _begin_window(world)
        executed = 0
        for i in range(NOW_JOBS):
            world.create_job(f"now-{i:03d}", "now")
            executed += world.pump()
        return summarize("now", world, executed, 0, list(world.clock.held_ms), None)
