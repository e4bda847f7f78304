"""The scale model's arithmetic (bench/model.py)."""

from __future__ import annotations

from bench import model


def test_model_dispatch_rate_is_bounded_by_cpu_or_by_waiting_threads():
    a = model.Assumptions()
    # GIVEN a cheap dispatch on a full vCPU WHEN rated THEN the threads' round trips bound it
    io_bound = model.dispatch_rate(0.1, 1769, 1, a)
    assert io_bound == 1000 / (a.sqs_send_rtt_ms + a.ddb_rtt_ms + 0.1)
    # GIVEN an expensive one on a small function THEN the CPU bounds it
    assert model.dispatch_rate(10.0, 512, 8, a) == 1000 * (512 / 1769) / 10.0


def test_model_drain_seconds_ramps_concurrency_and_respects_the_account_limit():
    a = model.Assumptions()
    # GIVEN executions of 1 s on a mapping starting at 5 concurrent batches of ten
    # THEN the first second runs 50 of them, so 1,000 take more than one second
    assert model.drain_seconds(50, 1000, 1250, 1, a) == 1
    assert model.drain_seconds(1000, 1000, 1250, 1, a) > 1
    # AND more queues drain faster, but never beyond the account's concurrency
    one = model.drain_seconds(1_000_000, 30, 1250, 1, a)
    four = model.drain_seconds(1_000_000, 30, 1250, 4, a, account_concurrency=5000)
    assert four < one
    capped = model.drain_seconds(1_000_000, 30, 1250, 4, a, account_concurrency=10)
    assert capped >= 1_000_000 * 30 / 1000 / (10 * a.worker_batch_size)


def test_model_names_the_first_limit_and_more_shards_raise_the_fan_out():
    # GIVEN measured figures
    figures = {"dispatch_cpu_ms": 2.5, "worker_cpu_ms": 5.0, "worker_requests": 3.0}
    m16 = model.model(16, **figures)
    m32 = model.model(32, **figures)
    # THEN the first limit is the smallest deployed one, and doubling SHARDS doubles the fan-out
    deployed = [k for k in m16.limits if "deployed" in k or "GSI" in k or "early hold" in k]
    assert m16.sustained_as_deployed == min(m16.limits[k] for k in deployed)
    key = "tick fanned out, sends batched 10 to a request (deployed)"
    assert m32.limits[key] == 2 * m16.limits[key] or abs(m32.limits[key] - 2 * m16.limits[key]) <= 1
    assert model.shards_for(10_000, 2.5) >= 16
