"""Key builders, the item codec and the time helpers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from shared.clock import ManualClock, format_ms, parse_rfc3339_ms
from shared.storage import keys
from shared.storage.codec import from_item, to_item


def test_due_bucket_is_utc_minute_and_zero_padded_shard() -> None:
    # GIVEN 2026-11-22T09:14:59.999Z
    ms = parse_rfc3339_ms("2026-11-22T09:14:59.999Z")
    # THEN the bucket is that minute and the shard, as in the design notes
    assert keys.due_bucket(ms, 7) == "202611220914#07"
    assert keys.minute_of(ms) == parse_rfc3339_ms("2026-11-22T09:14:00Z")


def test_shard_of_is_stable_and_in_range() -> None:
    # GIVEN many job ids
    ids = [f"{i:022x}" for i in range(2000)]
    shards = [keys.shard_of(j, 16) for j in ids]
    # THEN the same id always maps to the same shard, every shard is used
    assert shards == [keys.shard_of(j, 16) for j in ids]
    assert set(shards) == set(range(16))
    assert keys.shard_of("0123456789abcdef012345", 16) == keys.shard_of(
        "0123456789abcdef012345", 16
    )


def test_codec_round_trips_and_drops_none() -> None:
    # GIVEN a dict with ints, floats, nesting and a None
    data = {"a": 1, "b": 1.5, "c": {"d": [1, "x"]}, "e": None, "f": True}
    # WHEN it goes to DynamoDB and back
    item = to_item(data)
    # THEN None is dropped and numbers come back as int/float
    assert "e" not in item
    assert item["b"] == {"N": "1.5"}
    assert from_item(item) == {"a": 1, "b": 1.5, "c": {"d": [1, "x"]}, "f": True}
    assert not isinstance(from_item(item)["a"], Decimal)


@pytest.mark.parametrize(
    ("text", "ms_text"),
    [
        ("2026-11-22T09:00:00Z", "2026-11-22T09:00:00.000Z"),
        ("2026-11-22T10:00:00.123+01:00", "2026-11-22T09:00:00.123Z"),
        ("2026-03-08T02:30:00-05:00", "2026-03-08T07:30:00.000Z"),
    ],
)
def test_rfc3339_parse_and_format(text: str, ms_text: str) -> None:
    assert format_ms(parse_rfc3339_ms(text)) == ms_text


def test_rfc3339_parse_rejects_naive() -> None:
    with pytest.raises(ValueError, match="offset"):
        parse_rfc3339_ms("2026-11-22T09:00:00")


def test_manual_clock_sleep_advances() -> None:
    clock = ManualClock(1_000)
    clock.sleep(1.5)
    assert clock.now_ms() == 2_500
