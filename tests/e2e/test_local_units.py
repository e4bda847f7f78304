"""In-process checks of the local runtime's parts that the black-box tests cannot pin down:
queue priority, partial batch failures, the SQS event shape, the HTTP proxy's translation and
the run line. Fast: no subprocess, no real AWS emulator."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import httpx
import pytest

from local.http import make_api_server
from local.logs import run_line
from local.pollers import (
    FORCED_RECEIVE_SECONDS,
    READY_WAIT_MS,
    QueueSource,
    SqsPollers,
    sqs_event,
)

pytestmark = pytest.mark.e2e

ARN = "arn:aws:sqs:us-east-1:123456789012:punctual-{}"


def source(priority: str) -> QueueSource:
    return QueueSource(priority, f"http://sqs/{priority}", ARN.format(priority), "us-east-1")


class FakeSqs:
    """Three queues of messages; records receives and deletes."""

    def __init__(self, messages: dict[str, list[str]]) -> None:
        self.queues = {f"http://sqs/{p}": list(bodies) for p, bodies in messages.items()}
        self.received: list[str] = []
        self.deleted: list[str] = []
        self.lock = threading.Lock()

    def receive_message(self, QueueUrl: str, MaxNumberOfMessages: int, **_: Any) -> Any:
        with self.lock:
            queue = self.queues.get(QueueUrl, [])
            batch, self.queues[QueueUrl] = queue[:MaxNumberOfMessages], queue[MaxNumberOfMessages:]
            self.received.extend(batch)
        return {
            "Messages": [
                {
                    "MessageId": body,
                    "ReceiptHandle": f"rh-{body}",
                    "Body": body,
                    "MD5OfBody": "md5",
                    "Attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
                    "MessageAttributes": {
                        "Idempotency-Key": {"StringValue": "k", "DataType": "String"}
                    },
                }
                for body in batch
            ]
        }

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        with self.lock:
            self.deleted.extend(e["ReceiptHandle"].removeprefix("rh-") for e in Entries)
        return {"Successful": [], "Failed": []}


def run_pollers(sqs: FakeSqs, invoke: Any, expected: int, **kwargs: Any) -> None:
    pollers = SqsPollers(
        sqs,  # type: ignore[arg-type]
        [source("high"), source("medium"), source("low")],
        invoke,
        **kwargs,
    )
    pollers.start()
    deadline = time.monotonic() + 5
    while len(sqs.received) < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pollers.stop() == 0


def test_high_is_served_before_medium_before_low() -> None:
    # GIVEN messages on every queue, and one worker thread taking one message at a time
    sqs = FakeSqs({"low": ["l1", "l2"], "medium": ["m1", "m2"], "high": ["h1", "h2"]})
    order: list[str] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        order.extend(r["body"] for r in event["Records"])
        return {"batchItemFailures": []}

    # WHEN the pollers drain them
    run_pollers(sqs, invoke, 6, concurrency=1, batch_size=1)
    # THEN in priority order, and all were deleted
    assert order == ["h1", "h2", "m1", "m2", "l1", "l2"]
    assert sorted(sqs.deleted) == sorted(order)


def test_ready_hint_spares_receives_and_every_queue_is_still_received_from() -> None:
    # GIVEN messages on high and low, and a hint that only low has one
    sqs = FakeSqs({"high": ["h1"], "low": ["l1"]})
    waits: list[int] = []

    def ready(arns: Any, wait_ms: int) -> set[str]:
        waits.append(wait_ms)
        time.sleep(wait_ms / 10_000)  # a real hint waits up to wait_ms for a message
        return {ARN.format("low")}

    pollers = SqsPollers(
        sqs,  # type: ignore[arg-type]
        [source("high"), source("medium"), source("low")],
        lambda event: {"batchItemFailures": []},
        ready=ready,
    )
    pollers.start()
    try:
        # WHEN the pollers run
        deadline = time.monotonic() + 5
        while "l1" not in sqs.received and time.monotonic() < deadline:
            time.sleep(0.01)
        # THEN only the queue said to be ready is received from, with the hint waiting...
        assert sqs.received == ["l1"]
        assert READY_WAIT_MS in waits
        # ...and a queue the hint misses is still received from within FORCED_RECEIVE_SECONDS
        deadline = time.monotonic() + FORCED_RECEIVE_SECONDS + 2
        while "h1" not in sqs.received and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sqs.received == ["l1", "h1"]
    finally:
        assert pollers.stop() == 0


def test_failed_items_are_not_deleted_and_a_failed_invocation_deletes_nothing() -> None:
    sqs = FakeSqs({"medium": ["ok", "bad"], "low": ["boom"]})

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        bodies = [r["body"] for r in event["Records"]]
        if "boom" in bodies:
            raise RuntimeError("the function crashed")
        return {"batchItemFailures": [{"itemIdentifier": "bad"}]}

    run_pollers(sqs, invoke, 3)
    assert sqs.deleted == ["ok"]


def test_sqs_event_is_shaped_like_the_event_source_mapping() -> None:
    sqs = FakeSqs({"high": ["b"]})
    messages = sqs.receive_message(QueueUrl="http://sqs/high", MaxNumberOfMessages=10)
    event = sqs_event(source("high"), messages["Messages"])
    (record,) = event["Records"]
    assert record == {
        "messageId": "b",
        "receiptHandle": "rh-b",
        "body": "b",
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1"},
        "messageAttributes": {
            "Idempotency-Key": {
                "stringValue": "k",
                "binaryValue": None,
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": "String",
            }
        },
        "md5OfBody": "md5",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:punctual-high",
        "awsRegion": "us-east-1",
    }


@pytest.fixture
def proxy() -> Any:
    """The HTTP proxy over a fake API function that echoes the event it got."""
    seen: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(event)
        if event["path"] == "/binary":
            return {"statusCode": 200, "body": "AAEC", "isBase64Encoded": True, "headers": {}}
        return {
            "statusCode": 201,
            "multiValueHeaders": {"Content-Type": ["application/json"], "X-Two": ["a", "b"]},
            "body": json.dumps({"method": event["httpMethod"]}),
            "isBase64Encoded": False,
        }

    server = make_api_server("127.0.0.1", 0, invoke)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = httpx.Client(base_url=f"http://127.0.0.1:{server.port}", trust_env=False)
    yield client, seen
    client.close()
    server.shutdown()
    server.server_close()


def test_proxy_builds_rest_events_and_writes_results_back(proxy: Any) -> None:
    client, seen = proxy
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        resp = client.request(
            method,
            "/v1/jobs?status=active&limit=5",
            content=b'{"a": 1}',
            headers={"X-Tenant-Id": "t"},
        )
        assert resp.status_code == 201
        assert resp.json() == {"method": method}
        assert resp.headers.get_list("x-two") == ["a", "b"]
    event = seen[-1]
    assert event["path"] == "/v1/jobs"
    assert event["queryStringParameters"] == {"status": "active", "limit": "5"}
    assert event["body"] == '{"a": 1}'
    assert event["headers"]["X-Tenant-Id"] == "t"
    binary = client.get("/binary")
    assert binary.content == b"\x00\x01\x02"


def test_run_line_is_one_concise_line() -> None:
    record = logging.LogRecord("punctual", logging.INFO, __file__, 1, "run_finished", None, None)
    record.__dict__.update(
        {
            "job_id": "j1",
            "run_id": "2026-11-22T09:00:00.000Z",
            "attempt": 2,
            "tenant_id": "default",
            "status": "retrying",
            "duration_ms": 12,
            "lag_ms": 40,
            "error_code": "http_503",
            "reason": None,
        }
    )
    line = run_line(record)
    assert "\n" not in line
    for part in ("run retrying", "job=j1", "run=2026-11-22T09:00:00.000Z", "attempt=2"):
        assert part in line
    assert "lag=40ms" in line and "duration=12ms" in line and "error=http_503" in line
    assert "reason" not in line


def test_worker_record_pool_is_sized_for_every_concurrent_invocation() -> None:
    import functions.worker.handler as worker_module
    from local.lambdas import RECORD_THREADS_PER_INSTANCE, LocalLambdas

    saved = worker_module.RECORD_THREADS
    try:
        # WHEN the runtime runs 3 worker invocations side by side
        LocalLambdas(worker_concurrency=3)
        # THEN their records get the threads 3 instances would have, not one instance's
        assert worker_module.RECORD_THREADS == 3 * RECORD_THREADS_PER_INSTANCE
    finally:
        worker_module.RECORD_THREADS = saved


def test_local_defaults_prefer_holding_to_lateness_and_a_short_horizon() -> None:
    from local.runtime import local_app_defaults

    # GIVEN the local tick every 5 s
    defaults = local_app_defaults(5.0)
    # THEN messages are never sent to land late (a held message costs nothing locally), and
    # the horizon and margin are a few ticks
    assert defaults["PUNCTUAL_SEND_LATE_TOLERANCE_MS"] == "0"
    assert defaults["PUNCTUAL_HORIZON_SECONDS"] == "30"
    assert defaults["PUNCTUAL_DISPATCH_MARGIN_SECONDS"] == "15"
