"""How `make bench` decides the tick-cost target (bench/__main__.py, bench/tickcost.py)."""

from __future__ import annotations

from bench.__main__ import targets
from bench.tickcost import speed_probe_ms


def _tick(own_ratio: float, per_probe: float | None) -> dict[str, object]:
    ratio = {"requests_total": 1.0, "write_units": 1.0, "read_units": 1.0, "own_cpu_ms": own_ratio}
    if per_probe is not None:
        ratio["own_cpu_per_probe"] = per_probe
    return {"tick": {"ratio": ratio}}


def test_tick_target_compares_cpu_in_units_of_the_speed_probe() -> None:
    # GIVEN the same requests and units, and a project CPU 13 % higher for the large table only
    # because the machine ran 13 % slower then (the probe says so)
    (drifted,) = targets(_tick(own_ratio=1.13, per_probe=1.0))
    # THEN the target holds on the drift-free figure
    assert (drifted["figure"], drifted["met"]) == (1.0, True)
    # AND a real growth of the tick's own CPU still fails it
    (grown,) = targets(_tick(own_ratio=1.13, per_probe=1.2))
    assert (grown["figure"], grown["met"]) == (1.2, False)
    # AND without a probe (an older results file) the raw ratio decides
    (raw,) = targets(_tick(own_ratio=1.13, per_probe=None))
    assert raw["met"] is False


def test_speed_probe_measures_some_cpu() -> None:
    assert speed_probe_ms() > 0
