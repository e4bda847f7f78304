"""Part 5: sustained and burst executions per second on AWS, by model, from the measured CPU and
request counts and the AWS limits below (docs/scale.md explains each line).

Nothing here is measured on AWS: per-request latencies and the event source mapping's scaling
are assumptions, written down so they can be checked and changed."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench import prices

BURST_JOBS = 1_000_000


@dataclass(frozen=True)
class Assumptions:
    """AWS figures the model rests on (limits as documented; latencies assumed)."""

    ddb_rtt_ms: float = prices.AWS_ROUND_TRIP_MS  # one DynamoDB request from Lambda, p50
    sqs_send_rtt_ms: float = 10.0  # one SQS SendMessageBatch from Lambda, p50
    tick_memory_mb: int = prices.TICK_MEMORY_MB  # as deployed (infra/config.py)
    tick_threads: int = 8  # the tick's shard pool (shared/services/ticker.py)
    tick_budget_s: float = 50.0  # tick timeout 60 s - 10 s margin (infra/config.py)
    dispatch_memory_mb: int = 1769  # one full vCPU for each fan-out dispatch invocation
    dispatch_threads: int = 8
    worker_memory_mb: int = prices.WORKER_MEMORY_MB
    worker_max_concurrency: int = 50  # medium queue's event source mapping (infra/config.py)
    worker_batch_size: int = 10  # medium queue (infra/config.py); a batch's records run side
    # by side in one invocation (functions/worker/handler.py)
    activity_shards: int = 16  # a tenant's activity-index keys (shared/constants.py)
    esm_max_concurrency: int = 1250  # SQS event source mapping ceiling (AWS Lambda docs)
    esm_start_concurrency: int = 5  # an SQS mapping starts with 5 concurrent batches ...
    esm_ramp_per_minute: int = 300  # ... and adds up to 300 a minute (AWS Lambda docs)
    account_concurrency: int = 1000  # default Lambda concurrency per account and region
    partition_wcu: int = 1000  # writes/s one partition key takes (base table or GSI)
    hold_ms: float = 500.0  # the worker's early hold: SQS delays are whole seconds


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


def worker_duration_ms(cpu_ms: float, requests: float, hold_ms: float, a: Assumptions) -> float:
    """Billed time of one execution on the worker (the target's own time not included)."""
    return hold_ms + cpu_ms / vcpu(a.worker_memory_mb) + requests * a.ddb_rtt_ms


def drain_seconds(
    jobs: int,
    duration_ms: float,
    ceiling: int,
    mappings: int,
    a: Assumptions,
    account_concurrency: int | None = None,
) -> float:
    """Seconds for `mappings` SQS event source mappings (one per queue) to run `jobs`
    executions that all become visible at once: each mapping starts at 5 concurrent batches and
    adds 300 a minute up to `ceiling`, all of them within the account's concurrency; each
    concurrent batch runs batch-size x 1000 / duration_ms executions a second (its records run
    side by side)."""
    account = account_concurrency or a.account_concurrency
    done = 0.0
    t = 0
    while done < jobs and t < 86_400:
        per_mapping = min(ceiling, a.esm_start_concurrency + a.esm_ramp_per_minute * t / 60)
        concurrency = min(per_mapping * mappings, account)
        done += concurrency * a.worker_batch_size * 1000 / duration_ms
        t += 1
    return float(t)


@dataclass
class ScaleModel:
    """Figures for one SHARDS setting."""

    shards: int
    dispatch_cpu_ms: float
    worker_cpu_ms: float
    worker_requests: float
    limits: dict[str, float] = field(default_factory=dict)  # executions/s each part allows
    first_to_break: str = ""
    sustained_as_deployed: float = 0.0
    sustained_with_fixes: float = 0.0
    burst: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def model(
    shards: int,
    *,
    dispatch_cpu_ms: float,
    worker_cpu_ms: float,
    worker_requests: float,
    send_cpu_ms: float = 0.0,
    a: Assumptions | None = None,
) -> ScaleModel:
    """Every limit in executions per second, for `shards` due-index shards. `send_cpu_ms` is the
    client-side CPU of one SQS send, which sending 10 jobs' messages per request would save
    9 times in 10 (an estimate: the dispatcher sends one request per job today)."""
    a = a or Assumptions()
    per_minute = a.tick_budget_s / 60  # the share of each minute a tick may work
    tick_rate = dispatch_rate(dispatch_cpu_ms, a.tick_memory_mb, a.tick_threads, a)
    unit_rate = dispatch_rate(dispatch_cpu_ms, a.dispatch_memory_mb, a.dispatch_threads, a)
    batched_cpu = max(0.1, dispatch_cpu_ms - 0.9 * send_cpu_ms)
    batched_rate = dispatch_rate(
        batched_cpu, a.dispatch_memory_mb, a.dispatch_threads, a, sends_per_job=0.1
    )
    held = worker_duration_ms(worker_cpu_ms, worker_requests, a.hold_ms, a)
    unheld = worker_duration_ms(worker_cpu_ms, worker_requests, 0.0, a)
    worker_ceiling = min(a.worker_max_concurrency, a.esm_max_concurrency, a.account_concurrency)
    limits = {
        # Dispatch: one tick invocation draining in-process, and (as deployed) fanned out one
        # shard per dispatch invocation, each sending its jobs' messages ten to a request.
        "tick, one invocation (512 MB, 8 threads)": tick_rate * per_minute,
        "tick fanned out, sends one job per request": shards * unit_rate * per_minute,
        "tick fanned out, sends batched 10 to a request (deployed)": (
            shards * batched_rate * per_minute
        ),
        # Due-index GSI: every commit moves the entry to another minute's bucket (delete +
        # put); in the worst case every job lands in the same minute's SHARDS keys.
        "due-index GSI, puts into one minute's shard keys": shards * a.partition_wcu,
        # One tenant's activity-index keys take every finish of that tenant (the tenant index
        # is keys-only: a commit does not write it).
        "activity-index GSI, one tenant's 16 keys (each finish)": float(
            a.partition_wcu * a.activity_shards
        ),
        # Workers: concurrency x records side by side / duration of one execution.
        f"worker, max concurrency {a.worker_max_concurrency}, with the early hold": (
            worker_ceiling * a.worker_batch_size * 1000 / held
        ),
        "worker, no hold, 1,000 concurrent (account default)": (
            min(a.esm_max_concurrency, a.account_concurrency) * a.worker_batch_size * 1000 / unheld
        ),
    }
    # As deployed: the fanned-out tick with batched sends, the indexes, and the workers with
    # the early hold (the other rows are the alternatives the table compares against).
    deployed = [
        "tick fanned out, sends batched 10 to a request (deployed)",
        "due-index GSI, puts into one minute's shard keys",
        "activity-index GSI, one tenant's 16 keys (each finish)",
        f"worker, max concurrency {a.worker_max_concurrency}, with the early hold",
    ]
    first = min(deployed, key=lambda k: limits[k])
    # With the fixes of docs/scale.md: fan-out with batched sends, no early hold, per-tenant
    # index keys sharded or not written (so they drop out).
    with_fixes = min(
        limits["tick fanned out, sends batched 10 to a request (deployed)"],
        limits["due-index GSI, puts into one minute's shard keys"],
        limits["worker, no hold, 1,000 concurrent (account default)"],
    )
    # Midnight burst: all BURST_JOBS due at 00:00:00. The ticks at 23:58 and 23:59 may
    # dispatch them (2 x budget seconds); the workers then drain the queue.
    fan_rate = shards * unit_rate
    burst = {
        "dispatch_seconds_one_tick": BURST_JOBS / tick_rate,
        "dispatch_seconds_fanned_out": BURST_JOBS / fan_rate,
        "dispatch_seconds_fanned_out_batched": BURST_JOBS / (shards * batched_rate),
        "dispatch_window_seconds": 2 * a.tick_budget_s,
        "due_index_seconds": BURST_JOBS / (shards * a.partition_wcu),
        "drain_seconds_as_deployed": drain_seconds(BURST_JOBS, held, worker_ceiling, 1, a),
        "drain_seconds_one_mapping_no_hold": drain_seconds(
            BURST_JOBS, unheld, a.esm_max_concurrency, 1, a
        ),
        "drain_seconds_4_queues_no_hold_5000_concurrent": drain_seconds(
            BURST_JOBS, unheld, a.esm_max_concurrency, 4, a, account_concurrency=5000
        ),
        "activity_index_seconds_one_tenant": BURST_JOBS / (a.partition_wcu * a.activity_shards),
    }
    return ScaleModel(
        shards=shards,
        dispatch_cpu_ms=round(dispatch_cpu_ms, 3),
        worker_cpu_ms=round(worker_cpu_ms, 3),
        worker_requests=worker_requests,
        limits={k: round(v) for k, v in limits.items()},
        first_to_break=first,
        sustained_as_deployed=round(limits[first]),
        sustained_with_fixes=round(with_fixes),
        burst={k: round(v, 1) for k, v in burst.items()},
    )


def shards_for(
    target_per_second: float,
    dispatch_cpu_ms: float,
    a: Assumptions | None = None,
    sends_per_job: float = 1.0,
) -> int:
    """The smallest power-of-two SHARDS whose fan-out dispatches `target_per_second`."""
    a = a or Assumptions()
    unit = dispatch_rate(
        dispatch_cpu_ms, a.dispatch_memory_mb, a.dispatch_threads, a, sends_per_job=sends_per_job
    )
    shards = 1
    while shards * unit * a.tick_budget_s / 60 < target_per_second and shards < 256:
        shards *= 2
    return shards


def assumptions_dict(a: Assumptions | None = None) -> dict[str, Any]:
    """The assumptions, JSON-ready."""
    return asdict(a or Assumptions())
