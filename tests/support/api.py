"""Calls the real API handler with REST proxy events, as API Gateway would."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from functions.api.handler import lambda_handler
from local.apigw import rest_proxy_event


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]


class Api:
    """A tiny client over the API Lambda handler."""

    def __init__(self, context: Any, tenant: str = "default") -> None:
        self.context = context
        self.tenant = tenant

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        tenant: str | None = None,
    ) -> ApiResponse:
        all_headers = {"X-Tenant-Id": tenant or self.tenant, "Content-Type": "application/json"}
        all_headers.update(headers or {})
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        event = rest_proxy_event(method, path, body=data, headers=all_headers)
        result = lambda_handler(event, self.context)
        text = result.get("body") or ""
        return ApiResponse(
            status=result["statusCode"],
            body=json.loads(text) if text else None,
            headers=result.get("headers") or {},
        )

    def get(self, path: str, **kw: Any) -> ApiResponse:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.call("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> ApiResponse:
        return self.call("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> ApiResponse:
        return self.call("DELETE", path, **kw)


def create_jobs_due_at(api: Api, due: str, n: int, handler: str) -> list[str]:
    """Create `n` one-time jobs `at(due)` delivering to `handler`; returns their ids."""
    ids = []
    for i in range(n):
        resp = api.post(
            "/v1/jobs",
            {
                "name": f"job-{i}",
                "schedule": f"at({due})",
                "target": {"type": "handler", "name": handler},
            },
        )
        assert resp.status == 201, resp.body
        ids.append(resp.body["job_id"])
    return ids
