"""Part 1: start lag and delivery lag through the local runtime (`python -m local`), on a real
clock, with an HTTP target on loopback.

- light: LIGHT_JOBS jobs `rate(1 second)` for LIGHT_SECONDS (a load the runtime keeps up with);
- burst: BURST_JOBS jobs `at(T)` created ahead of time, all due on the same exact second T;
- sustained: SUSTAINED_JOBS jobs `rate(1 second)` whose first occurrence is the same exact
  second, for SUSTAINED_SECONDS: 20 runs due on every exact second.

Start lag = the first attempt's `started_at` - `scheduled_for` (runs API); delivery lag = when
the request reached the receiver - its `X-Punctual-Scheduled-For`. Both servers listen on
127.0.0.1 only, and everything stops by itself (a hard deadline kills the runtime)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.billing import percentile
from local.launch import child_env, free_port

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
SUSTAINED_JOBS = 20
SUSTAINED_SECONDS = 60
# After a load's last due second, how long to wait for its backlog (runs not started by then
# count with the lag reached so far).
SUSTAINED_DRAIN_SECONDS = 45
LIGHT_JOBS = 5
LIGHT_SECONDS = 20
LIGHT_DRAIN_SECONDS = 10
BURST_JOBS = 200
# How far ahead the burst's at() time is set: the 200 creates must be done before it.
BURST_LEAD_SECONDS = 60
BURST_DRAIN_SECONDS = 60
# How far ahead of their first occurrence the rate(1 second) jobs are created.
RATE_LEAD_SECONDS = 15
START_TIMEOUT = 60.0
HARD_DEADLINE_SECONDS = 420.0
TENANT = "bench-lag"


def _ms(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _iso(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Arrival:
    """One request that reached the receiver."""

    job_id: str
    run_id: str
    scheduled_ms: int
    arrived_ms: int


class Receiver(ThreadingHTTPServer):
    """The HTTP target: answers 200 at once and notes when each run's request arrived."""

    daemon_threads = True

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                arrived = _now_ms()
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                scheduled = self.headers.get("X-Punctual-Scheduled-For")
                if scheduled:
                    with receiver._lock:
                        receiver.arrivals.append(
                            Arrival(
                                job_id=self.headers.get("X-Punctual-Job-Id", ""),
                                run_id=self.headers.get("X-Punctual-Run-Id", ""),
                                scheduled_ms=_ms(scheduled),
                                arrived_ms=arrived,
                            )
                        )
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        super().__init__((HOST, 0), Handler)

    @property
    def url(self) -> str:
        """Where the jobs deliver."""
        return f"http://{HOST}:{self.server_address[1]}/hook"

    def first_arrivals(self) -> list[Arrival]:
        """One arrival per run (the first), in arrival order."""
        with self._lock:
            seen: dict[tuple[str, str], Arrival] = {}
            for a in self.arrivals:
                seen.setdefault((a.job_id, a.run_id), a)
            return list(seen.values())


class Runtime:
    """`python -m local` as a subprocess on a free loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "local"],
            cwd=ROOT,
            env=child_env(self.port),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if len(self.lines) < 20_000:
                self.lines.append(line.rstrip("\n"))

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One API request; (status, JSON body)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 - loopback http only
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "X-Tenant-Id": TENANT},
        )
        try:
            with self._opener.open(request, timeout=30) as resp:
                text = resp.read()
                return resp.status, json.loads(text) if text else None
        except urllib.error.HTTPError as err:
            text = err.read()
            return err.code, json.loads(text) if text else None

    def wait_healthy(self) -> None:
        """Until /v1/health answers, or fail."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("local runtime exited:\n" + "\n".join(self.lines[-30:]))
            try:
                if self.call("GET", "/v1/health")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError("local runtime not healthy:\n" + "\n".join(self.lines[-30:]))

    def stop(self) -> None:
        """Ctrl-C, then kill if it does not stop."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(5)

    def banner(self) -> str:
        """The runtime's start-up lines (tick interval, concurrency)."""
        return " | ".join(line for line in self.lines[:3] if line)

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        """Every run of a job."""
        out: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            query = "?limit=100" + (f"&next_token={token}" if token else "")
            status, page = self.call("GET", f"/v1/jobs/{job_id}/runs{query}")
            if status != 200:
                raise RuntimeError(f"runs of {job_id}: {status} {page}")
            out.extend(page["runs"])
            token = page.get("next_token")
            if not token:
                return out


def stats(values: list[int]) -> dict[str, float | int | None]:
    """p50/p95/p99/max (ms) and how many."""
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values) if values else None,
        "min": min(values) if values else None,
    }


@dataclass
class LagResult:
    """Start and delivery lag of one load."""

    load: str
    expected_runs: int
    start_lag_ms: dict[str, Any]
    delivery_lag_ms: dict[str, Any]
    not_started: int
    early: int
    statuses: dict[str, int] = field(default_factory=dict)
    # True when the creates took longer than the lead: the first runs were late before they
    # were even created, and the figures are not valid.
    created_late: bool = False


@dataclass
class LagReport:
    """Part 1."""

    runtime: str
    sustained: LagResult
    burst: LagResult
    light: LagResult  # a load the local runtime keeps up with, for comparison
    # CPU per run in the sustained load, of the runtime and its child processes (embedded AWS)
    runtime_cpu_ms_per_run: float
    wall_seconds: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def _create(runtime: Runtime, body: dict[str, Any]) -> str:
    status, job = runtime.call("POST", "/v1/jobs", body)
    if status != 201:
        raise RuntimeError(f"create failed: {status} {job}")
    return str(job["job_id"])


def _collect(
    runtime: Runtime,
    receiver: Receiver,
    load: str,
    expected: dict[str, list[int]],
) -> LagResult:
    """Lags of the expected runs. A run that has not started by now counts with the lag it has
    reached so far (a lower bound), so a saturated runtime cannot look faster than it is."""
    now = _now_ms()
    start_lags: list[int] = []
    statuses: dict[str, int] = {}
    not_started = 0
    started: set[tuple[str, int]] = set()
    for job_id, times in expected.items():
        wanted = set(times)
        for run in runtime.runs(job_id):
            scheduled = _ms(run["scheduled_for"])
            if scheduled not in wanted:
                continue
            statuses[run["status"]] = statuses.get(run["status"], 0) + 1
            if run["attempts"]:
                started.add((job_id, scheduled))
                start_lags.append(_ms(run["attempts"][0]["started_at"]) - scheduled)
        for scheduled in wanted:
            if (job_id, scheduled) not in started:
                not_started += 1
                start_lags.append(now - scheduled)
    arrived = {
        (a.job_id, a.scheduled_ms): a.arrived_ms - a.scheduled_ms
        for a in receiver.first_arrivals()
        if a.job_id in expected
    }
    delivery = [
        arrived.get((job_id, scheduled), now - scheduled)
        for job_id, times in expected.items()
        for scheduled in times
    ]
    total = sum(len(t) for t in expected.values())
    return LagResult(
        load=load,
        expected_runs=total,
        start_lag_ms=stats(start_lags),
        delivery_lag_ms=stats(delivery),
        not_started=not_started,
        early=sum(1 for v in start_lags if v < 0),
        statuses=statuses,
    )


def _sleep_until(ms: int, deadline: float) -> None:
    while True:
        left = (ms - _now_ms()) / 1000
        if left <= 0:
            return
        if time.monotonic() + left > deadline:
            raise TimeoutError("lag benchmark would pass its hard deadline")
        time.sleep(min(left, 1.0))


def _wait_arrivals(receiver: Receiver, job_ids: list[str], expected: int, until_ms: int) -> None:
    """Until every expected run reached the receiver, or until_ms."""
    wanted = set(job_ids)
    while _now_ms() < until_ms:
        if sum(1 for a in receiver.first_arrivals() if a.job_id in wanted) >= expected:
            return
        time.sleep(0.5)


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU so far of a process and of every process below it (the runtime may
    run the embedded AWS or workers as child processes); Linux /proc, 0 elsewhere."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None:
                parents[int(entry.name)] = int(fields[1])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, ppid in parents.items():
            if ppid == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    ticks = 0
    for member in tree:
        fields = _stat(member)
        if fields is not None:
            # utime + stime, and those of its children that have exited and were waited for.
            ticks += sum(int(f) for f in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def _rate_jobs(
    runtime: Runtime, name: str, jobs: int, first: int, seconds: int, target: Any
) -> list[str]:
    return [
        _create(
            runtime,
            {
                "name": f"{name}-{i:02d}",
                "schedule": "rate(1 second)",
                "start_at": _iso(first),
                "end_at": _iso(first + seconds * 1000 - 1),
                "target": target,
                "payload": {"i": i},
            },
        )
        for i in range(jobs)
    ]


def _sustained(
    runtime: Runtime,
    receiver: Receiver,
    name: str,
    jobs: int,
    seconds: int,
    drain_seconds: int,
    target: Any,
    say: Any,
) -> tuple[LagResult, float]:
    first = (_now_ms() // 1000 + RATE_LEAD_SECONDS) * 1000
    ids = _rate_jobs(runtime, name, jobs, first, seconds, target)
    late = _now_ms() > first
    say(f"{name}: {jobs} x rate(1 second) from {_iso(first)} for {seconds} s")
    cpu_before = _cpu_seconds(runtime.proc.pid)
    end = first + seconds * 1000
    _wait_arrivals(receiver, ids, jobs * seconds, end + drain_seconds * 1000)
    cpu = _cpu_seconds(runtime.proc.pid) - cpu_before
    times = list(range(first, end, 1000))
    result = _collect(
        runtime, receiver, f"{jobs} jobs/s for {seconds} s", {job_id: times for job_id in ids}
    )
    result.created_late = late
    return result, cpu


def run(progress: Any = None) -> LagReport:
    """Start the receiver and the runtime, run the loads, collect, stop everything."""
    began = time.monotonic()
    deadline = began + HARD_DEADLINE_SECONDS
    say = progress or (lambda text: None)
    receiver = Receiver()
    receiver_thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    receiver_thread.start()
    runtime = Runtime()
    killer = threading.Timer(HARD_DEADLINE_SECONDS, runtime.proc.kill)
    killer.daemon = True
    killer.start()
    target = {"type": "http", "url": receiver.url, "method": "POST"}
    try:
        runtime.wait_healthy()
        say(f"local runtime up on {runtime.url}")
        # A load the runtime keeps up with, on an idle runtime.
        light, _ = _sustained(
            runtime, receiver, "light", LIGHT_JOBS, LIGHT_SECONDS, LIGHT_DRAIN_SECONDS, target, say
        )
        # The burst: created ahead, all due on one whole second, drained before what follows.
        burst_at = (_now_ms() // 1000 + BURST_LEAD_SECONDS) * 1000
        created_at = _now_ms()
        burst_ids = [
            _create(
                runtime,
                {"name": f"burst-{i:03d}", "schedule": f"at({_iso(burst_at)})", "target": target},
            )
            for i in range(BURST_JOBS)
        ]
        creation_seconds = (_now_ms() - created_at) / 1000
        say(f"burst: {BURST_JOBS} x at({_iso(burst_at)}) created in {creation_seconds:.1f} s")
        _sleep_until(burst_at, deadline)
        _wait_arrivals(receiver, burst_ids, BURST_JOBS, burst_at + BURST_DRAIN_SECONDS * 1000)
        burst = _collect(
            runtime,
            receiver,
            f"{BURST_JOBS} due in one second",
            {job_id: [burst_at] for job_id in burst_ids},
        )
        burst.created_late = creation_seconds > BURST_LEAD_SECONDS - 1
        # Last, as it saturates the runtime: its backlog must not spill into another load.
        sustained, cpu = _sustained(
            runtime,
            receiver,
            "sustained",
            SUSTAINED_JOBS,
            SUSTAINED_SECONDS,
            SUSTAINED_DRAIN_SECONDS,
            target,
            say,
        )
        executed = max(1, sustained.expected_runs - sustained.not_started)
        return LagReport(
            runtime=runtime.banner(),
            sustained=sustained,
            burst=burst,
            light=light,
            runtime_cpu_ms_per_run=round(cpu * 1000 / executed, 1),
            wall_seconds=round(time.monotonic() - began, 1),
        )
    finally:
        killer.cancel()
        runtime.stop()
        receiver.shutdown()
        receiver.server_close()
