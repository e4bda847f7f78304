"""Integration tests of shared.targets: AWS targets against moto, HTTP against a loopback server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from moto import mock_aws

from shared.aws import AwsClients
from shared.clock import ManualClock
from shared.models.job import EventBridgeTarget, HttpTarget, LambdaTarget, SnsTarget, SqsTarget
from shared.settings import Settings
from shared.targets import (
    Delivery,
    PermanentDeliveryError,
    RetryableDeliveryError,
    build_envelope,
    deliver,
)
from shared.targets.sqs import deduplication_id

START_MS = 1_763_802_000_000  # 2025-11-22T09:00:00.000Z
ACCOUNT = "123456789012"


def make_delivery(**changes: Any) -> Delivery:
    values: dict[str, Any] = {
        "job_id": "job-1",
        "run_id": "run-1",
        "tenant_id": "tenant-1",
        "attempt": 1,
        "scheduled_for_ms": START_MS,
        "idempotency_key": "job-1:run-1",
        "payload": {"hello": "world"},
        "timeout_seconds": 5,
    }
    values.update(changes)
    return Delivery(**values)


# --- AWS (moto in-process) --------------------------------------------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    """Clients talking to moto, with fake credentials so nothing can reach real AWS."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("PUNCTUAL_AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield AwsClients(Settings())


def receive_one(clients: AwsClients, queue_url: str) -> dict[str, Any]:
    response = clients.sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=1,
        MessageAttributeNames=["All"],
        AttributeNames=["All"],
        WaitTimeSeconds=0,
    )
    messages = response.get("Messages", [])
    assert len(messages) == 1, response
    return dict(messages[0])


def queue_arn_of(clients: AwsClients, queue_url: str) -> str:
    attributes = clients.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]


def test_deliver_sqs_sends_envelope_with_idempotency_attribute(aws: AwsClients) -> None:
    # GIVEN a standard queue
    queue_url = aws.sqs.create_queue(QueueName="receiver")["QueueUrl"]

    # WHEN a delivery is made
    result = deliver(
        SqsTarget(queue_url=queue_url), make_delivery(), clients=aws, clock=ManualClock(START_MS)
    )

    # THEN the message body is the envelope and the key is an attribute
    message = receive_one(aws, queue_url)
    assert json.loads(message["Body"]) == build_envelope(make_delivery())
    assert message["MessageAttributes"]["Idempotency-Key"] == {
        "DataType": "String",
        "StringValue": "job-1:run-1",
    }
    assert result.detail == "sqs_sent"
    assert result.output == {"message_id": message["MessageId"]}


def test_deliver_sqs_fifo_sets_group_and_deduplicates_by_run(aws: AwsClients) -> None:
    # GIVEN a FIFO queue without content-based deduplication
    created = aws.sqs.create_queue(QueueName="receiver.fifo", Attributes={"FifoQueue": "true"})
    queue_url = created["QueueUrl"]
    target = SqsTarget(queue_url=queue_url)

    # WHEN the same run is delivered twice (a retried attempt)
    deliver(target, make_delivery(attempt=1), clients=aws, clock=ManualClock(START_MS))
    deliver(target, make_delivery(attempt=2), clients=aws, clock=ManualClock(START_MS))

    # THEN one message arrives, grouped by job and de-duplicated by run
    message = receive_one(aws, queue_url)
    assert message["Attributes"]["MessageGroupId"] == "job-1"
    assert message["Attributes"]["MessageDeduplicationId"] == deduplication_id("job-1:run-1")
    assert json.loads(message["Body"])["attempt"] == 1
    again = aws.sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0, VisibilityTimeout=0)
    assert again.get("Messages", []) == []


def test_deliver_sqs_missing_queue_is_permanent(aws: AwsClients) -> None:
    # GIVEN a queue URL that does not exist
    target = SqsTarget(queue_url=f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/missing")

    # WHEN a delivery is made
    with pytest.raises(PermanentDeliveryError) as caught:
        deliver(target, make_delivery(), clients=aws, clock=ManualClock(START_MS))

    # THEN it fails for good with the AWS code
    assert caught.value.code in {"aws_NonExistentQueue", "aws_QueueDoesNotExist"}


def test_deliver_sns_publishes_envelope_with_idempotency_attribute(aws: AwsClients) -> None:
    # GIVEN a topic with a raw-delivery SQS subscription
    topic_arn = aws.sns.create_topic(Name="receiver")["TopicArn"]
    queue_url = aws.sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    queue_arn = queue_arn_of(aws, queue_url)
    aws.sns.subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )

    # WHEN a delivery is made
    result = deliver(
        SnsTarget(topic_arn=topic_arn), make_delivery(), clients=aws, clock=ManualClock(START_MS)
    )

    # THEN the subscriber gets the envelope and the key attribute
    message = receive_one(aws, queue_url)
    assert json.loads(message["Body"]) == build_envelope(make_delivery())
    assert message["MessageAttributes"]["Idempotency-Key"]["StringValue"] == "job-1:run-1"
    assert result.detail == "sns_published"


def test_deliver_sns_missing_topic_is_permanent(aws: AwsClients) -> None:
    # GIVEN a topic that does not exist
    target = SnsTarget(topic_arn=f"arn:aws:sns:us-east-1:{ACCOUNT}:missing")

    # WHEN a delivery is made
    with pytest.raises(PermanentDeliveryError) as caught:
        deliver(target, make_delivery(), clients=aws, clock=ManualClock(START_MS))

    # THEN it fails for good
    assert caught.value.code == "aws_NotFound"


def test_deliver_eventbridge_event_detail_carries_key(aws: AwsClients) -> None:
    # GIVEN a bus with a rule forwarding Punctual events to a queue
    aws.events.create_event_bus(Name="jobs")
    queue_url = aws.sqs.create_queue(QueueName="bus-listener")["QueueUrl"]
    queue_arn = queue_arn_of(aws, queue_url)
    aws.events.put_rule(
        Name="to-queue", EventBusName="jobs", EventPattern=json.dumps({"source": ["punctual"]})
    )
    aws.events.put_targets(
        Rule="to-queue", EventBusName="jobs", Targets=[{"Id": "queue", "Arn": queue_arn}]
    )

    # WHEN a delivery is made
    result = deliver(
        EventBridgeTarget(event_bus_name="jobs"),
        make_delivery(),
        clients=aws,
        clock=ManualClock(START_MS),
    )

    # THEN the forwarded event has the envelope as detail
    event = json.loads(receive_one(aws, queue_url)["Body"])
    assert event["source"] == "punctual"
    assert event["detail-type"] == "Punctual Job"
    assert event["detail"] == build_envelope(make_delivery())
    assert event["detail"]["idempotency_key"] == "job-1:run-1"
    assert result.detail == "eventbridge_put"


def test_deliver_lambda_missing_function_is_permanent(aws: AwsClients) -> None:
    # GIVEN a function that does not exist (moto cannot run function code anyway)
    target = LambdaTarget(function_arn=f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:missing")

    # WHEN a delivery is made
    with pytest.raises(PermanentDeliveryError) as caught:
        deliver(target, make_delivery(), clients=aws, clock=ManualClock(START_MS))

    # THEN it fails for good
    assert caught.value.code == "aws_ResourceNotFoundException"


# --- HTTP (real loopback server) --------------------------------------------------------------


@dataclass
class Receiver:
    """A loopback HTTP server answering with a chosen status and recording what it got."""

    base_url: str
    status: int = 200
    body: bytes = b'{"ok": true}'
    stall_seconds: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A ThreadingHTTPServer on 127.0.0.1, port chosen by the OS, shut down after the test."""
    state: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            rec = state["receiver"]
            length = int(self.headers.get("Content-Length") or 0)
            rec.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": self.rfile.read(length) if length else b"",
                }
            )
            if rec.stall_seconds:
                # Hold the answer back; released at teardown so the thread ends promptly.
                rec.release.wait(rec.stall_seconds)
            self.send_response(rec.status)
            if 300 <= rec.status < 400:
                self.send_header("Location", f"{rec.base_url}/elsewhere")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(rec.body)))
            self.end_headers()
            self.wfile.write(rec.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep pytest output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    rec = Receiver(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    state["receiver"] = rec
    try:
        yield rec
    finally:
        rec.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def deliver_http(target: HttpTarget, delivery: Delivery | None = None) -> Any:
    # HTTP needs no AWS client; an unused AwsClients is never touched.
    return deliver(
        target,
        delivery or make_delivery(),
        clients=AwsClients(Settings()),
        clock=ManualClock(START_MS),
    )


def test_deliver_http_sends_body_and_headers(receiver: Receiver) -> None:
    # GIVEN a receiver answering 200 and a target with its own header
    target = HttpTarget(url=f"{receiver.base_url}/hook", headers={"X-Custom": "yes"})

    # WHEN a delivery is made
    result = deliver_http(target)

    # THEN the payload and the metadata arrived
    (request,) = receiver.requests
    assert request["method"] == "POST"
    assert request["path"] == "/hook"
    assert json.loads(request["body"]) == {"hello": "world"}
    headers = request["headers"]
    assert headers["idempotency-key"] == "job-1:run-1"
    assert headers["x-punctual-job-id"] == "job-1"
    assert headers["x-punctual-run-id"] == "run-1"
    assert headers["x-punctual-attempt"] == "1"
    assert headers["x-punctual-scheduled-for"] == "2025-11-22T09:00:00.000Z"
    assert headers["content-type"] == "application/json"
    assert headers["x-custom"] == "yes"
    assert result.detail == "http_200"
    assert result.output == {"status": 200}


def test_deliver_http_get_sends_no_body(receiver: Receiver) -> None:
    # GIVEN a GET target
    target = HttpTarget(url=f"{receiver.base_url}/poll", method="GET")

    # WHEN a delivery is made
    deliver_http(target)

    # THEN no body was sent but the key was
    (request,) = receiver.requests
    assert request["body"] == b""
    assert "content-length" not in request["headers"]
    assert request["headers"]["idempotency-key"] == "job-1:run-1"


@pytest.mark.parametrize(
    ("status", "error_cls"),
    [
        (503, RetryableDeliveryError),
        (500, RetryableDeliveryError),
        (429, RetryableDeliveryError),
        (408, RetryableDeliveryError),
        (404, PermanentDeliveryError),
        (400, PermanentDeliveryError),
        (302, PermanentDeliveryError),
    ],
)
def test_deliver_http_error_status_is_classified(
    receiver: Receiver, status: int, error_cls: type[Exception]
) -> None:
    # GIVEN a receiver answering with an error status and a body
    receiver.status = status
    receiver.body = b"receiver says no"

    # WHEN a delivery is made
    with pytest.raises(error_cls) as caught:
        deliver_http(HttpTarget(url=f"{receiver.base_url}/hook"))

    # THEN the code names the status, the message quotes the body, redirects are not followed
    assert caught.value.code == f"http_{status}"  # type: ignore[attr-defined]
    assert "receiver says no" in caught.value.message  # type: ignore[attr-defined]
    assert [r["path"] for r in receiver.requests] == ["/hook"]


def test_deliver_http_no_answer_within_timeout_is_retryable(receiver: Receiver) -> None:
    # GIVEN a receiver that does not answer for longer than the timeout
    receiver.stall_seconds = 5

    # WHEN a delivery with a 0.5 s timeout is made
    with pytest.raises(RetryableDeliveryError) as caught:
        deliver_http(
            HttpTarget(url=f"{receiver.base_url}/slow"), make_delivery(timeout_seconds=0.5)
        )

    # THEN it is a retryable timeout
    assert caught.value.code == "timeout"


def test_deliver_http_closed_port_is_retryable_connection_error() -> None:
    # GIVEN a port nobody listens on (bound then closed)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    # WHEN a delivery is made
    with pytest.raises(RetryableDeliveryError) as caught:
        deliver_http(HttpTarget(url=f"http://127.0.0.1:{port}/hook"))

    # THEN it is a retryable connection error
    assert caught.value.code == "connection_error"
