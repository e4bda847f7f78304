"""Starting and stopping the local runtime: a clear failure when its port is taken or its
settings are wrong, and the in-process use tests can make of it (start, run, stop, again)."""

from __future__ import annotations

import io
import socket
import subprocess
import sys

import httpx
import pytest

from e2e.harness import ROOT, LocalRuntime, wait_for

pytestmark = pytest.mark.e2e


def test_busy_port_is_a_one_line_error() -> None:
    # GIVEN a port someone else listens on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # WHEN the runtime is started on it
        runtime = LocalRuntime(port=port)
        try:
            code = runtime.proc.wait(30)
        except subprocess.TimeoutExpired:
            runtime.kill()
            pytest.fail(f"the runtime kept running on a busy port\n{runtime.output()}")
        runtime.join_output()
    # THEN it exits non-zero with one clear line
    assert code == 1, runtime.output()
    errors = [line for line in runtime.stderr if line.strip()]
    assert len(errors) == 1, runtime.output()
    assert f"port {port}" in errors[0] and "in use" in errors[0], errors


def test_bad_port_setting_is_a_one_line_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "local"],
        cwd=ROOT,
        env={"PUNCTUAL_PORT": "eighty", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "PUNCTUAL_PORT" in result.stderr


def test_runtime_in_process_starts_fresh_each_time() -> None:
    from local.runtime import Runtime, RuntimeConfig

    echo = {"type": "handler", "name": "echo"}
    for round_ in range(2):
        out = io.StringIO()
        with Runtime(RuntimeConfig(port=0, tick_seconds=60), out=out) as runtime:
            client = httpx.Client(base_url=runtime.url, trust_env=False, timeout=10)
            # GIVEN nothing from the previous round
            assert client.get("/v1/jobs").json()["jobs"] == [], round_
            # WHEN a job runs now
            created = client.post("/v1/jobs", json={"name": "x", "schedule": "now", "target": echo})
            assert created.status_code == 201, created.text
            job_id = created.json()["job_id"]
            # THEN it succeeds, and a run line is written to `out`
            wait_for(
                "the run",
                lambda: [
                    r
                    for r in client.get(f"/v1/jobs/{job_id}/runs").json()["runs"]  # noqa: B023
                    if r["status"] == "succeeded"
                ],
                timeout=10,
            )
            wait_for("the run line", lambda: f"job={job_id}" in out.getvalue(), 5)  # noqa: B023
            client.close()
