"""The embedded AWS of the local runtime: moto's server in a child process that keeps
connections alive, answers `ready` the moment a delayed message becomes receivable, and goes
away with the runtime; and moto's patched hot spots, which must answer exactly as moto does.
On a real clock (SQS delays are whole seconds)."""

from __future__ import annotations

import http.client
import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local import moto_speedups
from local.embedded_aws import EmbeddedAws
from local.environment import REGION

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def aws() -> Iterator[EmbeddedAws]:
    embedded = EmbeddedAws("127.0.0.1")
    embedded.start()
    yield embedded
    embedded.stop()


def client(service: str, url: str) -> Any:
    return boto3.client(
        service,
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_embedded_aws_keeps_connections_alive(aws: EmbeddedAws) -> None:
    # GIVEN one HTTP connection to the embedded AWS
    connection = http.client.HTTPConnection(aws.host, aws.port, timeout=10)
    try:
        statuses, sockets = [], []
        # WHEN two SQS requests go over it
        for _ in range(2):
            connection.request("GET", "/?Action=ListQueues")
            response = connection.getresponse()
            response.read()
            statuses.append(response.status)
            sockets.append(connection.sock)
            assert response.getheader("Connection") != "close"
        # THEN both are answered on the same socket
        assert statuses == [200, 200]
        assert sockets[0] is not None and sockets[0] is sockets[1]
    finally:
        connection.close()


def test_ready_answers_when_a_delayed_message_becomes_receivable(aws: EmbeddedAws) -> None:
    # GIVEN a queue with a message delayed by one second, and an empty queue
    sqs = client("sqs", aws.url)
    url = sqs.create_queue(QueueName="ready-delayed")["QueueUrl"]
    empty_url = sqs.create_queue(QueueName="ready-empty")["QueueUrl"]
    arn, empty_arn = (
        sqs.get_queue_attributes(QueueUrl=u, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for u in (url, empty_url)
    )
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=1)
    sent = time.monotonic()
    # WHEN asked at once, and then asked to wait for it
    at_once = aws.ready([arn, empty_arn])
    waited = aws.ready([arn, empty_arn], wait_ms=1000)
    # THEN it is not ready at first, and ready once its delay is over (not before)
    assert set(at_once) == set()
    assert set(waited) == {arn}
    assert time.monotonic() - sent >= 0.9
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "later"


def test_ready_says_every_queue_when_it_cannot_tell(aws: EmbeddedAws) -> None:
    unknown = "arn:aws:sqs:us-east-1:123456789012:no-such-queue"
    assert set(aws.ready([unknown])) == {unknown}


def test_embedded_aws_stops_with_its_process_and_its_state() -> None:
    # GIVEN an embedded AWS with a table in it
    first = EmbeddedAws("127.0.0.1")
    first.start()
    pid = first.pid
    client("sqs", first.url).create_queue(QueueName="gone")
    # WHEN it is stopped
    first.stop()
    # THEN its process has exited, and a new one starts empty
    assert pid is not None and first.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    second = EmbeddedAws("127.0.0.1")
    second.start()
    try:
        assert client("sqs", second.url).list_queues().get("QueueUrls", []) == []
    finally:
        second.stop()


# ---- moto's patched hot spots answer as moto does --------------------------------------------

CLAIM = (
    "SET #t = if_not_exists(#t, :t), #s = :running, #c = if_not_exists(#c, :zero) + :one, "
    "#a = list_append(if_not_exists(#a, :empty), :attempt) REMOVE #r"
)
CLAIM_NAMES = {"#t": "tenant", "#s": "status", "#c": "count", "#a": "attempts", "#r": "reason"}
CLAIM_VALUES = {
    ":t": {"S": "acme"},
    ":running": {"S": "running"},
    ":zero": {"N": "0"},
    ":one": {"N": "1"},
    ":empty": {"L": []},
    ":attempt": {"L": [{"M": {"n": {"N": "1"}}}]},
    ":queued": {"S": "queued"},
}


def used(placeholders: dict[str, Any], expression: str) -> dict[str, Any]:
    return {k: v for k, v in placeholders.items() if k in expression}


def dynamodb_story() -> list[Any]:
    """Conditional upserts, a lost condition and invalid expressions, as the worker makes them;
    what moto answers to each."""
    db = boto3.client("dynamodb", region_name=REGION)
    db.create_table(
        TableName="runs",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    out: list[Any] = []
    cond = "attribute_not_exists(pk) OR #s = :queued"
    for _ in range(2):  # created, then refused (it is running now)
        try:
            out.append(
                db.update_item(
                    TableName="runs",
                    Key={"pk": {"S": "r1"}},
                    UpdateExpression=CLAIM,
                    ConditionExpression=cond,
                    ExpressionAttributeNames=used(CLAIM_NAMES, CLAIM + cond),
                    ExpressionAttributeValues=used(CLAIM_VALUES, CLAIM + cond),
                    ReturnValues="ALL_NEW",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )["Attributes"]
            )
        except ClientError as err:
            out.append((err.response["Error"]["Code"], err.response.get("Item")))
    for update in (CLAIM, "SET #s = :running SET #t = :t", "SET #s = = :running"):
        try:
            out.append(
                db.update_item(
                    TableName="runs",
                    Key={"pk": {"S": "r2"}},
                    UpdateExpression=update,
                    ExpressionAttributeNames=used(CLAIM_NAMES, update),
                    ExpressionAttributeValues=used(CLAIM_VALUES, update),
                    ReturnValues="ALL_NEW",
                )["Attributes"]
            )
        except ClientError as err:
            out.append(err.response["Error"]["Code"])
    out.append(db.get_item(TableName="runs", Key={"pk": {"S": "r1"}})["Item"])
    out.extend(query_story(db))
    out.extend(transaction_story(db))
    return out


def transaction_story(db: Any) -> list[Any]:
    """Transactions that commit, that are cancelled by a condition after an earlier write of
    theirs, and that are refused (one item twice): what they leave in both tables."""

    def put(pk: str, at: int, **extra: Any) -> dict[str, Any]:
        item = {"pk": {"S": pk}, "at": {"N": str(at)}, **extra}
        return {"Put": {"TableName": "jobs", "Item": item}}

    guard = {
        "Put": {
            "TableName": "runs",
            "Item": {"pk": {"S": "guard"}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }
    bump = {
        "Update": {
            "TableName": "jobs",
            "Key": {"pk": {"S": "b"}, "at": {"N": "10"}},
            "UpdateExpression": "SET #v = :v",
            "ExpressionAttributeNames": {"#v": "v"},
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        }
    }
    drop = {"Delete": {"TableName": "jobs", "Key": {"pk": {"S": "a"}, "at": {"N": "2"}}}}
    out: list[Any] = []
    for items in (
        [put("n", 1), guard, bump],  # commits
        [put("n2", 1), drop, bump, guard],  # the guard exists now: cancelled, nothing stays
        [put("n3", 1), put("n3", 1)],  # one item twice: refused
        [drop, put("b", 10, v={"N": "7"})],  # commits
    ):
        try:
            db.transact_write_items(TransactItems=items)
            out.append("committed")
        except ClientError as err:
            out.append((err.response["Error"]["Code"], err.response.get("CancellationReasons")))
    for table in ("jobs", "runs"):
        answer = db.scan(TableName=table)
        answer.pop("ResponseMetadata", None)
        out.append(answer)
    return out


def query_story(db: Any) -> list[Any]:
    """Queries (table key, index, backwards, paged) and a scan over a table with a sort key."""
    db.create_table(
        TableName="jobs",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "at", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "N"},
            {"AttributeName": "bucket", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "due",
                "KeySchema": [
                    {"AttributeName": "bucket", "KeyType": "HASH"},
                    {"AttributeName": "at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for i, (pk, at) in enumerate([("b", 10), ("a", 2), ("b", 9), ("a", 100), ("c", 1), ("b", 11)]):
        item = {"pk": {"S": pk}, "at": {"N": str(at)}, "bucket": {"S": f"m{i % 2}"}}
        db.put_item(TableName="jobs", Item=item)
    out: list[Any] = []
    for kwargs in (
        {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "b"}}},
        {
            "KeyConditionExpression": "pk = :p AND #a > :n",
            "ExpressionAttributeNames": {"#a": "at"},
            "ExpressionAttributeValues": {":p": {"S": "a"}, ":n": {"N": "5"}},
            "ScanIndexForward": False,
        },
        {
            "IndexName": "due",
            "KeyConditionExpression": "#b = :b",
            "ExpressionAttributeNames": {"#b": "bucket"},
            "ExpressionAttributeValues": {":b": {"S": "m0"}},
            "Limit": 2,
        },
    ):
        out.append(db.query(TableName="jobs", **kwargs))
    out.append(db.scan(TableName="jobs"))
    for answer in out:
        answer.pop("ResponseMetadata", None)
    return out


@pytest.fixture
def patched_moto() -> Iterator[None]:
    assert moto_speedups.apply()
    yield
    moto_speedups.restore()


def test_dynamodb_answers_the_same_with_the_speedups() -> None:
    # GIVEN what plain moto answers
    with mock_aws():
        plain = dynamodb_story()
    # WHEN the same requests are made to the patched moto (twice: parsed, then cached)
    assert moto_speedups.apply()
    try:
        with mock_aws():
            patched = dynamodb_story()
        with mock_aws():
            cached = dynamodb_story()
    finally:
        moto_speedups.restore()
    # THEN the answers are identical, refusals included
    assert patched == plain
    assert cached == plain
    assert plain[1][0] == "ConditionalCheckFailedException"
    assert plain[3:5] == ["ValidationException", "ValidationException"]
    assert [a if isinstance(a, str) else a[0] for a in plain[-6:-2]] == [
        "committed",
        "TransactionCanceledException",
        "ValidationException",
        "committed",
    ]


def test_sqs_delays_and_visibility_hold_with_the_speedups(patched_moto: None) -> None:
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
        # GIVEN a message delayed by one second
        sqs.send_message(QueueUrl=url, MessageBody="m", DelaySeconds=1)
        # THEN it is not received before its delay, and is after
        assert sqs.receive_message(QueueUrl=url).get("Messages") is None
        time.sleep(1.05)
        assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "m"
        # AND it is invisible for its visibility timeout, then received again
        assert sqs.receive_message(QueueUrl=url).get("Messages") is None
        time.sleep(1.05)
        assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "m"


def test_speedups_restore_puts_moto_back() -> None:
    from moto.dynamodb.parsing import validators
    from moto.sqs.models import Message

    before = (Message.__dict__["visible"], validators.deepcopy)
    assert moto_speedups.apply()
    assert Message.__dict__["visible"] is not before[0]
    moto_speedups.restore()
    assert (Message.__dict__["visible"], validators.deepcopy) == before
    assert "traverse" not in vars(validators.ActionCountValidator)
