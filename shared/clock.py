"""Injected time: production uses the system clock, tests a controllable one."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Source of the current time and of waiting."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch, UTC."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait; a test clock advances instead."""
        ...

    def sleep_until(self, ms: int) -> None:
        """Wait until the epoch-ms moment `ms` (no wait if it has passed)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        """Milliseconds since the epoch, UTC."""
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> None:
        """Sleep for real."""
        if seconds > 0:
            time.sleep(seconds)

    def sleep_until(self, ms: int) -> None:
        """Sleep for real until `ms`."""
        self.sleep((ms - self.now_ms()) / 1000)


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start_ms: int) -> None:
        self._now = start_ms
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        """The current fake time."""
        with self._lock:
            return self._now

    def set(self, now_ms: int) -> None:
        """Jump to a time."""
        with self._lock:
            self._now = now_ms

    def advance(self, seconds: float) -> None:
        """Move forward."""
        with self._lock:
            self._now += round(seconds * 1000)

    def sleep(self, seconds: float) -> None:
        """Advance instead of waiting."""
        if seconds > 0:
            self.advance(seconds)

    def sleep_until(self, ms: int) -> None:
        """Move to `ms` unless time is already past it (threads waiting for the same moment
        share it: time does not add up)."""
        with self._lock:
            self._now = max(self._now, ms)


def ms_to_datetime(ms: int) -> datetime:
    """Epoch milliseconds to an aware UTC datetime."""
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=millis * 1000)


def datetime_to_ms(value: datetime) -> int:
    """An aware datetime to epoch milliseconds (naive is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp() * 1000)


def format_ms(ms: int) -> str:
    """RFC 3339 UTC with milliseconds, e.g. 2026-11-22T09:00:00.000Z."""
    dt = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_rfc3339_ms(text: str) -> int:
    """Parse an RFC 3339 timestamp with an offset or Z into epoch milliseconds."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError("timestamp needs a time zone offset or Z")
    return datetime_to_ms(value)
