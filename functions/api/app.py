"""API Lambda: translates API Gateway REST proxy events into JobService calls. No logic here
beyond parsing the request, finding the tenant and mapping domain errors to HTTP."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from pydantic import BaseModel, ValidationError

from functions.api.openapi import openapi_document
from shared.errors import (
    Conflict,
    FieldError,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    PunctualError,
    QuotaExceeded,
    Throttled,
    ValidationFailed,
)
from shared.models.api import (
    ErrorBody,
    ErrorDetail,
    ErrorInfo,
    Health,
    JobCreate,
    JobPatch,
    RedriveRequest,
)
from shared.observability import logger
from shared.services.container import get_services
from shared.services.jobs import JobService, parse_limit, request_hash, validation_details

TENANT_HEADER = "X-Tenant-Id"
DEFAULT_TENANT = "default"
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
MAX_IDEMPOTENCY_KEY = 128

STATUS_OF: dict[type[PunctualError], int] = {
    ValidationFailed: 400,
    NotFound: 404,
    Conflict: 409,
    PreconditionFailed: 412,
    PayloadTooLarge: 413,
    QuotaExceeded: 429,
    Throttled: 503,
}

app = APIGatewayRestResolver()


def _json(
    status: int, model: BaseModel | dict[str, Any], headers: dict[str, str] | None = None
) -> Response[str]:
    body = model.model_dump_json() if isinstance(model, BaseModel) else json.dumps(model)
    return Response(
        status_code=status, content_type="application/json", body=body, headers=headers or {}
    )


def error_response(
    status: int, code: str, message: str, details: list[FieldError] | None = None
) -> Response[str]:
    """The one error body: {"error": {"code", "message", "details": [{"field", "message"}]}}."""
    body = ErrorBody(
        error=ErrorInfo(
            code=code,
            message=message,
            details=[ErrorDetail(field=d.field, message=d.message) for d in details or []],
        )
    )
    return _json(status, body)


@app.exception_handler(PunctualError)  # type: ignore[untyped-decorator]
def _domain_error(exc: PunctualError) -> Response[str]:
    status = next((s for cls, s in STATUS_OF.items() if isinstance(exc, cls)), 500)
    return error_response(status, exc.code, exc.message, exc.details)


@app.exception_handler(NotFoundError)  # type: ignore[untyped-decorator]
def _route_not_found(exc: NotFoundError) -> Response[str]:
    return error_response(404, "not_found", "no such route")


@app.not_found
def _no_route(exc: Exception) -> Response[str]:
    return error_response(
        404, "not_found", f"no route for {app.current_event.http_method} {app.current_event.path}"
    )


@app.exception_handler(Exception)  # type: ignore[untyped-decorator]
def _unexpected(exc: Exception) -> Response[str]:
    # A bug or an AWS failure, never the client's input: logged with its trace, answered 500.
    logger.exception("unhandled_error")
    return error_response(500, "internal_error", "internal error; it has been logged")


# ---- request helpers ------------------------------------------------------------------------


def _service() -> JobService:
    return get_services().job_service


def tenant_from_request_context(context: dict[str, Any]) -> str | None:
    """Deployed: the API key id when API keys are used, else the IAM caller (an assumed role
    without its session name, so every session of a role is one tenant)."""
    identity = context.get("identity") or {}
    api_key_id = identity.get("apiKeyId")
    if api_key_id:
        return f"apikey:{api_key_id}"
    arn = identity.get("userArn")
    if arn:
        match = re.match(r"^arn:(aws[a-z-]*):sts::(\d+):assumed-role/([^/]+)/.+$", arn)
        if match:
            partition, account, role = match.groups()
            return f"arn:{partition}:iam::{account}:role/{role}"
        return str(arn)
    return None


def current_tenant() -> str:
    """The caller's tenant: X-Tenant-Id locally, the request context when deployed."""
    event = app.current_event
    if get_services().settings.tenant_source == "header":
        # Absent means the default tenant; present but empty is a mistake worth a 400.
        header = _header(TENANT_HEADER)
        tenant = DEFAULT_TENANT if header is None else header
        if not TENANT_PATTERN.match(tenant):
            raise ValidationFailed(
                "invalid tenant",
                [FieldError(TENANT_HEADER, "1-128 characters of A-Z a-z 0-9 . _ : @ / + = -")],
            )
        return tenant
    caller = tenant_from_request_context(event.raw_event.get("requestContext") or {})
    if caller is None:
        raise ValidationFailed("no caller identity in the request context")
    return caller


def _header(name: str) -> str | None:
    headers = app.current_event.headers or {}
    for key, value in headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _raw_body() -> bytes:
    event = app.current_event
    body = event.body or ""
    if event.is_base64_encoded:
        # Decoded here as bytes: a binary body is the client's mistake (400), not a crash.
        try:
            raw = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValidationFailed(
                "the body is not valid base64", [FieldError("body", "not valid base64")]
            ) from exc
    else:
        raw = body.encode("utf-8", "surrogatepass")
    limit = get_services().settings.max_body_bytes
    if len(raw) > limit:
        raise PayloadTooLarge(f"request body is {len(raw)} bytes; the limit is {limit}")
    return raw


M = TypeVar("M", bound=BaseModel)


def _not_json(constant: str) -> Any:
    # Python's json accepts NaN and Infinity, which JSON does not (they would be stored as null).
    raise ValueError(f"{constant} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:32]} is out of range")
    return value


def _parse(model: type[M], raw: bytes, *, empty_ok: bool = False) -> M:
    if not raw.strip():
        if empty_ok:
            return model()
        raise ValidationFailed("a JSON body is required", [FieldError("body", "missing")])
    try:
        data = json.loads(raw, parse_constant=_not_json, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise ValidationFailed(
            "the body is not valid JSON", [FieldError("body", str(exc))]
        ) from exc
    if not isinstance(data, dict):
        raise ValidationFailed(
            "the body must be a JSON object", [FieldError("body", "not an object")]
        )
    try:
        # "\ud800" is valid JSON but no valid text: it could be neither stored nor sent.
        json.dumps(data, ensure_ascii=False).encode()
    except (UnicodeEncodeError, RecursionError) as exc:
        raise ValidationFailed(
            "the body is not valid JSON",
            [FieldError("body", "a string holds an unpaired surrogate escape")],
        ) from exc
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ValidationFailed("invalid request", validation_details(err)) from err


def _query(name: str) -> str | None:
    params = app.current_event.query_string_parameters or {}
    value = params.get(name)
    return None if value is None else str(value)


def _path(value: str) -> str:
    return unquote(value)


# ---- routes -------------------------------------------------------------------------------


@app.get("/v1/health")
def health() -> Response[str]:
    return _json(200, Health())


@app.get("/v1/openapi.json")
def openapi() -> Response[str]:
    return _json(200, openapi_document())


@app.post("/v1/jobs")
def create_job() -> Response[str]:
    tenant = current_tenant()
    key = _header("Idempotency-Key")
    if key is not None and not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY:
        raise ValidationFailed(
            "invalid Idempotency-Key", [FieldError("Idempotency-Key", "1 to 128 characters")]
        )
    raw = _raw_body()
    body = _parse(JobCreate, raw)
    job, created = _service().create(tenant, body, idempotency_key=key, body_hash=request_hash(raw))
    return _json(201 if created else 200, job)


@app.get("/v1/jobs")
def list_jobs() -> Response[str]:
    tenant = current_tenant()
    page = _service().list_jobs(
        tenant,
        status=_query("status"),
        limit=parse_limit(_query("limit")),
        next_token=_query("next_token"),
    )
    return _json(200, page)


@app.get("/v1/jobs/<job_id>")
def get_job(job_id: str) -> Response[str]:
    return _json(200, _service().get(current_tenant(), _path(job_id)))


@app.patch("/v1/jobs/<job_id>")
def patch_job(job_id: str) -> Response[str]:
    tenant = current_tenant()
    patch = _parse(JobPatch, _raw_body())
    job = _service().update(tenant, _path(job_id), patch, if_match=_header("If-Match"))
    return _json(200, job)


@app.delete("/v1/jobs/<job_id>")
def delete_job(job_id: str) -> Response[str]:
    return _json(200, _service().cancel(current_tenant(), _path(job_id)))


def _action(name: str) -> Callable[[str], Response[str]]:
    def handler(job_id: str) -> Response[str]:
        service = _service()
        action: Callable[[str, str], BaseModel] = getattr(service, name)
        return _json(200, action(current_tenant(), _path(job_id)))

    handler.__name__ = f"{name}_job"
    return handler


for _name in ("pause", "resume", "cancel"):
    app.post(f"/v1/jobs/<job_id>/{_name}")(_action(_name))


@app.post("/v1/jobs/<job_id>/trigger")
def trigger_job(job_id: str) -> Response[str]:
    return _json(202, _service().trigger(current_tenant(), _path(job_id)))


@app.get("/v1/jobs/<job_id>/runs")
def list_runs(job_id: str) -> Response[str]:
    page = _service().list_runs(
        current_tenant(),
        _path(job_id),
        limit=parse_limit(_query("limit")),
        next_token=_query("next_token"),
    )
    return _json(200, page)


@app.get("/v1/jobs/<job_id>/runs/<run_id>")
def get_run(job_id: str, run_id: str) -> Response[str]:
    return _json(200, _service().get_run(current_tenant(), _path(job_id), _path(run_id)))


@app.post("/v1/jobs/<job_id>/runs/<run_id>/retry")
def retry_run(job_id: str, run_id: str) -> Response[str]:
    return _json(202, _service().retry_run(current_tenant(), _path(job_id), _path(run_id)))


@app.get("/v1/dead-letters")
def list_dead_letters() -> Response[str]:
    page = _service().list_dead(
        current_tenant(), limit=parse_limit(_query("limit")), next_token=_query("next_token")
    )
    return _json(200, page)


@app.post("/v1/dead-letters/redrive")
def redrive() -> Response[str]:
    tenant = current_tenant()
    request = _parse(RedriveRequest, _raw_body(), empty_ok=True)
    return _json(202, _service().redrive(tenant, request.run_ids))


@app.get("/v1/metrics")
def metrics() -> Response[str]:
    return _json(200, _service().metrics(current_tenant()))
