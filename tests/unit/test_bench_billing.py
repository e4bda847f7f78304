"""The billing arithmetic of the benchmark (bench/billing.py): DynamoDB item sizes and units,
GSI maintenance writes, SQS billed requests."""

from __future__ import annotations

import pytest

from bench import billing


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("0", 1),
        ("7", 2),
        ("123", 3),
        ("1795338000000", 5),  # epoch ms: trailing zeros trimmed, 7 significant digits
        ("1795338123456", 8),
        ("-1.50", 2),
        ("100", 2),
    ],
)
def test_billing_number_size_counts_significant_digit_pairs(text, size):
    # GIVEN a DynamoDB number WHEN sized THEN one byte per two significant digits, plus one
    assert billing.number_size(text) == size


def test_billing_value_size_follows_the_dynamodb_rules():
    # GIVEN values of every kind WHEN sized THEN as DynamoDB documents them
    assert billing.value_size({"S": "abc"}) == 3
    assert billing.value_size({"S": "é"}) == 2  # UTF-8 bytes, not characters
    assert billing.value_size({"BOOL": True}) == 1
    assert billing.value_size({"NULL": True}) == 1
    assert billing.value_size({"B": b"\x00\x01"}) == 2
    assert billing.value_size({"SS": ["a", "bc"]}) == 3
    assert billing.value_size({"L": [{"S": "x"}]}) == 3 + 1 + 1
    assert billing.value_size({"M": {"a": {"N": "1"}}}) == 3 + 1 + 1 + 2
    assert billing.value_size({"L": []}) == 3


def test_billing_item_size_adds_attribute_names_and_values():
    # GIVEN an item WHEN sized THEN names count as much as values
    item = {"pk": {"S": "JOB#1"}, "version": {"N": "12"}}
    assert billing.item_size(item) == (2 + 5) + (7 + 2)
    assert billing.item_size(None) == 0


@pytest.mark.parametrize(("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (4096, 4)])
def test_billing_write_units_round_up_per_kilobyte(size, units):
    # GIVEN an item size WHEN billed as a write THEN each 1 KB, rounded up, at least one
    assert billing.write_units(size) == units


def test_billing_read_units_round_up_per_4kb_with_consistency_factors():
    # GIVEN reads of several sizes WHEN billed THEN 4 KB units, halved or doubled
    assert billing.read_units(0, consistent=True) == 1.0
    assert billing.read_units(4096, consistent=True) == 1.0
    assert billing.read_units(4097, consistent=True) == 2.0
    assert billing.read_units(100, consistent=False) == 0.5
    assert billing.read_units(9000, consistent=False) == 1.5
    assert billing.read_units(100, consistent=False, transactional=True) == 2.0


def test_billing_item_write_bills_the_larger_image_and_doubles_in_a_transaction():
    # GIVEN an item shrinking from 1,500 to 500 bytes
    big = {"a": {"S": "x" * 1499}}
    small = {"a": {"S": "x" * 499}}
    # WHEN billed THEN the larger image counts; a transaction bills twice
    assert billing.item_write_units(big, small, transactional=False) == 2
    assert billing.item_write_units(small, big, transactional=True) == 4
    assert billing.item_write_units(None, small, transactional=False) == 1


def test_billing_gsi_writes_follow_the_index_entry():
    # GIVEN an index keyed on (b, t) and items moving in and out of it
    keys = ["b", "t"]
    a = {"pk": {"S": "1"}, "b": {"S": "m1"}, "t": {"N": "1"}, "v": {"N": "1"}}
    moved = {**a, "b": {"S": "m2"}}
    touched = {**a, "v": {"N": "2"}}
    gone = {"pk": {"S": "1"}, "v": {"N": "3"}}
    # THEN entering = one put, key change = delete + put, projected change = one update,
    # leaving = one delete, nothing changed or never indexed = nothing
    assert billing.gsi_writes(None, a, keys) == [1]
    assert billing.gsi_writes(a, moved, keys) == [1, 1]
    assert billing.gsi_writes(a, touched, keys) == [1]
    assert billing.gsi_writes(a, gone, keys) == [1]
    assert billing.gsi_writes(a, dict(a), keys) == []
    assert billing.gsi_writes(gone, gone, keys) == []


@pytest.mark.parametrize(("size", "requests"), [(0, 1), (65_536, 1), (65_537, 2), (300_000, 5)])
def test_billing_sqs_requests_count_64kb_chunks(size, requests):
    # GIVEN a payload WHEN billed THEN one request per 64 KB chunk, at least one
    assert billing.sqs_requests(size) == requests


def test_billing_sqs_message_bytes_include_attributes():
    # GIVEN a body and a string attribute WHEN sized THEN both count
    attrs = {"Idempotency-Key": {"DataType": "String", "StringValue": "j:r"}}
    assert billing.sqs_message_bytes("{}", attrs) == 2 + 15 + 6 + 3


def test_billing_percentile_is_nearest_rank():
    # GIVEN 1..100 WHEN asked for percentiles THEN the nearest rank
    values = list(range(1, 101))
    assert billing.percentile(values, 50) == 50
    assert billing.percentile(values, 99) == 99
    assert billing.percentile(values, 100) == 100
    assert billing.percentile([], 50) is None


def test_gsi_writes_keys_only_index_ignores_unprojected_changes() -> None:
    # GIVEN a keys-only index on (tenant_id, list_key) over a table keyed (pk, sk)
    from bench.billing import gsi_writes

    keys = ["tenant_id", "list_key"]
    projected = ["pk", "sk", "tenant_id", "list_key"]
    before = {
        "pk": {"S": "JOB#1"},
        "sk": {"S": "STATE"},
        "tenant_id": {"S": "t"},
        "list_key": {"S": "1#1"},
        "version": {"N": "1"},
    }
    after = {**before, "version": {"N": "2"}}
    # WHEN only an unprojected attribute changes
    # THEN the keys-only index bills nothing, while an ALL index bills one write
    assert gsi_writes(before, after, keys, projected) == []
    assert gsi_writes(before, after, keys) == [1]
    # AND creating the item writes its (small) index entry once
    assert gsi_writes(None, after, keys, projected) == [1]
