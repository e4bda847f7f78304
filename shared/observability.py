"""The one Logger, Metrics and Tracer every handler and service uses."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from shared.constants import METRICS_NAMESPACE

SERVICE = "punctual"

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE)
tracer = Tracer(service=SERVICE)


def count(name: str, value: int = 1) -> None:
    """Add to a count metric (EMF, flushed by the handler)."""
    if value:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def milliseconds(name: str, value: float) -> None:
    """Record a duration or lag in milliseconds."""
    metrics.add_metric(name=name, unit=MetricUnit.Milliseconds, value=max(0.0, value))
