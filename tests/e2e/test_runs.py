"""One-shot jobs end to end through `python -m local`: now, at(), an HTTP target."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from e2e.harness import MAX_EARLY_MS, MAX_START_LAG_MS, LocalRuntime, ms_between, wait_for

pytestmark = pytest.mark.e2e

ECHO = {"type": "handler", "name": "echo"}


def finished_runs(runtime: LocalRuntime, job_id: str, count: int = 1) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | None:
        runs = runtime.runs(job_id)
        done = [r for r in runs if r["status"] not in ("queued", "running", "retrying")]
        return runs if len(done) >= count else None

    return wait_for(f"{count} finished run(s) of {job_id}", probe, timeout=10)


def test_now_job_runs_once_and_completes(runtime: LocalRuntime) -> None:
    # GIVEN a job that runs now with the echo handler
    job = runtime.create_job(
        {"name": "e2e-now", "schedule": "now", "target": ECHO, "payload": {"hi": 1}}
    )
    # WHEN its run finishes
    runs = finished_runs(runtime, job["job_id"])
    # THEN exactly one run succeeded, promptly, and the job completed
    assert [r["status"] for r in runs] == ["succeeded"], runs
    assert runs[0]["trigger"] == "schedule"
    attempt = runs[0]["attempts"][0]
    assert attempt["status"] == "succeeded"
    assert ms_between(runs[0]["scheduled_for"], attempt["started_at"]) <= MAX_START_LAG_MS
    wait_for(
        "the job to complete",
        lambda: runtime.job(job["job_id"])["status"] == "completed",
        timeout=5,
    )
    # AND the runtime printed one line for the run
    lines = wait_for("the run line", lambda: runtime.run_lines(job["job_id"]), timeout=5)
    assert len(lines) == 1, lines
    assert "succeeded" in lines[0]
    assert f"run={runs[0]['run_id']}" in lines[0]


def test_banner_shows_the_url_and_a_curl_example(runtime: LocalRuntime) -> None:
    banner = "\n".join(runtime.stdout[:6])
    assert f"Punctual is running at {runtime.url}" in banner, banner
    assert f"curl -s -X POST {runtime.url}/v1/jobs -H 'Content-Type: application/json'" in banner


def test_permanent_failure_is_one_failed_line(runtime: LocalRuntime) -> None:
    # GIVEN a job whose handler fails for good
    job = runtime.create_job(
        {
            "name": "e2e-fail",
            "schedule": "now",
            "target": {"type": "handler", "name": "fail"},
            "payload": {"permanent": True},
        }
    )
    # WHEN it has run
    runs = finished_runs(runtime, job["job_id"])
    # THEN the run failed at once, the job failed, and the runtime printed one line saying so
    assert [r["status"] for r in runs] == ["failed"], runs
    assert len(runs[0]["attempts"]) == 1
    lines = wait_for("the run line", lambda: runtime.run_lines(job["job_id"]), timeout=5)
    assert len(lines) == 1 and " failed " in lines[0] and "error=" in lines[0], lines
    wait_for("the job to fail", lambda: runtime.job(job["job_id"])["status"] == "failed", 5)
    # AND the runtime's stdout holds run lines only (no JSON records, no EMF metrics)
    assert not [line for line in runtime.stdout if line.startswith("{")], runtime.stdout


def test_at_job_starts_on_time(runtime: LocalRuntime) -> None:
    # GIVEN a job at a whole second about 4 s ahead
    due = (datetime.now(UTC) + timedelta(seconds=4.5)).replace(microsecond=0)
    schedule = f"at({due.strftime('%Y-%m-%dT%H:%M:%S')}Z)"
    job = runtime.create_job({"name": "e2e-at", "schedule": schedule, "target": ECHO})
    assert job["status"] == "active"
    # WHEN it has run
    runs = finished_runs(runtime, job["job_id"])
    # THEN once, for the due time, started within 2 s of it and not before it
    assert [r["status"] for r in runs] == ["succeeded"], runs
    run = runs[0]
    assert datetime.fromisoformat(run["scheduled_for"]) == due
    lag = ms_between(run["scheduled_for"], run["attempts"][0]["started_at"])
    assert -MAX_EARLY_MS <= lag <= MAX_START_LAG_MS, lag
    print(f"at() start lag: {lag} ms")
    wait_for(
        "the job to complete",
        lambda: runtime.job(job["job_id"])["status"] == "completed",
        timeout=5,
    )
    assert len(runtime.runs(job["job_id"])) == 1


def test_a_long_run_does_not_hold_up_others(runtime: LocalRuntime) -> None:
    # GIVEN a run that sleeps 3 s, started first
    slow = runtime.create_job(
        {
            "name": "e2e-slow",
            "schedule": "now",
            "target": {"type": "handler", "name": "sleep"},
            "payload": {"seconds": 3},
        }
    )
    wait_for(
        "the slow run to start",
        lambda: [r for r in runtime.runs(slow["job_id"]) if r["status"] == "running"],
        timeout=5,
        interval=0.05,
    )
    # WHEN another job is due meanwhile
    quick = runtime.create_job({"name": "e2e-quick", "schedule": "now", "target": ECHO})
    # THEN it runs at once, while the slow one is still running
    runs = finished_runs(runtime, quick["job_id"])
    assert runs[0]["status"] == "succeeded"
    lag = ms_between(runs[0]["scheduled_for"], runs[0]["attempts"][0]["started_at"])
    assert lag <= MAX_START_LAG_MS, lag
    assert runtime.runs(slow["job_id"])[0]["status"] == "running"
    # AND the slow one finishes too
    slow_runs = finished_runs(runtime, slow["job_id"])
    assert slow_runs[0]["status"] == "succeeded", slow_runs
    assert slow_runs[0]["attempts"][0]["duration_ms"] >= 3000


class Receiver(BaseHTTPRequestHandler):
    """Records every request it gets and answers 200."""

    received: list[dict[str, Any]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.received.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("RecordingReceiver", (Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


def test_http_target_gets_payload_and_idempotency_key(
    runtime: LocalRuntime, receiver: tuple[str, list[dict[str, Any]]]
) -> None:
    # GIVEN a job that POSTs to a loopback receiver now
    url, received = receiver
    payload = {"report": "sales", "n": 3}
    job = runtime.create_job(
        {
            "name": "e2e-http",
            "schedule": "now",
            "target": {"type": "http", "url": url, "method": "POST"},
            "payload": payload,
        }
    )
    # WHEN the run finishes
    runs = finished_runs(runtime, job["job_id"])
    # THEN it succeeded and the receiver got the payload with the run's idempotency key
    assert [r["status"] for r in runs] == ["succeeded"], runs
    assert len(received) == 1, received
    request = received[0]
    assert request["method"] == "POST"
    assert request["path"] == "/hook"
    assert json.loads(request["body"]) == payload
    assert request["headers"]["idempotency-key"] == f"{job['job_id']}:{runs[0]['run_id']}"


def test_tenants_are_isolated(runtime: LocalRuntime) -> None:
    # GIVEN a job of tenant a
    job = runtime.create_job(
        {"name": "e2e-tenant", "schedule": "rate(1 hour)", "target": ECHO}, tenant="tenant-a"
    )
    path = f"/v1/jobs/{job['job_id']}"
    # THEN tenant b cannot see, list or change it
    other = {"X-Tenant-Id": "tenant-b"}
    resp = runtime.http.get(path, headers=other)
    assert resp.status_code == 404, resp.text
    assert resp.json()["error"]["code"] == "not_found"
    assert runtime.http.get(f"{path}/runs", headers=other).status_code == 404
    assert runtime.http.post(f"{path}/pause", headers=other).status_code == 404
    listed = runtime.http.get("/v1/jobs", headers=other).json()["jobs"]
    assert job["job_id"] not in [j["job_id"] for j in listed]
    # AND the default tenant (no header) does not see it either
    assert runtime.http.get(path).status_code == 404
    # WHILE tenant a does, and can cancel it
    assert runtime.http.get(path, headers={"X-Tenant-Id": "tenant-a"}).status_code == 200
    resp = runtime.http.post(f"{path}/cancel", headers={"X-Tenant-Id": "tenant-a"})
    assert resp.status_code == 200
    assert resp.json()["status"] == "cancelled"


def test_openapi_document_is_served(runtime: LocalRuntime) -> None:
    resp = runtime.http.get("/v1/openapi.json")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/json")
    doc = resp.json()
    assert doc["openapi"].startswith("3.")
    assert "/v1/jobs" in doc["paths"]


def test_bad_cron_is_a_400_naming_schedule(runtime: LocalRuntime) -> None:
    resp = runtime.http.post(
        "/v1/jobs", json={"name": "e2e-bad", "schedule": "cron(61 * * * *)", "target": ECHO}
    )
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "validation_error"
    assert "schedule" in [d["field"] for d in error["details"]]


def test_unknown_route_and_malformed_body_are_client_errors(runtime: LocalRuntime) -> None:
    assert runtime.http.get("/v1/nope").status_code == 404
    resp = runtime.http.post(
        "/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 400, resp.text
    started = time.monotonic()
    assert runtime.http.get("/v1/health").json() == {"status": "ok"}
    assert time.monotonic() - started < 1.0
