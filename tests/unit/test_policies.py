"""Pure policy decisions: backoff, SQS delays, misfires."""

from __future__ import annotations

import pytest

from shared.models.job import MisfirePolicy, RetryPolicy
from shared.policies import backoff_seconds, plan_misfires, sqs_delay_seconds


@pytest.mark.parametrize(
    ("attempt", "expected"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (10, 60.0), (200, 60.0)]
)
def test_backoff_exponential_capped_without_jitter(attempt: int, expected: float) -> None:
    # GIVEN base 1 s, cap 60 s, no jitter
    policy = RetryPolicy(base_delay_seconds=1, max_delay_seconds=60, jitter=False)
    # WHEN / THEN the delay doubles per failed attempt up to the cap
    assert backoff_seconds(policy, attempt) == expected


def test_backoff_full_jitter_scales_the_cap_by_the_draw() -> None:
    # GIVEN base 2 s with jitter and a fixed draw
    policy = RetryPolicy(base_delay_seconds=2, max_delay_seconds=100, jitter=True)
    # WHEN the third attempt failed (cap 8 s)
    # THEN the delay is uniform in [0, cap]: the draw times the cap
    assert backoff_seconds(policy, 3, rand=lambda: 0.0) == 0.0
    assert backoff_seconds(policy, 3, rand=lambda: 0.5) == 4.0
    assert backoff_seconds(policy, 3, rand=lambda: 0.999) == pytest.approx(7.992)


@pytest.mark.parametrize(
    ("due_in_ms", "expected"),
    [(-5_000, 0), (0, 0), (999, 0), (1_000, 1), (61_500, 61), (900_000, 900), (2_000_000, 900)],
)
def test_sqs_delay_rounds_down_and_caps(due_in_ms: int, expected: int) -> None:
    # GIVEN a message due due_in_ms from now
    # WHEN / THEN the delay is whole seconds, rounded down (the worker holds the rest), max 900
    assert sqs_delay_seconds(1_000_000 + due_in_ms, 1_000_000) == expected


def test_misfire_plan_fire_once_keeps_the_latest() -> None:
    # GIVEN three missed occurrences
    plan = plan_misfires(MisfirePolicy.FIRE_ONCE, [1, 2, 3], 3, cap=100)
    # THEN one catch-up run for the latest, two skipped
    assert (plan.run, plan.skipped) == ([3], 2)


def test_misfire_plan_fire_all_is_capped() -> None:
    plan = plan_misfires(MisfirePolicy.FIRE_ALL, [1, 2, 3, 4], 10, cap=3)
    assert (plan.run, plan.skipped) == ([1, 2, 3], 7)


def test_misfire_plan_skip_runs_nothing() -> None:
    plan = plan_misfires(MisfirePolicy.SKIP, [1, 2], 2, cap=3)
    assert (plan.run, plan.skipped) == ([], 2)


def test_misfire_plan_without_misses_is_empty() -> None:
    plan = plan_misfires(MisfirePolicy.FIRE_ALL, [], 0, cap=3)
    assert (plan.run, plan.skipped) == ([], 0)
