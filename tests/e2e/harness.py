"""Drives the local runtime as a black box: `python -m local` in a subprocess, over HTTP.

The e2e tests are the only ones that wait on the real clock: they poll with short sleeps and a
deadline."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from local.launch import child_env, free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
# The product's promise: a run starts within 2 s of its due time, and never early (the worker
# holds a message that arrives early; a few ms of clock rounding are tolerated).
MAX_START_LAG_MS = 2000
MAX_EARLY_MS = 50

T = TypeVar("T")


def parse_time(text: str) -> datetime:
    """An API time (RFC 3339 UTC with ms, `Z`)."""
    return datetime.fromisoformat(text)


def ms_between(earlier: str, later: str) -> int:
    return round((parse_time(later) - parse_time(earlier)).total_seconds() * 1000)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.2) -> T:
    """Call `probe` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class LocalRuntime:
    """A `python -m local` subprocess and an HTTP client for it."""

    def __init__(self, port: int | None = None, extra_env: dict[str, str] | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "local"],
            cwd=ROOT,
            env=child_env(self.port, extra_env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._readers = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.http = httpx.Client(base_url=self.url, timeout=10.0, trust_env=False)

    @staticmethod
    def _pump(stream: Any, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(["--- stdout", *self.stdout, "--- stderr", *self.stderr])

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.join_output()
                pytest.fail(f"local runtime exited with {self.proc.returncode}\n{self.output()}")
            try:
                if self.http.get("/v1/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        pytest.fail(f"local runtime not healthy after {timeout}s\n{self.output()}")

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGINT (Ctrl-C), then wait; returns the exit code."""
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"local runtime did not stop within {timeout}s of SIGINT\n{self.output()}")
        self.join_output()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.join_output()

    def join_output(self) -> None:
        for reader in self._readers:
            reader.join(5)

    def problems(self) -> str:
        """What the runtime logged at warning level and above (JSON lines, tracebacks)."""
        lines = [
            line
            for line in self.stdout + self.stderr
            if line.startswith("{") or "Traceback" in line or "Error" in line
        ]
        return "\n".join(lines[-20:])

    def expect(self, resp: httpx.Response, status: int) -> Any:
        """The JSON body of a response that must have `status`; on a surprise, the failure
        shows what the runtime logged."""
        assert resp.status_code == status, (
            f"{resp.request.method} {resp.request.url.path} -> {resp.status_code} {resp.text}\n"
            f"runtime problems:\n{self.problems()}"
        )
        return resp.json() if resp.content else None

    # ---- API helpers --------------------------------------------------------------------

    def create_job(self, body: dict[str, Any], tenant: str | None = None) -> dict[str, Any]:
        headers = {"X-Tenant-Id": tenant} if tenant else {}
        job: dict[str, Any] = self.expect(
            self.http.post("/v1/jobs", json=body, headers=headers), 201
        )
        return job

    def job(self, job_id: str) -> dict[str, Any]:
        job: dict[str, Any] = self.expect(self.http.get(f"/v1/jobs/{job_id}"), 200)
        return job

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        """Every run of a job, newest first."""
        runs: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            params = {"limit": "100", **({"next_token": token} if token else {})}
            page = self.expect(self.http.get(f"/v1/jobs/{job_id}/runs", params=params), 200)
            runs.extend(page["runs"])
            token = page.get("next_token")
            if not token:
                return runs

    def run_lines(self, job_id: str) -> list[str]:
        """The runtime's one-line run outcomes for a job."""
        return [line for line in self.stdout if f"job={job_id}" in line]


def start_runtime(**kwargs: Any) -> LocalRuntime:
    runtime = LocalRuntime(**kwargs)
    runtime.wait_healthy()
    return runtime


def started_lags_ms(runs: list[dict[str, Any]]) -> list[int]:
    """For each run that started, its first attempt's start minus its scheduled time."""
    return [
        ms_between(r["scheduled_for"], r["attempts"][0]["started_at"])
        for r in runs
        if r["attempts"]
    ]


def assert_punctual(runs: list[dict[str, Any]]) -> None:
    """Every run that started did so within MAX_START_LAG_MS of its due time, not early."""
    for run in runs:
        if not run["attempts"]:
            continue
        lag = ms_between(run["scheduled_for"], run["attempts"][0]["started_at"])
        assert -MAX_EARLY_MS <= lag <= MAX_START_LAG_MS, (run["run_id"], lag, run)
