"""The project's own CPU time, without the emulator's, and the log bytes it writes.

Every handler invocation is measured with `time.process_time()` (all threads, so the tick's
shard pool counts). Inside it, two wrappers measure per thread (`time.thread_time()`):
- `BaseClient._make_api_call`, outermost calls only: botocore's client side (serialize, sign,
  parse) plus everything below it;
- moto's request stub (`BotocoreStubber.__call__`): the emulator itself.
The billing meter's hooks run inside `_make_api_call` and time themselves (bench/meter.py).
So, per invocation:
  own     = total - api                  (project code, pydantic, Powertools, stdlib)
  botocore = api - moto - meter          (client-side SDK work that also runs on Lambda)
and moto's and the meter's time are left out."""

from __future__ import annotations

import io
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.meter import Meter


@dataclass
class CpuTotals:
    """CPU seconds of one function's invocations."""

    invocations: int = 0
    total: float = 0.0
    api: float = 0.0
    moto: float = 0.0
    meter: float = 0.0
    wall: float = 0.0

    @property
    def own(self) -> float:
        """Project code (and the libraries it runs in-process), without any AWS call."""
        return max(0.0, self.total - self.api)

    @property
    def botocore(self) -> float:
        """The SDK's client-side work (it runs on Lambda too)."""
        return max(0.0, self.api - self.moto - self.meter)


@dataclass
class CpuMeter:
    """Installs the two wrappers; `measure(name)` accumulates one invocation into `totals`."""

    totals: dict[str, CpuTotals] = field(default_factory=dict)
    _api: float = 0.0
    _moto: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)
    _undo: list[Callable[[], None]] = field(default_factory=list)
    _meter: Meter | None = None

    def install(self, meter: Meter) -> None:
        """Wrap botocore's API call and moto's stub (class-wide, until `uninstall`)."""
        from botocore.client import BaseClient
        from moto.core.botocore_stubber import BotocoreStubber

        self._meter = meter
        api_call = BaseClient._make_api_call  # type: ignore[attr-defined]
        stub_call = BotocoreStubber.__call__
        cpu = self

        def make_api_call(client: Any, operation: str, params: Any) -> Any:
            depth = getattr(cpu._local, "depth", 0)
            if depth or meter.inside_hook():
                return api_call(client, operation, params)
            cpu._local.depth = 1
            start = time.thread_time()
            try:
                return api_call(client, operation, params)
            finally:
                spent = time.thread_time() - start
                cpu._local.depth = 0
                with cpu._lock:
                    cpu._api += spent

        def stub(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
            if meter.inside_hook():
                return stub_call(stubber, event_name, request, **kwargs)
            start = time.thread_time()
            try:
                return stub_call(stubber, event_name, request, **kwargs)
            finally:
                spent = time.thread_time() - start
                with cpu._lock:
                    cpu._moto += spent

        BaseClient._make_api_call = make_api_call  # type: ignore[attr-defined]
        BotocoreStubber.__call__ = stub  # type: ignore[method-assign, assignment]

        def undo() -> None:
            BaseClient._make_api_call = api_call  # type: ignore[attr-defined]
            BotocoreStubber.__call__ = stub_call  # type: ignore[method-assign]

        self._undo.append(undo)

    def uninstall(self) -> None:
        """Put botocore and moto back."""
        while self._undo:
            self._undo.pop()()

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        """Account one invocation of `name`."""
        meter_before = self._meter.cpu_seconds if self._meter else 0.0
        with self._lock:
            api_before, moto_before = self._api, self._moto
        wall = time.perf_counter()
        start = time.process_time()
        try:
            yield
        finally:
            total = time.process_time() - start
            wall = time.perf_counter() - wall
            with self._lock:
                api, moto = self._api - api_before, self._moto - moto_before
            meter_spent = (self._meter.cpu_seconds if self._meter else 0.0) - meter_before
            t = self.totals.setdefault(name, CpuTotals())
            t.invocations += 1
            t.total += total
            t.api += api
            t.moto += moto
            t.meter += meter_spent
            t.wall += wall

    def reset(self) -> None:
        """Forget what was measured so far."""
        self.totals.clear()


class _CountingStream(io.TextIOBase):
    def __init__(self, sink: LogSink, name: str | None) -> None:
        self._sink = sink
        self._name = name

    def write(self, text: str) -> int:
        self._sink.add(self._name, len(text.encode("utf-8")))
        return len(text)


@dataclass
class LogSink:
    """Counts (and drops) what the handlers log: Powertools JSON lines and EMF metrics, which
    CloudWatch Logs would ingest and bill."""

    bytes_by_function: dict[str, int] = field(default_factory=dict)
    current: str = "setup"
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str | None, size: int) -> None:
        with self._lock:
            key = name or self.current
            self.bytes_by_function[key] = self.bytes_by_function.get(key, 0) + size

    def stream(self, name: str) -> io.TextIOBase:
        """A stream whose bytes count for `name` (used for the EMF prints on stdout)."""
        return _CountingStream(self, name)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Bytes the logger writes inside the block count for `name`."""
        previous, self.current = self.current, name
        try:
            yield
        finally:
            self.current = previous

    def install(self) -> Callable[[], None]:
        """Point the Powertools logger's stream at the sink; returns what undoes it."""
        from shared.observability import logger

        std = logging.getLogger(logger.name)
        handlers = [h for h in std.handlers if isinstance(h, logging.StreamHandler)]
        saved = [h.setStream(_CountingStream(self, None)) for h in handlers]

        def undo() -> None:
            for handler, stream in zip(handlers, saved, strict=True):
                if stream is not None:
                    handler.setStream(stream)

        return undo

    def reset(self) -> None:
        """Forget the counts."""
        self.bytes_by_function.clear()
