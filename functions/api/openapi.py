"""The OpenAPI 3 document, generated from the pydantic request/response models.

`python -m functions.api.openapi > docs/openapi.json` regenerates the published copy."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from shared.models.api import (
    ErrorBody,
    Health,
    JobCreate,
    JobList,
    JobOut,
    JobPatch,
    MetricsOut,
    RedriveRequest,
    RedriveResult,
    RunList,
    RunOut,
)

REF = "#/components/schemas/{model}"
MODELS: list[type[BaseModel]] = [
    JobCreate,
    JobPatch,
    JobOut,
    JobList,
    RunOut,
    RunList,
    RedriveRequest,
    RedriveResult,
    MetricsOut,
    Health,
    ErrorBody,
]


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": REF.format(model=model.__name__)}


def _json_content(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(model)}}


def _op(
    summary: str,
    ok: int,
    response: type[BaseModel],
    errors: tuple[int, ...],
    *,
    body: type[BaseModel] | None = None,
    params: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {
            str(ok): {"description": "OK", "content": _json_content(response)},
            **{
                str(code): {"description": DESCRIPTIONS[code], "content": _json_content(ErrorBody)}
                for code in errors
            },
        },
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": _json_content(body)}
    if params:
        # A copy: the tenant header is appended to every operation's list later, and a shared
        # list (PAGE) must not collect it.
        op["parameters"] = list(params)
    return op


DESCRIPTIONS = {
    400: "Invalid input: the details name each field and the reason",
    404: "No such resource for this tenant",
    409: "Conflicts with the current state",
    412: "If-Match does not match the job's version",
    413: "Body over the size limit",
    429: "Tenant quota or rate limit",
}


def _path_param(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query_param(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema}


PAGE = [
    _query_param("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}),
    _query_param("next_token", {"type": "string"}),
]
# Served without looking at the caller.
UNSCOPED = ("/v1/health", "/v1/openapi.json")
TENANT = {
    "name": "X-Tenant-Id",
    "in": "header",
    "required": False,
    "description": "Local runtime only: the tenant (default 'default'). Deployed, the tenant "
    "comes from the API Gateway request context.",
    "schema": {"type": "string"},
}


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    """The whole document (cached: it only depends on the code)."""
    _, defs = models_json_schema(
        [(m, "validation") for m in MODELS], ref_template=REF.replace("{model}", "{model}")
    )
    job_id = _path_param("job_id")
    run_id = _path_param("run_id")
    action_errors = (404, 409)
    paths: dict[str, Any] = {
        "/v1/jobs": {
            "post": _op(
                "Create a job",
                201,
                JobOut,
                (400, 409, 413, 429),
                body=JobCreate,
                params=[
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string", "maxLength": 128},
                    }
                ],
            ),
            "get": _op(
                "List the tenant's jobs, newest first",
                200,
                JobList,
                (400,),
                params=[
                    _query_param(
                        "status",
                        {
                            "type": "string",
                            "enum": ["active", "paused", "cancelled", "completed", "failed"],
                        },
                    ),
                    *PAGE,
                ],
            ),
        },
        "/v1/jobs/{job_id}": {
            "get": _op("Get a job", 200, JobOut, (404,), params=[job_id]),
            "patch": _op(
                "Change writable fields",
                200,
                JobOut,
                (400, 404, 409, 412, 413),
                body=JobPatch,
                params=[
                    job_id,
                    {
                        "name": "If-Match",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
            ),
            "delete": _op("Cancel a job", 200, JobOut, action_errors, params=[job_id]),
        },
        **{
            f"/v1/jobs/{{job_id}}/{action}": {
                "post": _op(
                    f"{action.capitalize()} a job", 200, JobOut, action_errors, params=[job_id]
                )
            }
            for action in ("pause", "resume", "cancel")
        },
        "/v1/jobs/{job_id}/trigger": {
            "post": _op(
                "Run the job now, outside its schedule", 202, RunOut, action_errors, params=[job_id]
            )
        },
        "/v1/jobs/{job_id}/runs": {
            "get": _op(
                "List a job's runs, newest first", 200, RunList, (400, 404), params=[job_id, *PAGE]
            )
        },
        "/v1/jobs/{job_id}/runs/{run_id}": {
            "get": _op("Get a run with its attempts", 200, RunOut, (404,), params=[job_id, run_id])
        },
        "/v1/jobs/{job_id}/runs/{run_id}/retry": {
            "post": _op(
                "A fresh attempt budget for a failed or dead run",
                202,
                RunOut,
                action_errors,
                params=[job_id, run_id],
            )
        },
        "/v1/dead-letters": {
            "get": _op("The tenant's dead runs, newest first", 200, RunList, (400,), params=PAGE)
        },
        "/v1/dead-letters/redrive": {
            "post": {
                **_op(
                    "Re-queue dead runs (all, or the listed run ids)",
                    202,
                    RedriveResult,
                    (400, 413),
                    body=RedriveRequest,
                ),
            }
        },
        "/v1/metrics": {
            "get": _op(
                "Run counts and start lag over 15 minutes, queue depths", 200, MetricsOut, ()
            )
        },
        "/v1/health": {"get": _op("Liveness", 200, Health, ())},
        "/v1/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        },
    }
    paths["/v1/dead-letters/redrive"]["post"]["requestBody"]["required"] = False
    for path, item in paths.items():
        if path in UNSCOPED:
            continue
        for operation in item.values():
            operation.setdefault("parameters", []).append(TENANT)
            # Every tenant-scoped call can be refused for its caller identity (X-Tenant-Id).
            operation["responses"].setdefault(
                "400", {"description": DESCRIPTIONS[400], "content": _json_content(ErrorBody)}
            )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Punctual",
            "version": "1.0.0",
            "description": "Second-precise distributed job scheduler on AWS serverless services.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {"schemas": defs.get("$defs", {})},
    }


def render() -> str:
    """The document as published in docs/openapi.json (stable: indented, keys sorted)."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True)


if __name__ == "__main__":
    print(render())
