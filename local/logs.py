"""What the local runtime prints: one human line per run outcome (from the executor's
`run_finished` record), warnings and errors as Powertools JSON, and no EMF metrics (there is no
CloudWatch here)."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from shared.observability import logger, metrics

RUN_FINISHED = "run_finished"


def run_line(record: logging.LogRecord) -> str:
    """`run_finished` as one line: time, status, job, run, attempt, lag, duration, tenant."""

    def field(name: str) -> Any:
        return getattr(record, name, None)

    at = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
    parts = [
        f"{at}Z",
        f"run {field('status') or '?':<9}",
        f"job={field('job_id')}",
        f"run={field('run_id')}",
        f"attempt={field('attempt')}",
        f"lag={field('lag_ms')}ms",
        f"duration={field('duration_ms')}ms",
        f"tenant={field('tenant_id')}",
    ]
    for extra in ("error_code", "reason"):
        if field(extra):
            parts.append(f"{extra.removesuffix('_code')}={field(extra)}")
    return "  ".join(parts)


class RunLineHandler(logging.Handler):
    """Prints `run_finished` records as run lines; ignores every other record."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(level=logging.INFO)
        self._out = out
        self._write_lock = threading.Lock()
        self.addFilter(lambda record: record.msg == RUN_FINISHED)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = run_line(record)
            with self._write_lock:
                self._out.write(line + "\n")
                self._out.flush()
        except Exception:  # noqa: BLE001 - logging must never break a handler
            self.handleError(record)


def _warnings_and_up(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


def install_logging(out: TextIO | None = None, *, verbose: bool = False) -> Callable[[], None]:
    """Route the Powertools logger for a terminal; returns what undoes it. `verbose` keeps
    every structured record (JSON) besides the run lines."""
    out = out or sys.stdout
    std = logging.getLogger(logger.name)
    previous_level = std.level
    std.setLevel(logging.DEBUG if verbose else logging.INFO)
    quiet_handlers = [] if verbose else list(std.handlers)
    for handler in quiet_handlers:
        handler.addFilter(_warnings_and_up)
    run_lines = RunLineHandler(out)
    std.addHandler(run_lines)
    restore_metrics = _drop_metrics()

    def undo() -> None:
        std.removeHandler(run_lines)
        for handler in quiet_handlers:
            handler.removeFilter(_warnings_and_up)
        std.setLevel(previous_level)
        restore_metrics()

    return undo


def _drop_metrics() -> Callable[[], None]:
    """Powertools prints EMF to stdout on every invocation (and whenever 100 values pile up);
    locally nothing collects it. Also, the one Metrics object is shared by the runtime's
    threads, and serializing it while another thread adds a value can raise."""
    provider = metrics.provider
    saved = provider.__dict__.get("add_metric"), provider.__dict__.get("flush_metrics")

    def add_metric(*args: Any, **kwargs: Any) -> None:
        return None

    def flush_metrics(*args: Any, **kwargs: Any) -> None:
        return None

    provider.add_metric = add_metric  # type: ignore[method-assign]
    provider.flush_metrics = flush_metrics  # type: ignore[method-assign]

    def restore() -> None:
        for name, value in zip(("add_metric", "flush_metrics"), saved, strict=True):
            if value is None:
                provider.__dict__.pop(name, None)
            else:
                setattr(provider, name, value)

    return restore
