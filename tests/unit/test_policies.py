"""Pure policy decisions: backoff, SQS delays, misfires."""

from __future__ import annotations

import pytest

from shared.models.job import MisfirePolicy, RetryPolicy
from shared.policies import align_wait_ms, backoff_seconds, plan_misfires, sqs_delay_seconds


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


@pytest.mark.parametrize(
    ("due_in_ms", "late_ms", "expected"),
    [(750, 250, 1), (749, 250, 0), (1_250, 250, 1), (1_750, 250, 2), (60_000, 999, 60),
     (59_001, 999, 60), (59_000, 999, 59), (899_900, 250, 900), (-3_000, 250, 0)],
)  # fmt: skip
def test_sqs_delay_with_a_late_tolerance_lands_within_it(
    due_in_ms: int, late_ms: int, expected: int
) -> None:
    # GIVEN a message due due_in_ms from now that may be up to late_ms late
    delay = sqs_delay_seconds(1_000_000 + due_in_ms, 1_000_000, late_ms)
    # THEN the delay is as expected, and (below the cap, due ahead) it lands in
    # (due - (1000 - late), due + late]
    assert delay == expected
    if 0 <= due_in_ms < 900_000:
        lands = delay * 1000
        assert due_in_ms - (1000 - late_ms) < lands <= due_in_ms + late_ms


@pytest.mark.parametrize(
    ("now_phase", "due_phase", "late_ms", "expected"),
    [(0, 0, 250, 0), (250, 0, 250, 0), (251, 0, 250, 749), (900, 0, 250, 100),
     (600, 500, 250, 0), (400, 500, 250, 100), (0, 999, 0, 999), (999, 0, 0, 1)],
)  # fmt: skip
def test_align_wait_lands_the_send_just_after_the_due_phase(
    now_phase: int, due_phase: int, late_ms: int, expected: int
) -> None:
    # GIVEN a send at now_phase ms into a second for a message due at due_phase into a later one
    now = 1_700_000_000_000 + now_phase
    due = 1_700_000_060_000 + due_phase
    # WHEN the sender waits as told
    wait = align_wait_ms(due, now, late_ms)
    # THEN it waits as expected, and after the wait a whole-second delay lands the message in
    # [due, due + late]
    assert wait == expected
    sent = now + wait
    lands = sent + sqs_delay_seconds(due, sent, late_ms) * 1000
    assert due <= lands <= due + late_ms


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
