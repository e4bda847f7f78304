"""`python -m bench` (`make bench`): every figure of issue #4, printed as a table and written to
bench/results.json. Parts 2-4 run in-process on moto with a controllable clock; part 1 runs the
local runtime on a real clock; part 5 is a model fed by the measured figures."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.world import prepare_process

RESULTS = Path(__file__).resolve().parent / "results.json"
DAY = "2026-11-23T00:00:00.000Z"  # the simulated day of the in-process scenarios
TICK_SIZES = (1_000, 100_000)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import moto

    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "moto": moto.__version__,
    }


def say(text: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def run_tick_cost() -> dict[str, Any]:
    """Part 3."""
    from bench import tickcost
    from shared.clock import parse_rfc3339_ms

    start = parse_rfc3339_ms("2026-11-23T08:55:00.000Z")
    out: dict[str, Any] = {}
    # The large table first; it stays in memory while the small one is measured (ballast).
    ballast: list[Any] = []
    for total in sorted(TICK_SIZES, reverse=True):
        say(f"part 3: tick with 100 due among {total:,} jobs")
        out[str(total)] = tickcost.measure(total, start_ms=start, keep=ballast).as_dict()
    ballast.clear()
    small, large = out[str(TICK_SIZES[0])], out[str(TICK_SIZES[-1])]

    def ratio(key: str) -> float:
        return round(large[key] / small[key], 3) if small[key] else 0.0

    out["ratio"] = {
        k: ratio(k)
        for k in (
            "requests_total",
            "write_units",
            "read_units",
            "sqs_requests",
            "own_cpu_ms",
            "botocore_cpu_ms",
            "moto_cpu_ms",
            "wall_ms",
        )
    }
    due = tickcost.DUE
    out["per_dispatch_cpu_ms"] = {
        "own": round(max(0.0, small["own_cpu_ms"] - small["empty_own_cpu_ms"]) / due, 3),
        "botocore": round(
            max(0.0, small["botocore_cpu_ms"] - small["empty_botocore_cpu_ms"]) / due, 3
        ),
    }
    return out


def run_costs(tick_cpu: dict[str, float]) -> dict[str, Any]:
    """Parts 2 and 4."""
    from bench import cost
    from shared.clock import parse_rfc3339_ms

    day = parse_rfc3339_ms(DAY)
    out: dict[str, Any] = {}
    say(f"part 2: {cost.DAILY_JOBS} daily cron jobs")
    out["daily_cron"] = cost.daily_cron(day, tick_cpu).as_dict()
    say(f"part 2: {cost.RATE_JOBS} rate(1 minute) jobs for {cost.RATE_WINDOW_MINUTES} minutes")
    out["rate_1_minute"] = cost.rate_minute(day, tick_cpu).as_dict()
    say(f"part 2: {cost.NOW_JOBS} now jobs")
    out["now"] = cost.now_job(day).as_dict()
    return out


def run_model(costs: dict[str, Any], tick_cpu: dict[str, float]) -> dict[str, Any]:
    """Part 5: the deployed (prod) settings, at SHARDS=16 and at SHARDS=32."""
    from dataclasses import replace

    from bench import model

    daily = costs["daily_cron"]
    figures = {
        "dispatch_cpu_ms": tick_cpu["own"] + tick_cpu["botocore"],
        "worker_cpu_ms": daily["cpu_ms"]["worker_own"] + daily["cpu_ms"]["worker_botocore"],
        "worker_requests": daily["aws_requests"]["worker"],
        "hold_ms": daily["hold_ms_mean"],
        # A dispatch is two requests (send, commit): half its client-side CPU is the send's.
        "send_cpu_ms": tick_cpu["botocore"] / 2,
    }
    deployed = model.deployed()
    out: dict[str, Any] = {"assumptions": model.assumptions_dict(), "deployed": deployed.name}
    out["as_deployed"] = model.model(deployed, **figures).as_dict()
    for shards in (16, 32):
        out[f"shards_{shards}"] = model.model(
            model.with_shards(deployed, shards), **figures
        ).as_dict()
    provisioned = replace(deployed, max_concurrency=None, min_pollers=10, max_pollers=100)
    out["provisioned_10_100_pollers"] = model.model(provisioned, **figures).as_dict()
    return out


def run_lag() -> dict[str, Any]:
    """Part 1."""
    from bench import lag

    say("part 1: local runtime, real clock (about 4 minutes)")
    return lag.run(progress=lambda text: say(f"part 1: {text}")).as_dict()


# ---- targets and the table ---------------------------------------------------------------


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of the issue with the figure that decides it."""
    out: list[dict[str, Any]] = []

    def add(name: str, figure: Any, limit: str, met: bool) -> None:
        out.append({"target": name, "figure": figure, "limit": limit, "met": met})

    lag = results.get("lag")
    if isinstance(lag, dict):
        p99 = lag["sustained"]["start_lag_ms"]["p99"]
        add("p99 start lag, 20 jobs/s sustained, local runtime (ms)", p99, "<= 1000", p99 <= 1000)
    daily = results.get("costs", {}).get("daily_cron")
    if daily:
        for name, key, limit in (
            ("write units", "write_units", 5.0),
            ("read units", "read_units", 1.0),
            ("SQS requests", "sqs_requests", 0.5),
        ):
            add(f"daily cron {name} per execution", daily[key], f"<= {limit}", daily[key] <= limit)
    tick = results.get("tick")
    if tick:
        r = tick["ratio"]
        flat = max(r["requests_total"], r["write_units"], r["read_units"], r["own_cpu_ms"])
        add("tick cost ratio 100k/1k (requests, units, own CPU)", flat, "<= 1.1", flat <= 1.1)
    scale = results.get("model")
    if scale:
        deployed = scale["as_deployed"]
        add(
            "sustained executions/s on AWS, model, as deployed",
            deployed["sustained"],
            ">= 10000",
            deployed["sustained"] >= 10_000,
        )
        burst = deployed["burst"]
        add(
            "1,000,000-job midnight burst drained, model, as deployed (s)",
            burst["drain_seconds"],
            f"<= 60 (dispatched in the {burst['dispatch_window_seconds']:.0f} s before)",
            deployed["burst_met"],
        )
    return out


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _lag_lines(lag: Any) -> list[str]:
    lines = ["", "1. Start lag through the local runtime, ms (worker start - due; at the target)"]
    if not isinstance(lag, dict):
        return [*lines, f"   not run: {lag}"]
    lines.append(
        f"   {'load':<24}{'lag':<10}{'n':>6}{'p50':>8}{'p95':>8}{'p99':>8}{'max':>8}  not started"
    )
    for key in ("light", "burst", "sustained"):
        r = lag[key]
        for label, st in (("start", r["start_lag_ms"]), ("delivery", r["delivery_lag_ms"])):
            first = label == "start"
            lines.append(
                f"   {r['load'] if first else '':<24}{label:<10}{_f(st['n']):>6}"
                f"{_f(st['p50']):>8}{_f(st['p95']):>8}{_f(st['p99']):>8}{_f(st['max']):>8}"
                f"  {r['not_started'] if first else ''}"
            )
        if r.get("created_late"):
            lines.append("   (the creates above outlasted their lead: not a valid measurement)")
    lines.append(
        f"   the local runtime spent {lag['runtime_cpu_ms_per_run']} ms CPU per run "
        "(its process, with every handler, and its embedded-AWS process, moto's server)"
    )
    return lines


def _cost_lines(costs: dict[str, Any]) -> list[str]:
    names = [("daily_cron", "daily cron"), ("rate_1_minute", "rate(1 min)"), ("now", "now")]
    present = [(k, n) for k, n in names if k in costs]
    if not present:
        return []
    lines = ["", "2. AWS per execution (in-process moto, billed as AWS bills; target: daily cron)"]
    lines.append(f"   {'':<32}" + "".join(f"{n:>12}" for _, n in present) + "   target")
    rows = [
        ("DynamoDB write units", "write_units", "<= 5"),
        ("DynamoDB read units", "read_units", "<= 1"),
        ("SQS requests", "sqs_requests", "<= 0.5"),
        ("Lambda invocations", "lambda_invocations", ""),
        ("Lambda GB-seconds (modelled)", "gb_seconds", ""),
        ("  of which early hold, ms", "hold_ms_mean", ""),
        ("API Gateway requests", "api_gateway_requests", ""),
        ("CloudWatch Logs bytes", "log_bytes", ""),
    ]
    for label, key, limit in rows:
        digits = 4 if key == "gb_seconds" else 2
        values = "".join(f"{_f(costs[k][key], digits):>12}" for k, _ in present)
        lines.append(f"   {label:<32}{values}   {limit}")
    lines.append("   USD per million executions")
    for part in ("dynamodb", "sqs", "lambda", "api_gateway", "logs", "total"):
        values = "".join(f"{_f(costs[k]['usd_per_million'][part]):>12}" for k, _ in present)
        lines.append(f"     {part:<30}{values}")
    lines.append(
        f"     {'EventBridge Scheduler':<30}{'1.00':>12}   (the trigger alone, 1-min precision)"
    )
    daily = costs.get("daily_cron")
    if daily:
        lines.append(
            f"   daily cron, by request {'':<30}{'write':>7}{'read':>8}{'SQS':>6}{'reqs':>6}"
        )
        for b in daily["breakdown"]:
            lines.append(
                f"     {b['line']:<51}{b['write_units']:>7.2f}{b['read_units']:>8.3f}"
                f"{b['sqs_requests']:>6.2f}{b['requests']:>6.2f}"
            )
        fixed = daily["fixed_per_tick"]
        lines.append(
            f"   fixed, per tick (watermark, shard queries that find nothing): "
            f"{fixed['read_units']} read units, {fixed['write_units']} write units"
        )
    return lines


def _tick_lines(tick: dict[str, Any] | None) -> list[str]:
    if not tick:
        return []
    small, large = tick[str(TICK_SIZES[0])], tick[str(TICK_SIZES[-1])]
    lines = ["", "3. One tick with 100 due jobs among 1,000 and among 100,000"]
    lines.append(f"   {'':<34}{'1,000':>10}{'100,000':>12}{'ratio':>8}")
    for label, key in (
        ("AWS requests", "requests_total"),
        ("DynamoDB write units", "write_units"),
        ("DynamoDB read units", "read_units"),
        ("SQS requests", "sqs_requests"),
        ("project CPU, ms", "own_cpu_ms"),
        ("botocore CPU, ms", "botocore_cpu_ms"),
        ("moto CPU, ms (emulator, scans)", "moto_cpu_ms"),
        ("wall on moto, ms", "wall_ms"),
    ):
        lines.append(
            f"   {label:<34}{_f(small[key], 1):>10}{_f(large[key], 1):>12}"
            f"{_f(tick['ratio'][key], 2):>8}"
        )
    return lines


def _cpu_lines(tick: dict[str, Any] | None, costs: dict[str, Any]) -> list[str]:
    daily = costs.get("daily_cron")
    if not tick or not daily:
        return []
    cpu, per = daily["cpu_ms"], tick["per_dispatch_cpu_ms"]
    own = per["own"] + cpu["worker_own"]
    boto = per["botocore"] + cpu["worker_botocore"]
    return [
        "",
        "4. Own CPU per execution, ms (daily cron; moto excluded)",
        f"   tick, one dispatch           project {per['own']:.2f}   "
        f"botocore {per['botocore']:.2f}",
        f"   worker, one execution        project {cpu['worker_own']:.2f}   "
        f"botocore {cpu['worker_botocore']:.2f}",
        f"   total                        project {own:.2f}   botocore {boto:.2f}   "
        f"= {own + boto:.2f}",
        f"   (left out: moto's own CPU, {cpu.get('worker_moto', 0.0):.2f} ms per worker "
        "execution in-process)",
    ]


def _model_lines(scale: dict[str, Any] | None) -> list[str]:
    if not scale:
        return []
    columns = {
        "SHARDS=16": scale["shards_16"],
        "SHARDS=32": scale["shards_32"],
        "prov.10-100": scale["provisioned_10_100_pollers"],
    }
    deployed = scale["as_deployed"]["deployment"]
    lines = [
        "",
        f"5. Scale on AWS by model, executions/s each part allows ({scale['deployed']} settings: "
        f"SHARDS={deployed['shards']}, worker {deployed['worker_memory_mb']} MB; docs/scale.md)",
        f"   {'':<62}" + "".join(f"{c:>12}" for c in columns),
    ]
    rows = [list(m["limits"].values()) for m in columns.values()]
    for index, key in enumerate(scale["shards_16"]["limits"]):
        name = key.split(":")[0]
        lines.append(f"   {name:<62}" + "".join(f"{_f(r[index]):>12}" for r in rows))
    lines.append(
        f"   {'sustained':<62}" + "".join(f"{_f(m['sustained']):>12}" for m in columns.values())
    )
    for name, m in columns.items():
        lines.append(f"   first to break, {name}: {m['first_to_break']}")
    lines.append("   1,000,000 due at midnight, seconds")
    for key in scale["shards_16"]["burst"]:
        name = key.replace("_", " ")
        lines.append(
            f"     {name:<60}" + "".join(f"{_f(m['burst'][key], 1):>12}" for m in columns.values())
        )
    lines.append(
        f"   {'burst target met':<62}"
        + "".join(f"{_f(m['burst_met']):>12}" for m in columns.values())
    )
    return lines


def table(results: dict[str, Any]) -> str:
    """The printed report."""
    m = results["machine"]
    lines = [
        f"Punctual benchmark, {results['date']}, {m['cpu']} x{m['cores']}, Python {m['python']}, "
        f"moto {m['moto']}, {results.get('wall_seconds', '?')} s",
        f"Prices: {prices_line(results)}",
    ]
    costs = results.get("costs", {})
    lines += _lag_lines(results.get("lag"))
    lines += _cost_lines(costs)
    lines += _tick_lines(results.get("tick"))
    lines += _cpu_lines(results.get("tick"), costs)
    lines += _model_lines(results.get("model"))
    lines += ["", "Targets"]
    for t in results.get("targets", []):
        mark = "met   " if t["met"] else "MISSED"
        lines.append(f"   {mark} {t['target']}: {_f(t['figure'])} (target {t['limit']})")
    return "\n".join(lines)


def prices_line(results: dict[str, Any]) -> str:
    """Where the dollar figures come from."""
    return f"us-east-1 on-demand, {results['prices_as_of']}"


def main(argv: list[str] | None = None) -> int:
    """Run every part (or some), print the table, write the JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--skip-lag", action="store_true", help="leave out part 1 (real clock)")
    parser.add_argument(
        "--only", choices=["lag"], help="run only this part (written only with --output)"
    )
    parser.add_argument("--output", type=Path, default=None, help=f"default: {RESULTS}")
    args = parser.parse_args(argv)

    prepare_process()
    warnings.filterwarnings("ignore")
    from bench import prices

    began = time.monotonic()
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "prices_as_of": prices.PRICES_AS_OF,
        "price_sources": prices.SOURCES,
    }
    if args.only is None:
        results["tick"] = run_tick_cost()
        tick_cpu = results["tick"]["per_dispatch_cpu_ms"]
        results["costs"] = run_costs(tick_cpu)
        results["model"] = run_model(results["costs"], tick_cpu)
    if args.skip_lag:
        results["lag"] = "skipped (--skip-lag)"
    else:
        try:
            results["lag"] = run_lag()
        except (RuntimeError, TimeoutError, OSError) as err:
            results["lag"] = f"failed: {err}"
    results["targets"] = targets(results)
    results["wall_seconds"] = round(time.monotonic() - began, 1)
    print(table(results))
    output = args.output or (None if args.only else RESULTS)
    if output is not None:
        output.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")
        print(f"\nwritten: {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
