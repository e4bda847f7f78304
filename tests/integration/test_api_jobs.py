"""The Jobs section of the HTTP contract (API.md), through the real API Lambda handler."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from functions.worker.handler import lambda_handler as worker
from shared.aws import AwsClients
from shared.clock import ManualClock
from shared.services.container import Services, set_services
from shared.settings import Settings
from shared.targets import HandlerRegistry
from support.api import Api, ApiResponse
from support.fakes import MemoryQueue, pump

RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
ECHO = {"type": "handler", "name": "echo"}


def job_body(name: str = "report", **overrides: Any) -> dict[str, Any]:
    """A minimal valid create body: an hourly echo job."""
    return {"name": name, "schedule": "rate(1 hour)", "target": ECHO, **overrides}


def create(api: Api, name: str = "report", *, tenant: str | None = None, **overrides: Any) -> Any:
    response = api.post("/v1/jobs", job_body(name, **overrides), tenant=tenant)
    assert response.status == 201, response.body
    return response.body


def assert_error(response: ApiResponse, status: int, field: str | None = None) -> None:
    """The one error body, with the offending field named when there is one."""
    assert response.status == status, response.body
    assert set(response.body) == {"error"}
    error = response.body["error"]
    assert set(error) == {"code", "message", "details"}
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], list)
    for detail in error["details"]:
        assert set(detail) == {"field", "message"}
        assert isinstance(detail["field"], str) and isinstance(detail["message"], str)
    if field is not None:
        fields = [d["field"] for d in error["details"]]
        assert any(f == field or f.startswith(f"{field}.") for f in fields), fields


# ---- fixtures ---------------------------------------------------------------------------------
# One moto backend per module, a tenant per test (see support/module_aws.py).
from support.module_aws import api, aws, clients, services, settings, wire  # noqa: E402, F401


def other_tenant(api: Api, suffix: str = "b") -> str:
    return f"{api.tenant}-{suffix}"


# ---- create ---------------------------------------------------------------------------------


def test_create_job_returns_201_with_defaults(api: Api) -> None:
    # GIVEN only the required fields
    body = job_body("daily-report")
    # WHEN the job is created
    response = api.post("/v1/jobs", body)
    # THEN the Job resource carries every default
    assert response.status == 201, response.body
    job = response.body
    assert re.fullmatch(r"[0-9a-f]{22}", job["job_id"])
    assert job["name"] == "daily-report"
    assert job["schedule"] == "rate(1 hour)"
    assert job["timezone"] == "UTC"
    assert job["start_at"] is None and job["end_at"] is None
    assert job["target"] == {"type": "handler", "name": "echo"}
    assert job["payload"] is None
    assert job["priority"] == "medium"
    assert job["retry"] == {
        "max_attempts": 5,
        "base_delay_seconds": 1,
        "max_delay_seconds": 3600,
        "jitter": True,
    }
    assert job["timeout_seconds"] == 300
    assert job["overlap"] == "allow"
    assert job["misfire"] == "fire_once"
    assert job["misfire_grace_seconds"] == 60
    assert job["depends_on"] == []
    assert job["notify"] == {"on": ["failed", "dead"], "webhook_url": None, "sns_topic_arn": None}
    assert job["tags"] == {}
    assert job["status"] == "active"
    assert job["version"] == 1
    assert job["last_run"] is None
    for field in ("next_fire_at", "created_at", "updated_at"):
        assert RFC3339_MS.match(job[field]), (field, job[field])
    assert job["created_at"] == "2026-11-22T09:00:00.000Z"


def test_create_job_keeps_every_given_field(api: Api) -> None:
    # GIVEN a body with every writable field set
    body: dict[str, Any] = {
        "name": "full",
        "schedule": "cron(0 9 * * MON-FRI)",
        "timezone": "America/New_York",
        "start_at": None,
        "end_at": None,
        "target": {
            "type": "http",
            "url": "https://example.com/hook",
            "method": "PUT",
            "headers": {"X-A": "b"},
        },
        "payload": {"report": "sales"},
        "priority": "high",
        "retry": {
            "max_attempts": 3,
            "base_delay_seconds": 2,
            "max_delay_seconds": 60,
            "jitter": False,
        },
        "timeout_seconds": 30,
        "overlap": "skip",
        "misfire": "skip",
        "misfire_grace_seconds": 5,
        "depends_on": [],
        "notify": {"on": ["succeeded"], "webhook_url": None, "sns_topic_arn": None},
        "tags": {"team": "billing"},
    }
    # WHEN it is created
    response = api.post("/v1/jobs", body)
    # THEN the resource echoes it
    assert response.status == 201, response.body
    job = response.body
    for key, value in body.items():
        if key == "target":
            assert job[key]["url"].rstrip("/") == value["url"]
            assert {k: v for k, v in job[key].items() if k != "url"} == {
                k: v for k, v in value.items() if k != "url"
            }
        else:
            assert job[key] == value, key
    # 9:00 New York on the next weekday after Sunday 2026-11-22 09:00Z is Monday 14:00Z.
    assert job["next_fire_at"] == "2026-11-23T14:00:00.000Z"


def test_create_job_idempotency_key_replay_returns_200_same_job(api: Api) -> None:
    # GIVEN a job created with an Idempotency-Key
    headers = {"Idempotency-Key": "req-1"}
    first = api.post("/v1/jobs", job_body("once"), headers=headers)
    assert first.status == 201, first.body
    # WHEN the same request is sent again
    again = api.post("/v1/jobs", job_body("once"), headers=headers)
    # THEN it answers 200 with the same job and nothing new exists
    assert again.status == 200, again.body
    assert again.body["job_id"] == first.body["job_id"]
    assert again.body == first.body
    listed = api.get("/v1/jobs").body["jobs"]
    assert [j["job_id"] for j in listed] == [first.body["job_id"]]


def test_create_job_idempotency_key_replay_ignores_json_layout(api: Api) -> None:
    # GIVEN a job created with an Idempotency-Key
    headers = {"Idempotency-Key": "req-layout"}
    first = api.post("/v1/jobs", job_body("layout"), headers=headers)
    assert first.status == 201, first.body
    # WHEN the same request is sent with its keys in another order and other whitespace
    raw = b'{ "target" : {"name": "echo", "type": "handler"},\n "schedule": "rate(1 hour)",'
    raw += b' "name": "layout" }'
    again = api.post("/v1/jobs", raw=raw, headers=headers)
    # THEN it is the same request: 200 with the same job
    assert again.status == 200, again.body
    assert again.body["job_id"] == first.body["job_id"]


def test_create_job_idempotency_key_with_other_body_is_409(api: Api) -> None:
    # GIVEN a job created with an Idempotency-Key
    headers = {"Idempotency-Key": "req-2"}
    assert api.post("/v1/jobs", job_body("a"), headers=headers).status == 201
    # WHEN the key is reused with another body
    response = api.post("/v1/jobs", job_body("b"), headers=headers)
    # THEN 409 naming the header, and no second job
    assert_error(response, 409, "Idempotency-Key")
    assert len(api.get("/v1/jobs").body["jobs"]) == 1


def test_create_job_idempotency_key_is_per_tenant(api: Api) -> None:
    # GIVEN tenant A used a key
    headers = {"Idempotency-Key": "shared-key"}
    a = api.post("/v1/jobs", job_body("x"), headers=headers, tenant=api.tenant)
    # WHEN tenant B uses the same key with the same body
    b = api.post("/v1/jobs", job_body("x"), headers=headers, tenant=other_tenant(api))
    # THEN B gets its own, new job
    assert a.status == 201 and b.status == 201, (a.body, b.body)
    assert a.body["job_id"] != b.body["job_id"]


@pytest.mark.parametrize("key", ["k" * 129, "k" * 500])
def test_create_job_idempotency_key_over_128_chars_is_400(api: Api, key: str) -> None:
    # GIVEN an Idempotency-Key longer than 128 characters
    # WHEN a job is created with it
    response = api.post("/v1/jobs", job_body(), headers={"Idempotency-Key": key})
    # THEN 400 naming the header, and nothing created
    assert_error(response, 400, "Idempotency-Key")
    assert api.get("/v1/jobs").body["jobs"] == []


def test_create_job_idempotency_key_of_128_chars_is_accepted(api: Api) -> None:
    # GIVEN an Idempotency-Key of exactly 128 characters
    # WHEN a job is created with it
    response = api.post("/v1/jobs", job_body(), headers={"Idempotency-Key": "k" * 128})
    # THEN it is created
    assert response.status == 201, response.body


def test_create_job_duplicate_name_is_409(api: Api) -> None:
    # GIVEN a job named "dup"
    create(api, "dup")
    # WHEN another job with that name is created
    response = api.post("/v1/jobs", job_body("dup"))
    # THEN 409 naming the field
    assert_error(response, 409, "name")


def test_create_job_name_is_free_again_after_cancel(api: Api) -> None:
    # GIVEN a job named "dup" that is then cancelled
    first = create(api, "dup")
    assert api.post(f"/v1/jobs/{first['job_id']}/cancel").status == 200
    # WHEN a job with the same name is created
    response = api.post("/v1/jobs", job_body("dup"))
    # THEN it is allowed
    assert response.status == 201, response.body
    assert response.body["job_id"] != first["job_id"]


def test_create_job_same_name_in_two_tenants(api: Api) -> None:
    # GIVEN tenant A has a job named "shared"
    a = create(api, "shared", tenant=api.tenant)
    # WHEN tenant B creates a job with the same name
    b = api.post("/v1/jobs", job_body("shared"), tenant=other_tenant(api))
    # THEN both exist
    assert b.status == 201, b.body
    assert b.body["job_id"] != a["job_id"]


# ---- create: 400s -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"schedule": "cron(61 * * * *)"}, "schedule"),
        ({"schedule": "cron(not a cron)"}, "schedule"),
        ({"schedule": "cron(0 9 * * MON-FRI * *)"}, "schedule"),
        ({"schedule": "rate(0 minutes)"}, "schedule"),
        ({"schedule": "every day"}, "schedule"),
        ({"schedule": "at(2026-13-40T10:00:00)"}, "schedule"),
        ({"schedule": ""}, "schedule"),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"timezone": "America"}, "timezone"),
        ({"unknown": 1}, "unknown"),
        ({"target": {"type": "ftp", "url": "ftp://x"}}, "target"),
        ({"target": {"type": "http"}}, "target"),
        ({"target": {"type": "handler", "name": "echo", "extra": 1}}, "target"),
        ({"target": "echo"}, "target"),
        ({"priority": "urgent"}, "priority"),
        ({"overlap": "queue"}, "overlap"),
        ({"misfire": "later"}, "misfire"),
        ({"retry": {"max_attempts": 0}}, "retry"),
        ({"retry": {"attempts": 3}}, "retry"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"timeout_seconds": "soon"}, "timeout_seconds"),
        ({"notify": {"on": ["exploded"]}}, "notify"),
        ({"name": "has space"}, "name"),
        ({"name": ""}, "name"),
        ({"name": "n" * 129}, "name"),
        ({"start_at": "yesterday"}, "start_at"),
        ({"depends_on": ["not-a-job-id"]}, "depends_on"),
    ],
)
def test_create_job_invalid_field_is_400_naming_it(
    api: Api, overrides: dict[str, Any], field: str
) -> None:
    # GIVEN a body with one invalid field
    # WHEN it is posted
    response = api.post("/v1/jobs", job_body(**overrides))
    # THEN 400 validation_error naming that field, and nothing created
    assert_error(response, 400, field)
    assert response.body["error"]["code"] == "validation_error"
    assert api.get("/v1/jobs").body["jobs"] == []


@pytest.mark.parametrize("missing", ["name", "schedule", "target"])
def test_create_job_missing_required_field_is_400(api: Api, missing: str) -> None:
    # GIVEN a body without one required field
    body = job_body()
    del body[missing]
    # WHEN it is posted
    response = api.post("/v1/jobs", body)
    # THEN 400 naming it
    assert_error(response, 400, missing)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"{not json", "body"),
        (b'{"name": "x",', "body"),
        (b"[1, 2]", "body"),
        (b'"a string"', "body"),
        (b"", "body"),
        (b"\xff\xfe\x00", "body"),
        (
            b'{"name": "x", "schedule": "now", "target": {"type": "handler", "name": "echo"}, '
            b'"payload": NaN}',
            "body",
        ),
        (
            b'{"name": "x", "schedule": "now", "target": {"type": "handler", "name": "echo"}, '
            b'"payload": [Infinity, -Infinity]}',
            "body",
        ),
        (
            b'{"name": "x", "schedule": "now", "target": {"type": "handler", "name": "echo"}, '
            b'"payload": 1e999}',
            "body",
        ),
        (
            b'{"name": "x", "schedule": "now", "target": {"type": "handler", "name": "echo"}, '
            b'"payload": "\\ud800"}',
            "body",
        ),
    ],
)
def test_create_job_malformed_body_is_400(api: Api, raw: bytes, field: str) -> None:
    # GIVEN a body that is not a JSON object
    # WHEN it is posted
    response = api.post("/v1/jobs", raw=raw)
    # THEN 400 naming the body
    assert_error(response, 400, field)


@pytest.mark.parametrize(
    ("at", "status"),
    [
        ("2026-11-22T08:58:59Z", 400),  # 61 s before now (09:00:00Z)
        ("2026-11-22T08:58:59.999Z", 400),
        ("2026-11-22T08:59:00Z", 201),  # exactly 60 s: not "more than 60 s"
        ("2026-11-22T08:59:01Z", 201),  # 59 s
        ("2026-11-22T09:00:00Z", 201),
        ("2026-11-22T03:59:01-05:00", 201),  # 59 s, written with an offset
    ],
)
def test_create_job_at_in_the_past_tolerates_60_seconds(
    api: Api, queue: MemoryQueue, at: str, status: int
) -> None:
    # GIVEN an at() shortly before now
    # WHEN it is posted
    response = api.post("/v1/jobs", job_body(schedule=f"at({at})"))
    # THEN up to 60 s in the past it is created and sent at once; more is a 400 on schedule
    if status == 400:
        assert_error(response, 400, "schedule")
        assert queue.sent == []
    else:
        assert response.status == 201, response.body
        assert len(queue.sent) == 1


def test_create_job_at_in_timezone_wall_time(api: Api) -> None:
    # GIVEN an at() in a wall time of New York (UTC-5 in November)
    # WHEN it is posted
    response = api.post(
        "/v1/jobs", job_body(schedule="at(2026-11-22T10:00:00)", timezone="America/New_York")
    )
    # THEN it fires at 15:00Z
    assert response.status == 201, response.body
    assert response.body["next_fire_at"] == "2026-11-22T15:00:00.000Z"


def test_create_job_payload_over_64_kib_is_400_on_payload(api: Api) -> None:
    # GIVEN a payload just over 64 KiB once serialised (body still under 256 KiB)
    payload = {"blob": "x" * (64 * 1024)}
    # WHEN it is posted
    response = api.post("/v1/jobs", job_body(payload=payload))
    # THEN 400 naming payload
    assert_error(response, 400, "payload")


def test_create_job_payload_of_exactly_64_kib_is_accepted(api: Api) -> None:
    # GIVEN a payload of exactly 64 KiB once compactly serialised
    overhead = len(json.dumps({"blob": ""}, separators=(",", ":")))
    payload = {"blob": "x" * (64 * 1024 - overhead)}
    # WHEN it is posted
    response = api.post("/v1/jobs", job_body(payload=payload))
    # THEN it is created
    assert response.status == 201, response.body


def test_create_job_payload_size_counts_utf8_bytes(api: Api) -> None:
    # GIVEN a payload of 30,000 "é": 60,000 bytes of UTF-8 (180,000 if escaped as \u00e9)
    payload = "\u00e9" * 30_000
    # WHEN it is posted
    response = api.post("/v1/jobs", job_body(payload=payload))
    # THEN it is under 64 KiB and created, the payload intact
    assert response.status == 201, response.body
    assert api.get(f"/v1/jobs/{response.body['job_id']}").body["payload"] == payload


def test_create_job_body_over_256_kib_is_413(api: Api) -> None:
    # GIVEN a body over 256 KiB
    body = job_body(payload={"blob": "x" * (256 * 1024)})
    # WHEN it is posted
    response = api.post("/v1/jobs", body)
    # THEN 413 with the error body
    assert_error(response, 413)
    assert response.body["error"]["code"] == "payload_too_large"


def test_patch_job_body_over_256_kib_is_413(api: Api) -> None:
    # GIVEN a job
    job = create(api)
    # WHEN a PATCH body over 256 KiB is sent
    response = api.patch(f"/v1/jobs/{job['job_id']}", {"payload": "x" * (256 * 1024)})
    # THEN 413
    assert_error(response, 413)


@pytest.mark.parametrize("tenant", ["bad tenant", "t" * 129, "tenant\u00e9", "a;b"])
def test_api_invalid_tenant_header_is_400(api: Api, tenant: str) -> None:
    # GIVEN an X-Tenant-Id outside the allowed alphabet or length
    # WHEN any request is made with it
    response = api.get("/v1/jobs", tenant=tenant)
    # THEN 400 naming the header
    assert_error(response, 400, "X-Tenant-Id")


# ---- quota ------------------------------------------------------------------------------


@pytest.fixture
def small_quota(
    services: Services,
    settings: Settings,
    clients: AwsClients,
    clock: ManualClock,
    handlers: HandlerRegistry,
    queue: MemoryQueue,
) -> Iterator[Services]:
    """The services again, with room for two live jobs per tenant."""
    limited = settings.model_copy(update={"max_jobs_per_tenant": 2})
    yield wire(limited, clients, clock, handlers, queue)
    set_services(services)


def test_create_job_over_tenant_quota_is_429(small_quota: Services, api: Api) -> None:
    # GIVEN a tenant at its quota of two jobs
    create(api, "one")
    create(api, "two")
    # WHEN a third is created
    response = api.post("/v1/jobs", job_body("three"))
    # THEN 429 quota_exceeded; another tenant is unaffected
    assert_error(response, 429)
    assert response.body["error"]["code"] == "quota_exceeded"
    assert api.post("/v1/jobs", job_body("three"), tenant=other_tenant(api)).status == 201


def test_create_job_quota_frees_up_after_cancel(small_quota: Services, api: Api) -> None:
    # GIVEN a tenant at its quota, one of whose jobs is then cancelled
    first = create(api, "one")
    create(api, "two")
    assert api.delete(f"/v1/jobs/{first['job_id']}").status == 200
    # WHEN another job is created
    response = api.post("/v1/jobs", job_body("three"))
    # THEN there is room again
    assert response.status == 201, response.body


def test_create_job_idempotent_replay_at_quota_is_200(small_quota: Services, api: Api) -> None:
    # GIVEN a tenant at its quota, one job created with an Idempotency-Key
    headers = {"Idempotency-Key": "at-quota"}
    first = api.post("/v1/jobs", job_body("one"), headers=headers)
    create(api, "two")
    # WHEN the keyed request is replayed
    again = api.post("/v1/jobs", job_body("one"), headers=headers)
    # THEN it answers the existing job, not 429
    assert again.status == 200, again.body
    assert again.body["job_id"] == first.body["job_id"]


def test_patch_completed_job_back_to_life_takes_a_quota_slot(
    small_quota: Services, api: Api, queue: MemoryQueue, lambda_context: Any
) -> None:
    # GIVEN a tenant with one completed job and two live ones (its quota)
    done = create(api, "done", schedule="now")
    pump(queue, worker, lambda_context)
    assert api.get(f"/v1/jobs/{done['job_id']}").body["status"] == "completed"
    create(api, "one")
    create(api, "two")
    # WHEN the completed job is given a new schedule
    response = api.patch(f"/v1/jobs/{done['job_id']}", {"schedule": "cron(30 10 * * *)"})
    # THEN it would be a third live job: 429, and it stays completed
    assert_error(response, 429)
    assert api.get(f"/v1/jobs/{done['job_id']}").body["status"] == "completed"


def test_list_jobs_status_filter_pages_exactly(api: Api, clock: ManualClock) -> None:
    # GIVEN five jobs created a second apart, every other one paused
    ids = []
    for i in range(5):
        ids.append(create(api, f"f{i}")["job_id"])
        clock.advance(1)
    for job_id in ids[::2]:
        api.post(f"/v1/jobs/{job_id}/pause")
    # WHEN the paused ones are listed two at a time
    seen: list[str] = []
    token = None
    for _ in range(5):
        query = "/v1/jobs?status=paused&limit=2" + (f"&next_token={token}" if token else "")
        page = api.get(query).body
        seen += [j["job_id"] for j in page["jobs"]]
        token = page["next_token"]
        if token is None:
            break
    # THEN each paused job appears once, newest first, and nothing else
    assert seen == list(reversed(ids[::2]))


# ---- get / list ---------------------------------------------------------------------------


def test_get_job_returns_the_job(api: Api) -> None:
    # GIVEN a job
    job = create(api, "getme", payload={"a": 1})
    # WHEN it is read
    response = api.get(f"/v1/jobs/{job['job_id']}")
    # THEN the same resource comes back
    assert response.status == 200, response.body
    assert response.body == job


@pytest.mark.parametrize(
    "job_id", ["0123456789abcdef012345", "nope", "x" * 300, "%E2%9C%93", "..%2F..%2Fetc"]
)
def test_get_job_unknown_is_404(api: Api, job_id: str) -> None:
    # GIVEN no job with that id
    # WHEN it is read
    response = api.get(f"/v1/jobs/{job_id}")
    # THEN 404 not_found
    assert_error(response, 404)
    assert response.body["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/nothing"),
        ("GET", "/v2/jobs"),
        ("GET", "/"),
        ("POST", "/v1/jobs/0123456789abcdef012345/explode"),
        ("PUT", "/v1/jobs"),
    ],
)
def test_api_unknown_route_is_404(api: Api, method: str, path: str) -> None:
    # GIVEN a path the API does not serve
    # WHEN it is called
    response = api.call(method, path)
    # THEN 404 with the error body
    assert_error(response, 404)


def test_list_jobs_newest_first_and_only_the_tenants(api: Api, clock: ManualClock) -> None:
    # GIVEN three jobs created a second apart, and one of another tenant
    ids = []
    for name in ("a", "b", "c"):
        ids.append(create(api, name)["job_id"])
        clock.advance(1)
    create(api, "other", tenant=other_tenant(api))
    # WHEN the jobs are listed
    response = api.get("/v1/jobs")
    # THEN the tenant's three come back, newest first, and no more pages
    assert response.status == 200, response.body
    assert [j["job_id"] for j in response.body["jobs"]] == list(reversed(ids))
    assert response.body["next_token"] is None


def test_list_jobs_filters_by_status(api: Api) -> None:
    # GIVEN an active, a paused and a cancelled job
    active = create(api, "active")
    paused = create(api, "paused")
    cancelled = create(api, "cancelled")
    api.post(f"/v1/jobs/{paused['job_id']}/pause")
    api.post(f"/v1/jobs/{cancelled['job_id']}/cancel")
    # WHEN the jobs are listed by status
    by_status = {
        status: [j["job_id"] for j in api.get(f"/v1/jobs?status={status}").body["jobs"]]
        for status in ("active", "paused", "cancelled", "completed", "failed")
    }
    # THEN each status shows only its jobs
    assert by_status == {
        "active": [active["job_id"]],
        "paused": [paused["job_id"]],
        "cancelled": [cancelled["job_id"]],
        "completed": [],
        "failed": [],
    }


def test_list_jobs_paginates_with_next_token(api: Api, clock: ManualClock) -> None:
    # GIVEN five jobs
    ids = []
    for i in range(5):
        ids.append(create(api, f"job-{i}")["job_id"])
        clock.advance(1)
    # WHEN they are listed two at a time, following next_token
    seen: list[str] = []
    pages = 0
    path = "/v1/jobs?limit=2"
    while True:
        response = api.get(path)
        assert response.status == 200, response.body
        assert len(response.body["jobs"]) <= 2
        seen.extend(j["job_id"] for j in response.body["jobs"])
        pages += 1
        token = response.body["next_token"]
        if token is None:
            break
        path = f"/v1/jobs?limit=2&next_token={token}"
        assert pages < 10
    # THEN every job is seen exactly once, newest first, over three pages
    assert seen == list(reversed(ids))
    assert pages == 3


def test_list_jobs_status_filter_paginates(api: Api, clock: ManualClock) -> None:
    # GIVEN paused jobs interleaved with active ones
    paused = []
    for i in range(6):
        job = create(api, f"job-{i}")
        clock.advance(1)
        if i % 2 == 0:
            api.post(f"/v1/jobs/{job['job_id']}/pause")
            paused.append(job["job_id"])
    # WHEN the paused ones are listed one at a time
    seen: list[str] = []
    path = "/v1/jobs?status=paused&limit=1"
    for _ in range(10):
        body = api.get(path).body
        seen.extend(j["job_id"] for j in body["jobs"])
        if body["next_token"] is None:
            break
        path = f"/v1/jobs?status=paused&limit=1&next_token={body['next_token']}"
    # THEN exactly the paused jobs come back, newest first
    assert seen == list(reversed(paused))


def test_list_jobs_token_of_another_tenant_is_400(api: Api, clock: ManualClock) -> None:
    # GIVEN a next_token from tenant A's list
    for name in ("a", "b"):
        create(api, name)
        clock.advance(1)
    token = api.get("/v1/jobs?limit=1").body["next_token"]
    assert token
    # WHEN tenant B pages with it
    response = api.get(f"/v1/jobs?limit=1&next_token={token}", tenant=other_tenant(api))
    # THEN 400 on next_token, nothing of A's leaks
    assert_error(response, 400, "next_token")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("limit=1.5", "limit"),
        ("limit=99999999999999999999999", "limit"),
        ("limit=%C2%B2", "limit"),  # "²": a digit to str.isdigit(), not to int()
        ("limit=%D9%A5", "limit"),  # Arabic-Indic 5
        ("status=running", "status"),
        ("status=ACTIVE", "status"),
        ("next_token=garbage", "next_token"),
        ("next_token=%%%", "next_token"),
        ("next_token=WzEsMl0=", "next_token"),  # base64 of a JSON list
    ],
)
def test_list_jobs_invalid_query_is_400_naming_it(api: Api, query: str, field: str) -> None:
    # GIVEN an invalid query parameter
    # WHEN the jobs are listed with it
    response = api.get(f"/v1/jobs?{query}")
    # THEN 400 naming the parameter
    assert_error(response, 400, field)


def test_list_jobs_limit_bounds_are_accepted(api: Api) -> None:
    # GIVEN a job
    create(api)
    # WHEN the jobs are listed with limit 1 and 100
    # THEN both are fine
    assert api.get("/v1/jobs?limit=1").status == 200
    assert api.get("/v1/jobs?limit=100").status == 200


# ---- patch --------------------------------------------------------------------------------


def test_patch_job_changes_fields_and_increments_version(api: Api, clock: ManualClock) -> None:
    # GIVEN a job
    job = create(api, "before", tags={"a": "1"})
    clock.advance(5)
    # WHEN several fields are changed
    response = api.patch(
        f"/v1/jobs/{job['job_id']}",
        {"name": "after", "priority": "high", "payload": {"k": "v"}, "tags": {"b": "2"}},
    )
    # THEN they change, the rest stays, version and updated_at move
    assert response.status == 200, response.body
    patched = response.body
    assert patched["name"] == "after"
    assert patched["priority"] == "high"
    assert patched["payload"] == {"k": "v"}
    assert patched["tags"] == {"b": "2"}
    assert patched["schedule"] == job["schedule"]
    assert patched["version"] == job["version"] + 1
    assert patched["created_at"] == job["created_at"]
    assert patched["updated_at"] == "2026-11-22T09:00:05.000Z"
    assert api.get(f"/v1/jobs/{job['job_id']}").body == patched


def test_patch_job_schedule_change_moves_next_fire_at(api: Api) -> None:
    # GIVEN an hourly job
    job = create(api)
    # WHEN its schedule becomes a daily cron
    response = api.patch(f"/v1/jobs/{job['job_id']}", {"schedule": "cron(30 10 * * *)"})
    # THEN the next fire time follows the new schedule
    assert response.status == 200, response.body
    assert response.body["schedule"] == "cron(30 10 * * *)"
    assert response.body["next_fire_at"] == "2026-11-22T10:30:00.000Z"


def test_patch_job_if_match_mismatch_is_412(api: Api) -> None:
    # GIVEN a job at version 1
    job = create(api)
    # WHEN it is patched with If-Match: 7
    response = api.patch(
        f"/v1/jobs/{job['job_id']}", {"priority": "low"}, headers={"If-Match": "7"}
    )
    # THEN 412 and nothing changes
    assert_error(response, 412, "If-Match")
    assert api.get(f"/v1/jobs/{job['job_id']}").body["priority"] == "medium"


@pytest.mark.parametrize("if_match", ["1", '"1"'])
def test_patch_job_if_match_current_version_is_200(api: Api, if_match: str) -> None:
    # GIVEN a job at version 1
    job = create(api)
    # WHEN it is patched with a matching If-Match
    response = api.patch(
        f"/v1/jobs/{job['job_id']}", {"priority": "low"}, headers={"If-Match": if_match}
    )
    # THEN it changes
    assert response.status == 200, response.body
    assert response.body["priority"] == "low"
    assert response.body["version"] == 2


def test_patch_job_stale_if_match_after_another_patch_is_412(api: Api) -> None:
    # GIVEN a job patched once (now version 2)
    job = create(api)
    api.patch(f"/v1/jobs/{job['job_id']}", {"priority": "low"})
    # WHEN a client still holding version 1 patches it
    response = api.patch(
        f"/v1/jobs/{job['job_id']}", {"priority": "high"}, headers={"If-Match": "1"}
    )
    # THEN 412
    assert_error(response, 412)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"unknown": 1}, "unknown"),
        ({"job_id": "0123456789abcdef012345"}, "job_id"),
        ({"status": "paused"}, "status"),
        ({"version": 9}, "version"),
        ({"schedule": "cron(99 * * * *)"}, "schedule"),
        ({"schedule": "at(2020-01-01T00:00:00Z)"}, "schedule"),
        ({"timezone": "Nowhere/Special"}, "timezone"),
        ({"priority": "urgent"}, "priority"),
        ({"target": {"type": "nope"}}, "target"),
        ({"payload": {"blob": "x" * (64 * 1024)}}, "payload"),
        ({"retry": {"max_attempts": 1000}}, "retry"),
    ],
)
def test_patch_job_invalid_is_400_naming_the_field(
    api: Api, body: dict[str, Any], field: str
) -> None:
    # GIVEN a job
    job = create(api)
    # WHEN an invalid patch is sent
    response = api.patch(f"/v1/jobs/{job['job_id']}", body)
    # THEN 400 naming the field, and the job is unchanged
    assert_error(response, 400, field)
    assert api.get(f"/v1/jobs/{job['job_id']}").body == job


def test_patch_job_rename_to_existing_name_is_409(api: Api) -> None:
    # GIVEN two jobs
    create(api, "taken")
    job = create(api, "mine")
    # WHEN one is renamed to the other's name
    response = api.patch(f"/v1/jobs/{job['job_id']}", {"name": "taken"})
    # THEN 409 naming the field
    assert_error(response, 409, "name")
    assert api.get(f"/v1/jobs/{job['job_id']}").body["name"] == "mine"


def test_patch_job_rename_frees_the_old_name(api: Api) -> None:
    # GIVEN a job renamed from "old" to "new"
    job = create(api, "old")
    assert api.patch(f"/v1/jobs/{job['job_id']}", {"name": "new"}).status == 200
    # WHEN a job named "old" is created
    response = api.post("/v1/jobs", job_body("old"))
    # THEN it is allowed, while "new" is taken
    assert response.status == 201, response.body
    assert_error(api.post("/v1/jobs", job_body("new")), 409, "name")


def test_patch_job_completed_with_new_schedule_runs_again(
    api: Api, queue: MemoryQueue, lambda_context: Any
) -> None:
    # GIVEN a one-shot job that ran and completed
    created = create(api, "once", schedule="now")
    pump(queue, worker, lambda_context)
    assert api.get(f"/v1/jobs/{created['job_id']}").body["status"] == "completed"
    # WHEN it is given a new schedule
    response = api.patch(f"/v1/jobs/{created['job_id']}", {"schedule": "cron(30 10 * * *)"})
    # THEN it is active again and will fire at the new time
    assert response.status == 200, response.body
    assert response.body["status"] == "active"
    assert response.body["next_fire_at"] == "2026-11-22T10:30:00.000Z"


def test_patch_job_cancelled_is_409(api: Api) -> None:
    # GIVEN a cancelled job
    job = create(api)
    api.delete(f"/v1/jobs/{job['job_id']}")
    # WHEN it is patched
    response = api.patch(f"/v1/jobs/{job['job_id']}", {"priority": "low"})
    # THEN 409
    assert_error(response, 409)
    assert response.body["error"]["code"] == "conflict"


def test_patch_job_unknown_is_404(api: Api) -> None:
    # GIVEN no such job
    # WHEN it is patched
    response = api.patch("/v1/jobs/0123456789abcdef012345", {"priority": "low"})
    # THEN 404
    assert_error(response, 404)


def test_patch_job_empty_object_is_accepted(api: Api) -> None:
    # GIVEN a job
    job = create(api)
    # WHEN an empty patch is sent
    response = api.patch(f"/v1/jobs/{job['job_id']}", {})
    # THEN 200 and the definition is unchanged
    assert response.status == 200, response.body
    state = {"job_id", "status", "next_fire_at", "created_at", "updated_at", "version", "last_run"}
    assert {k: v for k, v in response.body.items() if k not in state} == {
        k: v for k, v in job.items() if k not in state
    }


# ---- pause / resume / cancel / delete -----------------------------------------------------


def test_pause_resume_cancel_job_move_the_status(api: Api) -> None:
    # GIVEN an active job
    job = create(api)
    path = f"/v1/jobs/{job['job_id']}"
    # WHEN it is paused, resumed, then cancelled
    paused = api.post(f"{path}/pause")
    resumed = api.post(f"{path}/resume")
    cancelled = api.post(f"{path}/cancel")
    # THEN each answers 200 with the Job in its new status and a higher version
    assert (paused.status, paused.body["status"]) == (200, "paused")
    assert (resumed.status, resumed.body["status"]) == (200, "active")
    assert (cancelled.status, cancelled.body["status"]) == (200, "cancelled")
    versions = [job["version"], paused.body["version"], resumed.body["version"]]
    assert versions == sorted(set(versions))
    assert cancelled.body["version"] > resumed.body["version"]
    assert cancelled.body["next_fire_at"] is None
    assert api.get(path).body["status"] == "cancelled"


def test_delete_job_cancels_it(api: Api) -> None:
    # GIVEN an active job
    job = create(api)
    # WHEN it is deleted
    response = api.delete(f"/v1/jobs/{job['job_id']}")
    # THEN it answers 200 with the cancelled Job, which stays readable
    assert response.status == 200, response.body
    assert response.body["status"] == "cancelled"
    assert api.get(f"/v1/jobs/{job['job_id']}").body["status"] == "cancelled"


def test_cancel_job_twice_is_200(api: Api) -> None:
    # GIVEN a cancelled job
    job = create(api)
    api.post(f"/v1/jobs/{job['job_id']}/cancel")
    # WHEN it is cancelled again
    response = api.post(f"/v1/jobs/{job['job_id']}/cancel")
    # THEN it is still cancelled, no error
    assert response.status == 200, response.body
    assert response.body["status"] == "cancelled"


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_pause_or_resume_cancelled_job_is_409(api: Api, action: str) -> None:
    # GIVEN a cancelled job
    job = create(api)
    api.post(f"/v1/jobs/{job['job_id']}/cancel")
    # WHEN it is paused or resumed
    response = api.post(f"/v1/jobs/{job['job_id']}/{action}")
    # THEN 409, and it stays cancelled
    assert_error(response, 409)
    assert api.get(f"/v1/jobs/{job['job_id']}").body["status"] == "cancelled"


def test_resume_active_job_is_a_noop(api: Api) -> None:
    # GIVEN an active job
    job = create(api)
    # WHEN it is resumed
    response = api.post(f"/v1/jobs/{job['job_id']}/resume")
    # THEN 200 with the job unchanged
    assert response.status == 200, response.body
    assert response.body == job


def test_pause_paused_job_is_a_noop(api: Api) -> None:
    # GIVEN a paused job
    job = create(api)
    paused = api.post(f"/v1/jobs/{job['job_id']}/pause").body
    # WHEN it is paused again
    response = api.post(f"/v1/jobs/{job['job_id']}/pause")
    # THEN 200 with the job unchanged
    assert response.status == 200, response.body
    assert response.body == paused


@pytest.mark.parametrize("action", ["pause", "resume", "cancel", "trigger"])
def test_job_action_unknown_job_is_404(api: Api, action: str) -> None:
    # GIVEN no such job
    # WHEN an action is posted to it
    response = api.post(f"/v1/jobs/0123456789abcdef012345/{action}")
    # THEN 404
    assert_error(response, 404)


def test_delete_unknown_job_is_404(api: Api) -> None:
    # GIVEN no such job
    # WHEN it is deleted
    response = api.delete("/v1/jobs/0123456789abcdef012345")
    # THEN 404
    assert_error(response, 404)


# ---- tenant isolation ---------------------------------------------------------------------


def test_jobs_of_another_tenant_answer_404(api: Api) -> None:
    # GIVEN a job of tenant A
    job = create(api, "private", tenant=api.tenant)
    path = f"/v1/jobs/{job['job_id']}"
    # WHEN tenant B reads, changes, pauses, resumes, cancels, triggers or deletes it
    calls = [
        api.get(path, tenant=other_tenant(api)),
        api.patch(path, {"priority": "low"}, tenant=other_tenant(api)),
        api.post(f"{path}/pause", tenant=other_tenant(api)),
        api.post(f"{path}/resume", tenant=other_tenant(api)),
        api.post(f"{path}/cancel", tenant=other_tenant(api)),
        api.post(f"{path}/trigger", tenant=other_tenant(api)),
        api.get(f"{path}/runs", tenant=other_tenant(api)),
        api.delete(path, tenant=other_tenant(api)),
    ]
    # THEN every call answers 404, exactly as for a job that does not exist
    missing = api.get("/v1/jobs/0123456789abcdef012345", tenant=other_tenant(api))
    for response in calls:
        assert_error(response, 404)
        assert response.body["error"]["code"] == missing.body["error"]["code"]
    # AND tenant B lists nothing while tenant A's job is untouched
    assert api.get("/v1/jobs", tenant=other_tenant(api)).body["jobs"] == []
    assert api.get(path, tenant=api.tenant).body == job


# ---- never a 500 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "raw", "headers"),
    [
        ("POST", "/v1/jobs", b"", {}),
        ("POST", "/v1/jobs", b"[]", {}),
        ("POST", "/v1/jobs", b"null", {}),
        ("POST", "/v1/jobs", b"123", {}),
        ("POST", "/v1/jobs", b'{"name": null, "schedule": "now", "target": null}', {}),
        ("POST", "/v1/jobs", b'{"name": "x", "schedule": null, "target": {}}', {}),
        ("POST", "/v1/jobs", b'{"name": "x", "schedule": "now", "target": []}', {}),
        ("POST", "/v1/jobs", b'{"name": 5, "schedule": 5, "target": 5}', {}),
        (
            "POST",
            "/v1/jobs",
            '{"name": "caf\u00e9-\u65e5\u672c", "schedule": "now", "target": {"type": "handler", '
            '"name": "echo"}}'.encode(),
            {},
        ),
        (
            "POST",
            "/v1/jobs",
            '{"name": "ok", "schedule": "cron(\u00bd * * * *)", "target": {"type": "handler", '
            '"name": "echo"}}'.encode(),
            {},
        ),
        (
            "POST",
            "/v1/jobs",
            b'{"name": "ok", "schedule": "now", "timezone": "../../etc/passwd", '
            b'"target": {"type": "handler", "name": "echo"}}',
            {},
        ),
        (
            "POST",
            "/v1/jobs",
            b'{"name": "ok", "schedule": "now", "timezone": "\\u0000", '
            b'"target": {"type": "handler", "name": "echo"}}',
            {},
        ),
        (
            "POST",
            "/v1/jobs",
            b'{"name": "ok", "schedule": "now", "payload": 1e999, '
            b'"target": {"type": "handler", "name": "echo"}}',
            {},
        ),
        ("POST", "/v1/jobs", b'{"a": ' * 2000 + b"1" + b"}" * 2000, {}),
        ("POST", "/v1/jobs", b"{}", {"Idempotency-Key": ""}),
        ("GET", "/v1/jobs?limit=1000000000000000000000000000000000", None, {}),
        ("GET", "/v1/jobs?limit=%00", None, {}),
        ("GET", "/v1/jobs?status=%E2%9C%93", None, {}),
        ("GET", "/v1/jobs?next_token=eyJ4IjogMX0=", None, {}),  # {"x": 1}
        ("GET", "/v1/jobs?next_token=%F0%9F%92%A9", None, {}),
        ("GET", "/v1/jobs/%E2%9C%93", None, {}),
        ("GET", "/v1/jobs/a%2Fb", None, {}),
        ("GET", "/v1/jobs/%00", None, {}),
        ("GET", "/v1/jobs/0123456789abcdef012345/runs?limit=0", None, {}),
        ("GET", "/v1/jobs/0123456789abcdef012345/runs/%E2%9C%93", None, {}),
        ("PATCH", "/v1/jobs/0123456789abcdef012345", b"[]", {}),
        ("PATCH", "/v1/jobs/0123456789abcdef012345", b"{}", {"If-Match": "abc"}),
        ("POST", "/v1/dead-letters/redrive", b"[]", {}),
        ("POST", "/v1/dead-letters/redrive", b'{"run_ids": "x"}', {}),
        ("POST", "/v1/dead-letters/redrive", b'{"run_ids": [1, null]}', {}),
        ("GET", "/v1/dead-letters?limit=-5", None, {}),
        ("GET", "/v1/dead-letters?next_token=!!", None, {}),
        ("DELETE", "/v1/health", None, {}),
    ],
)
def test_api_odd_input_is_never_a_500(
    api: Api, method: str, path: str, raw: bytes | None, headers: dict[str, str]
) -> None:
    # GIVEN an odd request
    # WHEN it is sent
    response = api.call(method, path, raw=raw, headers=headers)
    # THEN it answers a client error or success, never a 500, and errors use the error body
    assert response.status < 500, response.body
    if response.status >= 400:
        assert_error(response, response.status)


def test_patch_job_odd_if_match_is_never_a_500(api: Api) -> None:
    # GIVEN a job
    job = create(api)
    for if_match in ["abc", "", "*", "-1", "1.0", "99999999999999999999999999", "\u00b2", 'W/"1"']:
        # WHEN it is patched with an odd If-Match
        response = api.patch(
            f"/v1/jobs/{job['job_id']}", {"priority": "low"}, headers={"If-Match": if_match}
        )
        # THEN it is a client error or success
        assert response.status < 500, (if_match, response.body)
