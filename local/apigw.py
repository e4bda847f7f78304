"""Builds API Gateway REST proxy events from plain HTTP requests (local runtime and tests)."""

from __future__ import annotations

import base64
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote


def rest_proxy_event(
    method: str,
    raw_path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The event API Gateway (REST, proxy integration) would send for this request."""
    path, _, query = raw_path.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key, value in pairs:
        single[key] = value
        multi.setdefault(key, []).append(value)
    headers = dict(headers or {})
    is_text = True
    text: str | None = None
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            is_text = False
            text = base64.b64encode(body).decode()
    now = time.time()
    return {
        "resource": "/{proxy+}",
        "path": unquote(path),
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": single or None,
        "multiValueQueryStringParameters": multi or None,
        "pathParameters": {"proxy": unquote(path).lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": f"/local{unquote(path)}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(now * 1000),
            "identity": {"sourceIp": source_ip, "userAgent": headers.get("User-Agent", "")},
            "accountId": "000000000000",
            "apiId": "local",
        },
        "body": text,
        "isBase64Encoded": not is_text,
    }
