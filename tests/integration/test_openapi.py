"""The published OpenAPI document: served by the API, complete, valid, and kept in docs/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from functions.api.openapi import openapi_document, render
from shared.services.container import Services
from support.api import Api

DOCS_COPY = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
REGENERATE = "regenerate it with: python -m functions.api.openapi > docs/openapi.json"
# Every operation of API.md, with its success status.
CONTRACT = {
    ("post", "/v1/jobs"): "201",
    ("get", "/v1/jobs"): "200",
    ("get", "/v1/jobs/{job_id}"): "200",
    ("patch", "/v1/jobs/{job_id}"): "200",
    ("delete", "/v1/jobs/{job_id}"): "200",
    ("post", "/v1/jobs/{job_id}/pause"): "200",
    ("post", "/v1/jobs/{job_id}/resume"): "200",
    ("post", "/v1/jobs/{job_id}/cancel"): "200",
    ("post", "/v1/jobs/{job_id}/trigger"): "202",
    ("get", "/v1/jobs/{job_id}/runs"): "200",
    ("get", "/v1/jobs/{job_id}/runs/{run_id}"): "200",
    ("post", "/v1/jobs/{job_id}/runs/{run_id}/retry"): "202",
    ("get", "/v1/dead-letters"): "200",
    ("post", "/v1/dead-letters/redrive"): "202",
    ("get", "/v1/metrics"): "200",
    ("get", "/v1/health"): "200",
}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method, path): op
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS
    }


@pytest.fixture
def served(services: Services, lambda_context: Any) -> dict[str, Any]:
    response = Api(lambda_context).get("/v1/openapi.json")
    assert response.status == 200, response.body
    document: dict[str, Any] = response.body
    return document


def test_openapi_is_served_as_an_openapi_3_document(served: dict[str, Any]) -> None:
    # GIVEN the API
    # WHEN /v1/openapi.json is read (fixture)
    # THEN it is an OpenAPI 3 document equal to the generated one
    assert served["openapi"].startswith("3.")
    assert served["info"]["title"] == "Punctual"
    assert served == json.loads(json.dumps(openapi_document()))


def test_openapi_document_is_valid(served: dict[str, Any]) -> None:
    # GIVEN the served document
    validator = pytest.importorskip("openapi_spec_validator")
    # WHEN it is checked against the OpenAPI specification
    # THEN it is valid, and every $ref points at a schema it defines
    validator.validate(served)
    refs = set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(served)))
    assert refs
    assert refs <= set(served["components"]["schemas"])


def test_openapi_covers_every_operation_of_the_contract(served: dict[str, Any]) -> None:
    # GIVEN the operations of API.md
    documented = operations(served)
    # WHEN the document's operations are compared with them
    missing = set(CONTRACT) - set(documented)
    # THEN each is documented with its success status and an error body for its 4xx
    assert not missing, f"operations missing from the OpenAPI document: {sorted(missing)}"
    for key, ok in CONTRACT.items():
        responses = documented[key]["responses"]
        assert ok in responses, (key, sorted(responses))
        for status, response in responses.items():
            if status.startswith("4"):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (key, status)


def test_openapi_documents_the_contracts_fields(served: dict[str, Any]) -> None:
    # GIVEN the component schemas
    schemas = served["components"]["schemas"]
    # WHEN the request and resource models are looked at
    create = set(schemas["JobCreate"]["properties"])
    job = set(schemas["JobOut"]["properties"])
    run = set(schemas["RunOut"]["properties"])
    # THEN they carry every field API.md names
    writable = {
        "name",
        "schedule",
        "timezone",
        "start_at",
        "end_at",
        "target",
        "payload",
        "priority",
        "retry",
        "timeout_seconds",
        "overlap",
        "misfire",
        "misfire_grace_seconds",
        "depends_on",
        "notify",
        "tags",
    }
    assert writable <= create
    assert set(schemas["JobCreate"]["required"]) == {"name", "schedule", "target"}
    assert (
        writable
        | {
            "job_id",
            "status",
            "next_fire_at",
            "created_at",
            "updated_at",
            "version",
            "last_run",
        }
        <= job
    )
    assert {"run_id", "job_id", "scheduled_for", "status", "attempts", "trigger"} <= run
    assert set(schemas["ErrorBody"]["properties"]) == {"error"}


def test_openapi_every_documented_route_is_served(
    served: dict[str, Any], services: Services, lambda_context: Any
) -> None:
    # GIVEN every operation the document lists
    api = Api(lambda_context)
    for method, path in operations(served):
        concrete = path.replace("{job_id}", "0123456789abcdef012345").replace(
            "{run_id}", "2026-11-22T09:00:00.000Z"
        )
        # WHEN it is called
        response = api.call(method.upper(), concrete)
        # THEN the API has a route for it (a 404 would be for the missing job, not the route)
        assert response.status < 500, (method, path, response.body)
        if response.status == 404:
            assert "no route" not in response.body["error"]["message"], (method, path)


def test_openapi_docs_copy_matches_the_served_document(served: dict[str, Any]) -> None:
    # GIVEN the copy published in docs/openapi.json
    assert DOCS_COPY.exists(), f"{DOCS_COPY} is missing; {REGENERATE}"
    published = json.loads(DOCS_COPY.read_text(encoding="utf-8"))
    # WHEN it is compared with what the API serves
    # THEN they are the same document, in the generator's exact layout
    assert published == served, f"docs/openapi.json is out of date; {REGENERATE}"
    assert DOCS_COPY.read_text(encoding="utf-8") == render() + "\n", (
        f"docs/openapi.json is not in the generator's layout; {REGENERATE}"
    )
