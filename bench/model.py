"""Part 5: sustained and burst executions per second on AWS, by model, from the measured CPU and
request counts, the deployment's settings (infra/config.py, the `prod` environment) and the AWS
limits below (docs/scale.md explains each line).

Nothing here is measured on AWS: per-request latencies and the event source mapping's scaling
are assumptions, written down so they can be checked and changed."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench import prices
from infra.config import EnvironmentConfig, load_config
from shared.constants import ACTIVITY_SHARDS
from shared.services.ticker import DRAIN_THREADS, TICK_THREADS

BURST_JOBS = 1_000_000
BURST_LIMIT_SECONDS = 60
# The queue a job lands on unless it asks otherwise.
DEFAULT_PRIORITY = "medium"


@dataclass(frozen=True)
class Assumptions:
    """AWS figures the model rests on (limits as documented; latencies assumed)."""

    ddb_rtt_ms: float = prices.AWS_ROUND_TRIP_MS  # one DynamoDB request from Lambda, p50
    sqs_send_rtt_ms: float = 10.0  # one SQS SendMessageBatch from Lambda, p50
    tick_threads: int = TICK_THREADS  # the tick's shard pool (shared/services/ticker.py)
    dispatch_threads: int = DRAIN_THREADS  # one dispatch invocation's commit pool
    # SQS event source mapping, standard mode: 5 concurrent batches at first, up to 300 more a
    # minute, at most 1,250 (AWS Lambda docs, "Configuring scaling behavior for SQS").
    esm_max_concurrency: int = 1250
    esm_start_concurrency: int = 5
    esm_ramp_per_minute: int = 300
    # Provisioned mode: each event poller runs up to 10 concurrent invocations; pollers scale
    # by up to 1,000 concurrent executions a minute (AWS News Blog, November 2025).
    invokes_per_poller: int = 10
    provisioned_ramp_per_minute: int = 1000
    account_concurrency: int = 1000  # default Lambda concurrency per account and region
    partition_wcu: int = 1000  # writes/s one partition key takes (base table or GSI)
    # On-demand write quota of one table, and of each of its GSIs (default, adjustable). A
    # table serves double its previous peak at once: for a burst from quiet, its warm
    # throughput must be set to this ahead (a one-time, billed setting; not in the stack).
    table_write_units: int = 40_000


@dataclass(frozen=True)
class Deployment:
    """What the model needs of one environment's settings."""

    name: str
    shards: int
    shards_per_range: int
    tick_memory_mb: int
    api_memory_mb: int
    tick_budget_s: float
    dispatch_memory_mb: int
    worker_memory_mb: int
    batch_size: int
    max_concurrency: int | None  # standard mode's ceiling (None in provisioned mode)
    min_pollers: int | None  # provisioned mode (None in standard mode)
    max_pollers: int | None

    @classmethod
    def from_config(cls, cfg: EnvironmentConfig, priority: str = DEFAULT_PRIORITY) -> Deployment:
        """The settings of `cfg` for jobs of `priority`."""
        queue = cfg.queue(priority)
        return cls(
            name=cfg.name,
            shards=cfg.shards,
            shards_per_range=cfg.dispatch_shards_per_range,
            tick_memory_mb=cfg.tick_memory_mb,
            api_memory_mb=cfg.api_memory_mb,
            tick_budget_s=cfg.tick_budget_seconds,
            dispatch_memory_mb=cfg.dispatch_memory_mb,
            worker_memory_mb=cfg.worker_memory_mb,
            batch_size=queue.batch_size,
            max_concurrency=queue.max_concurrency,
            min_pollers=queue.min_pollers,
            max_pollers=queue.max_pollers,
        )

    @property
    def provisioned(self) -> bool:
        """Whether the queue's event source mapping runs in provisioned mode."""
        return self.min_pollers is not None


def deployed(env: str = "prod") -> Deployment:
    """The deployment the figures are for: infra/config.py's environment `env`."""
    return Deployment.from_config(load_config(env))


def vcpu(memory_mb: int) -> float:
    """Lambda's CPU share at a memory size (1,769 MB = one vCPU; one Python process uses one)."""
    return min(1.0, memory_mb / prices.LAMBDA_MB_PER_VCPU)


def dispatch_rate(
    cpu_ms: float, memory_mb: int, threads: int, a: Assumptions, sends_per_job: float = 1.0
) -> float:
    """Jobs one invocation dispatches per second (a send and a conditional commit each):
    bounded by CPU (one interpreter) and by the threads waiting on AWS."""
    share = vcpu(memory_mb)
    cpu_bound = 1000 * share / cpu_ms
    wait = sends_per_job * a.sqs_send_rtt_ms + a.ddb_rtt_ms + cpu_ms / share
    return min(cpu_bound, threads * 1000 / wait)


def batch_ms(
    records: float, cpu_ms: float, requests: float, hold_ms: float, memory_mb: int, rtt_ms: float
) -> float:
    """Billed time of one worker invocation of `records` records run side by side (the
    targets' own time not included): the hold (records of one batch arrive together and wait
    together), then the longer of their CPU, one after another on the function's vCPU share,
    and one record's CPU plus its AWS round trips (the others wait meanwhile)."""
    cpu = cpu_ms / vcpu(memory_mb)
    return hold_ms + max(records * cpu, cpu + requests * rtt_ms)


def worker_concurrency(d: Deployment, a: Assumptions, t: float) -> float:
    """Concurrent worker invocations the queue's event source mapping runs `t` seconds into a
    backlog (within the account's concurrency)."""
    if d.provisioned:
        assert d.min_pollers is not None and d.max_pollers is not None
        start = d.min_pollers * a.invokes_per_poller
        ceiling = d.max_pollers * a.invokes_per_poller
        ramp = a.provisioned_ramp_per_minute
    else:
        start = a.esm_start_concurrency
        ceiling = min(d.max_concurrency or a.esm_max_concurrency, a.esm_max_concurrency)
        ramp = a.esm_ramp_per_minute
    return min(start + ramp * t / 60, ceiling, a.account_concurrency)


def drain_seconds(
    jobs: int,
    per_invocation_per_s: float,
    d: Deployment,
    a: Assumptions,
    cap_per_s: float = math.inf,
) -> float:
    """Seconds for the mapping to run `jobs` executions that all became visible at once, at
    most `cap_per_s` a second (what the tables take)."""
    done = 0.0
    t = 0
    while done < jobs and t < 86_400:
        done += min(worker_concurrency(d, a, t) * per_invocation_per_s, cap_per_s)
        t += 1
    return float(t)


@dataclass
class ScaleModel:
    """Figures for one deployment."""

    deployment: dict[str, Any]
    dispatch_cpu_ms: float
    worker_cpu_ms: float
    worker_requests: float
    hold_ms: float
    worker_batch_ms: float
    limits: dict[str, float] = field(default_factory=dict)  # executions/s each part allows
    raised_by: dict[str, str] = field(default_factory=dict)  # the setting that raises each
    first_to_break: str = ""
    sustained: float = 0.0
    burst: dict[str, float] = field(default_factory=dict)
    burst_met: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def model(
    d: Deployment,
    *,
    dispatch_cpu_ms: float,
    worker_cpu_ms: float,
    worker_requests: float,
    hold_ms: float,
    send_cpu_ms: float = 0.0,
    a: Assumptions | None = None,
) -> ScaleModel:
    """Every limit in executions per second for deployment `d`. `send_cpu_ms`: the client-side
    CPU of one SQS send, which sending ten jobs' messages per request saves nine times in ten.
    `hold_ms`: the worker's mean early hold (measured: part 2)."""
    a = a or Assumptions()
    per_minute = d.tick_budget_s / 60  # the share of each minute a tick may work
    invocations = math.ceil(d.shards / d.shards_per_range)
    batched_cpu = max(0.1, dispatch_cpu_ms - 0.9 * send_cpu_ms)
    unit_rate = dispatch_rate(
        batched_cpu, d.dispatch_memory_mb, a.dispatch_threads, a, sends_per_job=0.1
    )
    tick_rate = dispatch_rate(batched_cpu, d.tick_memory_mb, a.tick_threads, a, 0.1)
    worker_batch = batch_ms(
        d.batch_size, worker_cpu_ms, worker_requests, hold_ms, d.worker_memory_mb, a.ddb_rtt_ms
    )
    per_invocation = d.batch_size * 1000 / worker_batch
    ceiling = worker_concurrency(d, a, 86_400)
    quota = a.table_write_units
    mode = (
        f"provisioned, {d.min_pollers}-{d.max_pollers} pollers"
        if d.provisioned
        else f"max concurrency {d.max_concurrency}"
    )
    limits = {
        f"dispatch fan-out: {invocations} invocations, sends 10 to a request": (
            invocations * unit_rate * per_minute
        ),
        # Every commit moves the job's due-index entry to another minute's bucket (delete +
        # put); in the worst case every job lands in the same minute's SHARDS keys.
        f"due-index GSI keys: one minute's {d.shards} shard keys": d.shards * a.partition_wcu,
        # One tenant's activity-index keys take every finish of that tenant.
        f"activity-index GSI keys: one tenant's {ACTIVITY_SHARDS} keys": float(
            a.partition_wcu * ACTIVITY_SHARDS
        ),
        f"worker: {ceiling:,.0f} concurrent ({mode}) x {d.batch_size} records": (
            ceiling * per_invocation
        ),
        # Table quotas: a dispatch writes the jobs table once and the due index twice; a run
        # writes the runs table twice (claim, finish) and the activity index once.
        f"due-index GSI quota: {quota:,} write units/s, 2 per dispatch": quota / 2,
        f"runs table quota: {quota:,} write units/s, 2 per run": quota / 2,
    }
    raised_by = dict(
        zip(
            limits,
            [
                "shards (infra/config.py) or a faster dispatch",
                "shards (infra/config.py)",
                "ACTIVITY_SHARDS (shared/constants.py)",
                "queues.<priority>.max_concurrency or provisioned pollers, and the account's "
                "Lambda concurrency quota",
                "the table-level write quota (Service Quotas)",
                "the table-level write quota (Service Quotas)",
            ],
            strict=True,
        )
    )
    first = min(limits, key=lambda k: limits[k])
    # Midnight burst: BURST_JOBS due at 00:00:00. The ticks at 23:58 and 23:59 dispatch them
    # (two budgets); at midnight they all become visible and the workers drain the queue.
    window = 2 * d.tick_budget_s
    burst = {
        "dispatch_seconds": BURST_JOBS / (invocations * unit_rate),
        "dispatch_seconds_one_tick_no_fan_out": BURST_JOBS / tick_rate,
        "due_index_seconds": BURST_JOBS / min(d.shards * a.partition_wcu, a.table_write_units / 2),
        "dispatch_window_seconds": window,
        "drain_seconds": drain_seconds(
            BURST_JOBS, per_invocation, d, a, cap_per_s=a.table_write_units / 2
        ),
        "activity_index_seconds_one_tenant": BURST_JOBS / (a.partition_wcu * ACTIVITY_SHARDS),
    }
    burst_met = (
        burst["dispatch_seconds"] <= window
        and burst["due_index_seconds"] <= window
        and burst["drain_seconds"] <= BURST_LIMIT_SECONDS
        and burst["activity_index_seconds_one_tenant"] <= BURST_LIMIT_SECONDS
    )
    return ScaleModel(
        deployment=asdict(d),
        dispatch_cpu_ms=round(dispatch_cpu_ms, 3),
        worker_cpu_ms=round(worker_cpu_ms, 3),
        worker_requests=worker_requests,
        hold_ms=round(hold_ms, 1),
        worker_batch_ms=round(worker_batch, 1),
        limits={k: round(v) for k, v in limits.items()},
        raised_by=raised_by,
        first_to_break=first,
        sustained=round(limits[first]),
        burst={k: round(v, 1) for k, v in burst.items()},
        burst_met=burst_met,
    )


def with_shards(d: Deployment, shards: int) -> Deployment:
    """The same deployment with another SHARDS."""
    return replace(d, shards=shards)


def assumptions_dict(a: Assumptions | None = None) -> dict[str, Any]:
    """The assumptions, JSON-ready."""
    return asdict(a or Assumptions())
