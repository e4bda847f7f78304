"""Pure helpers behind the API: pagination tokens, limits, request fingerprints, percentiles and
the deployed caller identity. No AWS, no sockets."""

from __future__ import annotations

import base64
import json

import pytest

from functions.api.app import tenant_from_request_context
from shared.errors import ValidationFailed
from shared.services.jobs import (
    decode_token,
    encode_token,
    parse_limit,
    percentile,
    request_hash,
)

KEY = {"pk": {"S": "JOB#abc"}, "sk": {"S": "STATE"}, "n": {"N": "12"}}


def b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()


def test_token_round_trips_within_its_scope() -> None:
    # GIVEN a LastEvaluatedKey
    # WHEN it is encoded for a list and decoded for the same list
    token = encode_token(KEY, "jobs:tenant-a")
    # THEN the key comes back
    assert token is not None
    assert decode_token(token, "jobs:tenant-a") == KEY


def test_token_absent_means_first_page() -> None:
    # GIVEN no key / no token
    # WHEN encoded / decoded
    # THEN None both ways
    assert encode_token(None, "s") is None
    assert encode_token({}, "s") is None
    assert decode_token(None, "s") is None
    assert decode_token("", "s") is None


@pytest.mark.parametrize(
    "token",
    [
        "garbage!",
        "%%%",
        b64([1, 2]),
        b64({"scope": "jobs:tenant-b", "key": KEY}),  # another tenant's list
        b64({"scope": "dead:tenant-a", "key": KEY}),  # another endpoint's list
        b64(KEY),  # an unscoped key
        b64({"scope": "jobs:tenant-a", "key": {}}),
        b64({"scope": "jobs:tenant-a", "key": {"pk": "JOB#abc"}}),
        b64({"scope": "jobs:tenant-a", "key": {"pk": {"Q": "x"}}}),
        b64({"scope": "jobs:tenant-a", "key": {"pk": {"S": 1}}}),
        b64({"scope": "jobs:tenant-a", "key": {"pk": {"S": "a", "N": "1"}}}),
    ],
)
def test_token_decode_rejects_what_this_list_did_not_issue(token: str) -> None:
    # GIVEN a token that is malformed or belongs to another list
    # WHEN it is decoded for tenant A's jobs
    with pytest.raises(ValidationFailed) as raised:
        decode_token(token, "jobs:tenant-a")
    # THEN it is a validation error on next_token
    assert [d.field for d in raised.value.details] == ["next_token"]


@pytest.mark.parametrize(("raw", "expected"), [(None, 50), ("", 50), ("1", 1), ("100", 100)])
def test_parse_limit_accepts_1_to_100(raw: str | None, expected: int) -> None:
    # GIVEN a limit parameter in range (or none)
    # WHEN it is parsed
    # THEN it is the number (default 50)
    assert parse_limit(raw) == expected


@pytest.mark.parametrize(
    "raw", ["0", "101", "-1", "1.5", "abc", " 5", "\u0665", "\u00b2", "9" * 50]
)
def test_parse_limit_rejects_anything_else(raw: str) -> None:
    # GIVEN an invalid limit (including a non-ASCII digit)
    # WHEN it is parsed
    with pytest.raises(ValidationFailed) as raised:
        parse_limit(raw)
    # THEN a validation error on limit
    assert [d.field for d in raised.value.details] == ["limit"]


def test_request_hash_ignores_key_order_and_whitespace() -> None:
    # GIVEN the same JSON object written two ways, and another object
    a = b'{"a": 1, "b": [1, 2]}'
    b = b'{ "b":[1,2],\n"a":1 }'
    c = b'{"a": 2, "b": [1, 2]}'
    # WHEN they are fingerprinted
    # THEN only the different content differs
    assert request_hash(a) == request_hash(b)
    assert request_hash(a) != request_hash(c)
    assert request_hash(b"not json") == request_hash(b"not json")


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 0.5, None),
        ([7], 0.5, 7.0),
        ([7], 0.99, 7.0),
        ([1, 2, 3, 4], 0.5, 2.0),
        ([4, 3, 2, 1], 0.99, 4.0),
        (list(range(1, 101)), 0.5, 50.0),
        (list(range(1, 101)), 0.99, 99.0),
    ],
)
def test_percentile_is_nearest_rank(values: list[int], q: float, expected: float | None) -> None:
    # GIVEN some samples
    # WHEN a percentile is taken
    # THEN it is the nearest-rank value
    assert percentile(values, q) == expected


@pytest.mark.parametrize(
    ("identity", "tenant"),
    [
        ({"apiKeyId": "k123", "userArn": "arn:aws:iam::1:user/x"}, "apikey:k123"),
        (
            {"userArn": "arn:aws:sts::123456789012:assumed-role/Reporter/session-1"},
            "arn:aws:iam::123456789012:role/Reporter",
        ),
        (
            {"userArn": "arn:aws:iam::123456789012:user/alice"},
            "arn:aws:iam::123456789012:user/alice",
        ),
        ({}, None),
        ({"apiKeyId": None, "userArn": None}, None),
    ],
)
def test_tenant_from_request_context(identity: dict[str, str | None], tenant: str | None) -> None:
    # GIVEN an API Gateway request context identity
    # WHEN the tenant is derived from it
    # THEN API keys win, an assumed role is one tenant whatever its session, else the caller
    assert tenant_from_request_context({"identity": identity}) == tenant


def test_tenant_sessions_of_one_role_are_one_tenant() -> None:
    # GIVEN two sessions of the same role
    one = {"identity": {"userArn": "arn:aws:sts::1:assumed-role/R/a"}}
    two = {"identity": {"userArn": "arn:aws:sts::1:assumed-role/R/b"}}
    # WHEN their tenants are derived
    # THEN they are the same
    assert tenant_from_request_context(one) == tenant_from_request_context(two)
