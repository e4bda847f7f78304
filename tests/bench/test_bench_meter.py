"""The billing meter on moto: what it bills for the writes, reads and sends Punctual makes."""

from __future__ import annotations

import boto3
import pytest

from bench.meter import Meter


@pytest.fixture
def meter(settings):
    db = boto3.client("dynamodb", region_name="us-east-1")
    m = Meter(shadow=boto3.client("dynamodb", region_name="us-east-1"))
    m.attach(db)
    return m, db, settings


def _state(job: str, bucket: str | None) -> dict:
    item = {
        "pk": {"S": f"JOB#{job}"},
        "sk": {"S": "STATE"},
        "tenant_id": {"S": "t"},
        "list_key": {"S": f"0001#{job}"},
        "next_fire_at": {"N": "1795338000000"},
        "version": {"N": "1"},
    }
    if bucket:
        item["due_bucket"] = {"S": bucket}
    return item


def _units(meter: Meter, kind: str, target_suffix: str = "") -> float:
    return sum(
        c.units for c in meter.charges if c.kind == kind and c.target.endswith(target_suffix)
    )


def test_meter_put_bills_the_item_and_every_index_it_enters(meter):
    m, db, settings = meter
    # GIVEN an empty jobs table WHEN a state item with a due bucket is put
    db.put_item(TableName=settings.jobs_table, Item=_state("a", "202611230900#01"))
    # THEN one base write and one entry in each of the two indexes
    assert _units(m, "write") == 1
    assert _units(m, "gsi-write", "due-index") == 1
    assert _units(m, "gsi-write", "tenant-index") == 1


def test_meter_update_moving_the_due_bucket_bills_delete_and_put_on_the_index(meter):
    m, db, settings = meter
    db.put_item(TableName=settings.jobs_table, Item=_state("a", "202611230900#01"))
    m.charges.clear()
    # WHEN the bucket moves (as a dispatch commit does)
    db.update_item(
        TableName=settings.jobs_table,
        Key={"pk": {"S": "JOB#a"}, "sk": {"S": "STATE"}},
        UpdateExpression="SET due_bucket = :b, version = :v",
        ExpressionAttributeValues={":b": {"S": "202611240900#01"}, ":v": {"N": "2"}},
    )
    # THEN the base write, delete + put on the due index, and nothing on the keys-only tenant
    # index (none of its attributes changed)
    assert _units(m, "write") == 1
    assert _units(m, "gsi-write", "due-index") == 2
    assert _units(m, "gsi-write", "tenant-index") == 0


def test_meter_failed_condition_still_bills_the_write_but_no_index(meter):
    m, db, settings = meter
    db.put_item(TableName=settings.jobs_table, Item=_state("a", "202611230900#01"))
    m.charges.clear()
    # WHEN a conditional update loses
    with pytest.raises(db.exceptions.ConditionalCheckFailedException):
        db.update_item(
            TableName=settings.jobs_table,
            Key={"pk": {"S": "JOB#a"}, "sk": {"S": "STATE"}},
            UpdateExpression="SET version = :v",
            ConditionExpression="version = :old",
            ExpressionAttributeValues={":v": {"N": "3"}, ":old": {"N": "9"}},
        )
    # THEN one write unit, nothing on the indexes
    assert _units(m, "write") == 1
    assert _units(m, "gsi-write") == 0


def test_meter_transaction_bills_twice_and_reads_by_consistency(meter):
    m, db, settings = meter
    # WHEN two items are written in one transaction, then read back
    db.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": settings.jobs_table, "Item": _state("a", None)}},
            {"Put": {"TableName": settings.jobs_table, "Item": _state("b", None)}},
        ]
    )
    key = {"pk": {"S": "JOB#a"}, "sk": {"S": "STATE"}}
    db.get_item(TableName=settings.jobs_table, Key=key, ConsistentRead=True)
    db.get_item(TableName=settings.jobs_table, Key=key)
    db.get_item(TableName=settings.jobs_table, Key={"pk": {"S": "nope"}, "sk": {"S": "x"}})
    # THEN 2 x 1 unit per item, and 1 + 0.5 + 0.5 read units (a miss bills the minimum)
    assert _units(m, "write") == 4
    assert _units(m, "read") == 2.0
    assert len(m.requests) == 4


def test_meter_sqs_batch_of_ten_small_messages_is_one_request(settings):
    sqs = boto3.client("sqs", region_name="us-east-1")
    m = Meter(shadow=boto3.client("dynamodb", region_name="us-east-1"))
    m.attach(sqs)
    url = settings.queue_url("medium")
    # WHEN ten small messages go in one batch, and a receive finds them
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "x" * 300} for i in range(10)]
    )
    sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    # THEN one billed request each
    assert [c.units for c in m.charges] == [1.0, 1.0]
    assert m.charges[0].items == 10


def test_meter_labels_charges_with_the_project_function(services, meter):
    m, _, _settings = meter
    m.attach(services.clients.dynamodb)
    # WHEN the job store reads the tick watermark
    services.jobs.get_watermark()
    # THEN the charge names the store method
    assert m.charges[-1].label.startswith("JobStore.get_watermark")
