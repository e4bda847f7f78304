"""The scale model's arithmetic (bench/model.py)."""

from __future__ import annotations

from dataclasses import replace

from bench import model
from infra.config import load_config


def test_model_dispatch_rate_is_bounded_by_cpu_or_by_waiting_threads():
    a = model.Assumptions()
    # GIVEN a cheap dispatch on a full vCPU WHEN rated THEN the threads' round trips bound it
    io_bound = model.dispatch_rate(0.1, 1769, 1, a)
    assert io_bound == 1000 / (a.sqs_send_rtt_ms + a.ddb_rtt_ms + 0.1)
    # GIVEN an expensive one on a small function THEN the CPU bounds it
    assert model.dispatch_rate(10.0, 512, 8, a) == 1000 * (512 / 1769) / 10.0


def test_model_batch_is_cpu_bound_on_a_small_function_and_io_bound_on_a_big_one():
    # GIVEN ten records of 5 ms CPU and 3 round trips of 6 ms each
    # THEN at half a vCPU the records wait on each other's CPU (10 x 10 ms) ...
    assert model.batch_ms(10, 5.0, 3, 0.0, 1769 // 2, 6.0) > 10 * 5.0 / 0.5 - 1
    # ... one record is its CPU and its round trips, and a hold adds once per batch
    assert model.batch_ms(1, 5.0, 3, 0.0, 1769, 6.0) == 5.0 + 18.0
    assert model.batch_ms(10, 1.0, 3, 100.0, 1769, 6.0) == 100.0 + 1.0 + 18.0


def test_model_worker_concurrency_ramps_by_mode_within_the_account():
    a = model.Assumptions()
    standard = replace(model.deployed(), max_concurrency=300, min_pollers=None, max_pollers=None)
    # GIVEN a standard mapping THEN it starts at 5 and adds 300 a minute up to its ceiling
    assert model.worker_concurrency(standard, a, 0) == 5
    assert model.worker_concurrency(standard, a, 30) == 155
    assert model.worker_concurrency(standard, a, 600) == 300
    # GIVEN provisioned pollers THEN it starts at 10 per poller and adds 1,000 a minute
    provisioned = replace(standard, max_concurrency=None, min_pollers=10, max_pollers=200)
    assert model.worker_concurrency(provisioned, a, 0) == 100
    assert model.worker_concurrency(provisioned, a, 30) == 600
    # AND never beyond the account's concurrency
    assert model.worker_concurrency(provisioned, a, 600) == a.account_concurrency


def test_model_drain_seconds_follow_the_ramp():
    a = model.Assumptions()
    standard = replace(model.deployed(), max_concurrency=300, min_pollers=None, max_pollers=None)
    # GIVEN 100 executions a second per concurrent invocation
    # THEN the first second runs 5 x 100, and a million take the ramp's integral
    assert model.drain_seconds(500, 100.0, standard, a) == 1
    assert model.drain_seconds(501, 100.0, standard, a) == 2
    # AND never faster than the tables take
    assert model.drain_seconds(1000, 1e9, standard, a, cap_per_s=100.0) == 10
    provisioned = replace(standard, max_concurrency=None, min_pollers=10, max_pollers=100)
    assert model.drain_seconds(1_000_000, 100.0, provisioned, a) < model.drain_seconds(
        1_000_000, 100.0, standard, a
    )


def test_model_reads_the_deployed_settings():
    # GIVEN the prod environment of infra/config.py THEN the model is about it
    cfg = load_config("prod")
    d = model.deployed()
    assert (d.shards, d.worker_memory_mb) == (cfg.shards, cfg.worker_memory_mb)
    assert d.max_concurrency == cfg.queues["medium"].max_concurrency


def test_model_names_the_first_limit_and_more_shards_raise_the_dispatch():
    # GIVEN measured figures
    figures = {"dispatch_cpu_ms": 2.5, "worker_cpu_ms": 5.0, "worker_requests": 3.0, "hold_ms": 0.0}
    d = model.deployed()
    m16 = model.model(model.with_shards(d, 16), **figures)
    m32 = model.model(model.with_shards(d, 32), **figures)
    # THEN the sustained rate is the smallest limit, and doubling SHARDS doubles the fan-out
    assert m16.sustained == min(m16.limits.values())
    assert m16.limits[m16.first_to_break] == m16.sustained
    dispatch16 = next(v for k, v in m16.limits.items() if k.startswith("dispatch"))
    dispatch32 = next(v for k, v in m32.limits.items() if k.startswith("dispatch"))
    assert abs(dispatch32 - 2 * dispatch16) <= 1
    assert m32.burst["dispatch_seconds"] < m16.burst["dispatch_seconds"]
    # AND a hold slows the workers' drain
    held = model.model(model.with_shards(d, 32), **{**figures, "hold_ms": 500.0})
    assert held.burst["drain_seconds"] > m32.burst["drain_seconds"]
