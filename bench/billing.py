"""Pure billing arithmetic: DynamoDB item sizes and request units, GSI maintenance writes, SQS
billed requests (rules and sources in bench/prices.py)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench import prices

Item = Mapping[str, Mapping[str, Any]]  # a low-level DynamoDB item: {"name": {"S": "..."}}


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))


def number_size(text: str) -> int:
    """Bytes of a DynamoDB number: one per two significant digits, plus one."""
    digits = text.strip().lstrip("+-").replace(".", "")
    mantissa = digits.split("e")[0].split("E")[0]
    significant = mantissa.strip("0")
    return (len(significant) + 1) // 2 + 1


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value in low-level form ({"S": ...}, {"N": ...}, {"M": ...}...)."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return _utf8(raw)
    if kind == "N":
        return number_size(str(raw))
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8(s) for s in raw)
    if kind == "NS":
        return sum(number_size(str(n)) for n in raw)
    if kind == "BS":
        return sum(len(b) for b in raw)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + _utf8(k) + value_size(v) for k, v in raw.items())
    raise ValueError(f"unknown DynamoDB type {kind!r}")


def item_size(item: Item | None) -> int:
    """Bytes of an item as DynamoDB counts them: attribute names plus values."""
    if not item:
        return 0
    return sum(_utf8(name) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    """Write units of one item write: each 1 KB, rounded up, at least one."""
    return max(1, math.ceil(size / prices.WRITE_UNIT_BYTES))


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    """Read units of one read of `size` bytes: each 4 KB, rounded up, at least one; half for an
    eventually consistent read, double for a transactional one."""
    units = float(max(1, math.ceil(size / prices.READ_UNIT_BYTES)))
    if transactional:
        return units * prices.TRANSACTION_FACTOR
    return units if consistent else units * prices.EVENTUAL_READ_FACTOR


def item_write_units(before: Item | None, after: Item | None, *, transactional: bool) -> int:
    """Units of a base-table write that turned `before` into `after` (either may be None)."""
    units = write_units(max(item_size(before), item_size(after)))
    return units * prices.TRANSACTION_FACTOR if transactional else units


def _index_key(item: Item | None, keys: Sequence[str]) -> tuple[Any, ...] | None:
    if not item or any(k not in item for k in keys):
        return None
    return tuple(tuple(sorted(item[k].items())) for k in keys)


def project(item: Item | None, projected: Sequence[str] | None) -> Item | None:
    """The index entry of an item: every attribute (projection ALL, `projected` None), or only
    the listed ones (KEYS_ONLY: the table and index keys; INCLUDE: those plus the named)."""
    if item is None or projected is None:
        return item
    return {k: v for k, v in item.items() if k in projected}


def gsi_writes(
    before: Item | None,
    after: Item | None,
    keys: Sequence[str],
    projected: Sequence[str] | None = None,
) -> list[int]:
    """Write units a GSI (key attributes `keys`; projection ALL when `projected` is None, else
    only those attributes) bills for one base write: one entry per index write (put, delete,
    or an update of a projected attribute). A write that leaves the index entry as it was
    bills nothing."""
    old_key, new_key = _index_key(before, keys), _index_key(after, keys)
    old, new = project(before, projected), project(after, projected)
    if old_key is None and new_key is None:
        return []
    if old_key is None:
        return [write_units(item_size(new))]
    if new_key is None:
        return [write_units(item_size(old))]
    if old_key != new_key:
        return [write_units(item_size(old)), write_units(item_size(new))]
    if dict(old or {}) != dict(new or {}):
        return [write_units(item_size(new))]
    return []


def sqs_requests(payload_bytes: int) -> int:
    """Billed SQS requests of one API call carrying `payload_bytes`: each 64 KB chunk, >= 1."""
    return max(1, math.ceil(payload_bytes / prices.SQS_CHUNK_BYTES))


def sqs_message_bytes(body: str, attributes: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Payload bytes of one SQS message: the body plus its message attributes (name, type and
    value, as SQS counts them toward the size)."""
    size = _utf8(body)
    for name, attr in (attributes or {}).items():
        size += _utf8(name) + _utf8(str(attr.get("DataType", "")))
        if "StringValue" in attr:
            size += _utf8(str(attr["StringValue"]))
        if "BinaryValue" in attr:
            size += len(attr["BinaryValue"])
    return size


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0-100) by the nearest-rank method; None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
