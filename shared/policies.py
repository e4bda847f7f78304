"""Pure policy decisions: retry backoff, misfires, overlap."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from shared.models.job import MisfirePolicy, RetryPolicy

SQS_MAX_DELAY_SECONDS = 900


def backoff_seconds(
    policy: RetryPolicy, failed_attempt: int, rand: Callable[[], float] = random.random
) -> float:
    """Delay before the attempt after `failed_attempt` (1-based): exponential, capped, and with
    full jitter (uniform in [0, cap]) when the policy asks for it."""
    exponent = min(failed_attempt - 1, 62)
    cap = float(min(policy.max_delay_seconds, policy.base_delay_seconds * (2**exponent)))
    return cap * rand() if policy.jitter else cap


def sqs_delay_seconds(due_ms: int, now_ms: int, late_ms: int = 0) -> int:
    """SQS DelaySeconds for a message due at due_ms, sent at now_ms: whole seconds, capped at
    900. The message becomes visible at most `late_ms` after it is due, and less than
    1,000 - late_ms before (the worker holds an early message until due). With late_ms = 0 it
    is never late and up to a second early."""
    remaining = max(0, due_ms - now_ms + late_ms)
    return min(SQS_MAX_DELAY_SECONDS, remaining // 1000)


def align_wait_ms(due_ms: int, now_ms: int, late_ms: int) -> int:
    """How long a sender should wait so that a message due at due_ms, delayed by whole
    seconds, becomes visible between due and due + late_ms instead of up to a second early:
    0 when the sub-second phase of now is already within late_ms after the due time's."""
    phase = (now_ms - due_ms) % 1000
    return 0 if phase <= late_ms else 1000 - phase


@dataclass(frozen=True)
class MisfirePlan:
    """Which missed occurrences run: `run` are scheduled times to dispatch now; `skipped`
    counts missed occurrences that will not run."""

    run: list[int]
    skipped: int


def plan_misfires(
    policy: MisfirePolicy, missed: list[int], total_missed: int, cap: int
) -> MisfirePlan:
    """Decide what happens to occurrences missed by more than the grace period.
    `missed` holds the first few missed times (up to cap), `total_missed` how many there were
    (it may be larger than the list when the schedule is dense)."""
    if not missed:
        return MisfirePlan(run=[], skipped=0)
    if policy is MisfirePolicy.SKIP:
        return MisfirePlan(run=[], skipped=total_missed)
    if policy is MisfirePolicy.FIRE_ONCE:
        # One catch-up run stands for all of them; it carries the most recent missed time.
        return MisfirePlan(run=[missed[-1]], skipped=total_missed - 1)
    run = missed[:cap]
    return MisfirePlan(run=run, skipped=total_missed - len(run))
