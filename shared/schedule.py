"""Schedule expressions: parsing, validation and next-occurrence arithmetic.

Pure code: no I/O, no AWS and no clock. Every instant is an ``int`` of epoch
milliseconds (UTC) passed in by the caller.

Expressions
-----------
``now``
    Once, at the job's creation time (``anchor_ms``), or at ``start_at`` if later.
``at(2026-11-22T10:00:00)``
    Once, at that wall time in ``timezone``. Optional fraction (``.250``; digits
    past milliseconds are truncated). With ``Z`` or ``+01:00`` the instant is
    absolute and ``timezone`` is ignored.
``rate(N unit)``
    Every N seconds/minutes/hours/days (singular or plural, N >= 1) in absolute
    time, so DST does not move it: anchor, anchor + P, anchor + 2P, ... where the
    anchor is ``start_at`` if given, else the creation time.
``cron(min hour dom month dow)``
    Unix (Vixie) cron: dow 0-7 with 0 and 7 = Sunday, names SUN-SAT and JAN-DEC.
    When both dom and dow are restricted (anything but a bare ``*``) a day
    matches if either does. Of croniter's extensions only ``L`` (last day) in dom
    and ``n#k`` (k-th weekday n) in dow are accepted; ``?``, ``W`` and ``nL``
    are EventBridge syntax and rejected here. ``n#k`` needs dom ``*``, because
    croniter intersects rather than unites the two fields in that case.
``cron(min hour dom month dow year)``
    AWS EventBridge cron: dow 1-7 with 1 = SUN ... 7 = SAT, year 1970-2199, and
    exactly one of dom/dow must be ``?``. dom also takes ``L``, ``LW`` and ``nW``;
    dow also takes ``L`` (= 7, Saturday), ``nL`` (last weekday n of the month)
    and ``n#k``. ``nW`` never crosses a month boundary and does not fire in a
    month without day n, just as plain ``n`` would not.

In both cron forms ``L``, ``W``, ``#`` and ``?`` must be the whole field (no
lists), ranges must ascend (no ``FRI-MON`` wrap-around), and steps are >= 1.

Time zones and DST
------------------
Cron and wall-clock ``at()`` are evaluated in ``timezone`` (an IANA name).
Each local wall time maps to one instant: a wall time that occurs twice (the
fall-back overlap) maps to its first occurrence, so the repeated hour does not
fire again; a wall time that does not exist (the spring-forward gap) maps to the
transition instant that ends the gap, and several such wall times collapse into
that single firing. Cron schedules have no occurrences before 1970 or from the
year 9000 on.
"""

from __future__ import annotations

import calendar
import dataclasses
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, croniter

__all__ = [
    "PAST_TOLERANCE_MS",
    "Schedule",
    "ScheduleError",
    "ScheduleKind",
    "parse_schedule",
    "validate_new_schedule",
]

ScheduleKind = Literal["now", "at", "rate", "cron"]

# A client's "now" and ours differ by request latency and clock skew, so an
# at() this little in the past (and a schedule whose last occurrence is) still counts.
PAST_TOLERANCE_MS: Final = 60_000

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)
_ONE_MINUTE: Final = timedelta(minutes=1)
# Larger than any DST shift in tzdata (2 h at most), so one window this wide
# around an instant sees at most one offset change on each side.
_MAX_OFFSET_SHIFT_MS: Final = 3 * 3_600_000
# Keeps every date computation well inside datetime's range (year 9999).
_HORIZON_MS: Final = (datetime(9000, 1, 1, tzinfo=UTC) - _EPOCH) // _ONE_MS
# Each cron step either returns or advances by at least a minute (a day or a
# year when skipping). Real walks take a few hundred steps at most (minutely
# cron across a DST overlap); the bound only guarantees termination, and a walk
# that hits it reports no occurrence rather than spin.
_MAX_CRON_STEPS: Final = 10_000

_RATE_UNIT_MS: Final = {"second": 1_000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000}

_WRAPPER_RE: Final = re.compile(r"(at|rate|cron)\((.*)\)", re.ASCII | re.DOTALL)
_AT_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})?",
    re.ASCII,
)
_RATE_RE: Final = re.compile(r"(\d{1,9}) (second|minute|hour|day)s?", re.ASCII)
# IANA names only: this keeps out paths ("../x", "/etc/localtime") that
# ZoneInfo would otherwise try to open.
_ZONE_NAME_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*", re.ASCII)
# Files under the zoneinfo directory that are not IANA zones, or not plain ones
# ("right/" zones count leap seconds).
_NOT_ZONES: Final = frozenset({"localtime", "posixrules"})
_NOT_ZONE_DIRS: Final = frozenset({"posix", "right"})

_ITEM_RE: Final = re.compile(r"(\*|[0-9A-Za-z]+)(?:-([0-9A-Za-z]+))?(?:/(\d{1,4}))?", re.ASCII)
_NEAREST_WEEKDAY_RE: Final = re.compile(r"(\d{1,2})W", re.ASCII | re.IGNORECASE)
_LAST_WEEKDAY_RE: Final = re.compile(r"([0-9A-Za-z]+)L", re.ASCII | re.IGNORECASE)
_NTH_WEEKDAY_RE: Final = re.compile(r"([0-9A-Za-z]+)#(\d)", re.ASCII)


class ScheduleError(ValueError):
    """Invalid schedule input: names the request field and the reason."""

    def __init__(self, field: str, message: str) -> None:
        """``field`` is "schedule", "timezone", "start_at" or "end_at"."""
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# --- instants and wall times ------------------------------------------------


def _to_ms(instant: datetime) -> int:
    """Epoch milliseconds of an aware datetime (exact integer arithmetic)."""
    return (instant - _EPOCH) // _ONE_MS


def _wall_at(t_ms: int, zone: ZoneInfo) -> datetime:
    """The naive local wall time in ``zone`` at instant ``t_ms``."""
    return (_EPOCH + t_ms * _ONE_MS).astimezone(zone).replace(tzinfo=None)


def _wall_to_ms(wall: datetime, zone: ZoneInfo) -> int:
    """The instant a naive wall time in ``zone`` stands for.

    An ambiguous wall time gives its first occurrence (fold=0); a nonexistent
    one gives the first instant after it, i.e. the transition ending the gap.
    """
    first = wall.replace(tzinfo=zone, fold=0)
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall:
        return _to_ms(first)
    # In a gap the two folds read the wall time with the offsets before and
    # after the transition; those two instants bracket it. Bisect on whole
    # seconds (tzdata transitions are on whole seconds) for the first instant
    # whose wall time is past ``wall``.
    low_ms, high_ms = sorted((_to_ms(first), _to_ms(wall.replace(tzinfo=zone, fold=1))))
    low, high = low_ms // 1000, -(-high_ms // 1000)
    while high - low > 1:
        middle = (low + high) // 2
        if _wall_at(middle * 1000, zone) > wall:
            high = middle
        else:
            low = middle
    return high * 1000


# --- rules: one per kind of schedule ----------------------------------------


@dataclasses.dataclass(frozen=True)
class _Once:
    """now / at(): a single instant."""

    at_ms: int

    def next_at_or_after(self, t_ms: int) -> int | None:
        """The instant if it is not before ``t_ms``."""
        return self.at_ms if self.at_ms >= t_ms else None


@dataclasses.dataclass(frozen=True)
class _Rate:
    """rate(): origin + k * period for k >= 0."""

    origin_ms: int
    period_ms: int

    def next_at_or_after(self, t_ms: int) -> int | None:
        """First origin + k * period >= ``t_ms``, by ceiling division."""
        if t_ms <= self.origin_ms:
            return self.origin_ms
        periods = -(-(t_ms - self.origin_ms) // self.period_ms)
        return self.origin_ms + periods * self.period_ms


@dataclasses.dataclass(frozen=True)
class _Cron:
    """cron(): croniter over local wall times, plus the filters croniter lacks."""

    zone: ZoneInfo
    # Five fields, croniter syntax, Unix day-of-week numbering.
    croniter_expression: str
    # Allowed years (EventBridge year field), ascending; None = every year.
    years: tuple[int, ...] | None = None
    # EventBridge ``nW``: croniter clamps n to the month's length; we skip
    # months without day n instead.
    nearest_weekday_to: int | None = None
    # EventBridge ``LW``: croniter cannot express it, so the dom field names
    # the candidate days (26-31) and this keeps only the last weekday.
    last_weekday: bool = False

    def _day_allowed(self, day: date) -> bool:
        """The day-level conditions croniter cannot check itself."""
        days_in_month = calendar.monthrange(day.year, day.month)[1]
        if self.nearest_weekday_to is not None and self.nearest_weekday_to > days_in_month:
            return False
        return not self.last_weekday or day.day == _last_weekday(day.year, day.month)

    def next_at_or_after(self, t_ms: int) -> int | None:
        """First occurrence >= ``t_ms``, or None if there is none."""
        if t_ms >= _HORIZON_MS:
            return None
        t_ms = max(t_ms, 0)
        # Wall time -> instant is monotone but, near a transition, neither
        # one-to-one nor onto, so start at the earliest wall time that could
        # map to >= t_ms (t_ms read with the lowest offset around it) and skip
        # whatever still maps earlier. wall(t + d) - d is t read with the offset at t + d.
        earliest = min(
            _wall_at(t_ms + shift, self.zone) - shift * _ONE_MS
            for shift in (-_MAX_OFFSET_SHIFT_MS, 0, _MAX_OFFSET_SHIFT_MS)
        )
        # croniter yields whole minutes strictly after its start time, so start
        # one minute before the first whole minute that is not before ``earliest``.
        whole_minute = earliest.replace(second=0, microsecond=0)
        start = whole_minute if whole_minute < earliest else whole_minute - _ONE_MINUTE
        walk = croniter(self.croniter_expression, start, ret_type=datetime)
        for _ in range(_MAX_CRON_STEPS):
            try:
                wall = walk.get_next()
            except CroniterBadDateError:
                # croniter gives up after 50 years without a match (e.g. Feb 30).
                return None
            if self.years is not None and wall.year not in self.years:
                later = [year for year in self.years if year > wall.year]
                if not later:
                    return None
                walk.set_current(datetime(later[0], 1, 1) - _ONE_MINUTE)
                continue
            if not self._day_allowed(wall.date()):
                walk.set_current(
                    datetime.combine(wall.date(), time()) + timedelta(days=1, minutes=-1)
                )
                continue
            instant = _wall_to_ms(wall, self.zone)
            if instant >= t_ms:
                return instant
        return None


def _last_weekday(year: int, month: int) -> int:
    """Day of the month of the last Monday-to-Friday day."""
    last = calendar.monthrange(year, month)[1]
    # weekday(): Saturday = 5 steps back 1 day, Sunday = 6 steps back 2.
    return last - max(0, calendar.weekday(year, month, last) - 4)


# --- the public schedule ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A parsed, validated schedule. Build it with parse_schedule()."""

    expression: str
    kind: ScheduleKind
    timezone: str
    anchor_ms: int
    start_at_ms: int | None
    end_at_ms: int | None
    # Derived from the fields above, so it takes no part in equality.
    _rule: _Once | _Rate | _Cron = dataclasses.field(repr=False, compare=False)

    @property
    def is_one_shot(self) -> bool:
        """True for now / at(), which fire at most once."""
        return self.kind in ("now", "at")

    def next_at_or_after(self, t_ms: int) -> int | None:
        """First occurrence >= t_ms (epoch ms, UTC), or None when the schedule has no more."""
        if self.start_at_ms is not None:
            t_ms = max(t_ms, self.start_at_ms)
        occurrence = self._rule.next_at_or_after(t_ms)
        if occurrence is None or (self.end_at_ms is not None and occurrence > self.end_at_ms):
            return None
        return occurrence


def parse_schedule(
    expression: str,
    *,
    timezone: str = "UTC",
    anchor_ms: int,
    start_at_ms: int | None = None,
    end_at_ms: int | None = None,
) -> Schedule:
    """Parse and validate; raises ScheduleError(field, reason).

    ``anchor_ms`` is the job's creation time: when ``now`` fires, and where
    ``rate`` counts from unless ``start_at_ms`` is given. Only syntax and ranges
    are checked here; validate_new_schedule adds the checks against the clock.
    """
    zone = _zone(timezone)
    _check_instant("start_at", start_at_ms)
    _check_instant("end_at", end_at_ms)
    if not isinstance(expression, str) or not expression:
        raise ScheduleError("schedule", "must be a non-empty string")
    if not expression.isascii():
        raise ScheduleError("schedule", "must be ASCII")

    kind: ScheduleKind
    rule: _Once | _Rate | _Cron
    origin_ms = anchor_ms if start_at_ms is None else start_at_ms
    if expression == "now":
        kind, rule = "now", _Once(max(anchor_ms, origin_ms))
    else:
        wrapper = _WRAPPER_RE.fullmatch(expression)
        if wrapper is None:
            raise ScheduleError("schedule", "expected now, at(...), rate(...) or cron(...)")
        body = wrapper[2]
        if wrapper[1] == "at":
            kind, rule = "at", _Once(_parse_at(body, zone))
        elif wrapper[1] == "rate":
            kind, rule = "rate", _Rate(origin_ms, _parse_rate(body))
        else:
            kind, rule = "cron", _parse_cron(body, zone)
    return Schedule(expression, kind, timezone, anchor_ms, start_at_ms, end_at_ms, rule)


def validate_new_schedule(
    expression: str,
    *,
    timezone: str,
    now_ms: int,
    start_at_ms: int | None = None,
    end_at_ms: int | None = None,
    anchor_ms: int | None = None,
) -> Schedule:
    """parse_schedule plus the checks that apply when a client sets a schedule.

    The anchor defaults to ``now_ms``. Also rejects end_at before start_at, an
    at() more than PAST_TOLERANCE_MS before ``now_ms``, and a schedule with no
    occurrence from ``now_ms - PAST_TOLERANCE_MS`` on (Feb 30, a past year, an
    end_at in the past, ...).
    """
    schedule = parse_schedule(
        expression,
        timezone=timezone,
        anchor_ms=now_ms if anchor_ms is None else anchor_ms,
        start_at_ms=start_at_ms,
        end_at_ms=end_at_ms,
    )
    if start_at_ms is not None and end_at_ms is not None and end_at_ms < start_at_ms:
        raise ScheduleError("end_at", "must not be before start_at")
    earliest_ms = now_ms - PAST_TOLERANCE_MS
    rule = schedule._rule
    if schedule.kind == "at" and isinstance(rule, _Once) and rule.at_ms < earliest_ms:
        raise ScheduleError("schedule", "at() time is in the past")
    if schedule.next_at_or_after(earliest_ms) is None:
        raise ScheduleError("schedule", "schedule never fires from now on")
    return schedule


# --- parsing ------------------------------------------------------------------


def _zone(name: str) -> ZoneInfo:
    """Load an IANA time zone or raise ScheduleError("timezone", ...)."""
    unknown = ScheduleError("timezone", f"unknown time zone {name!r}")
    if (
        not isinstance(name, str)
        or not _ZONE_NAME_RE.fullmatch(name)
        or name in _NOT_ZONES
        or name.split("/", 1)[0] in _NOT_ZONE_DIRS
    ):
        raise unknown
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # OSError: a directory such as "America" rather than a zone file.
        raise unknown from None


def _check_instant(field: str, value: int | None) -> None:
    """start_at / end_at must be epoch milliseconds within the supported range."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleError(field, "must be an integer of epoch milliseconds")
    if not 0 <= value < _HORIZON_MS:
        raise ScheduleError(field, "must be between 1970 and the year 9000")


def _parse_at(body: str, zone: ZoneInfo) -> int:
    """Instant of an at() body."""
    match = _AT_RE.fullmatch(body)
    if match is None:
        raise ScheduleError(
            "schedule", "at() needs yyyy-mm-ddThh:mm:ss, optionally .fff and Z or +hh:mm"
        )
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    # Milliseconds are the resolution of every instant here; finer digits are cut.
    millis = int((match[7] or "").ljust(3, "0")[:3])
    offset = match[8]
    offset_ms = 0
    if offset is not None and offset != "Z":
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        if hours > 23 or minutes > 59:
            raise ScheduleError("schedule", f"at() offset {offset} is out of range")
        offset_ms = (-1 if offset[0] == "-" else 1) * (hours * 60 + minutes) * 60_000
    try:
        wall = datetime(year, month, day, hour, minute, second, millis * 1000)
        if offset is None:
            return _wall_to_ms(wall, zone)
        return _to_ms(wall.replace(tzinfo=UTC)) - offset_ms
    except (ValueError, OverflowError) as exc:
        # ValueError: no such date (Feb 30, hour 24); OverflowError: year 1 or 9999 edges.
        raise ScheduleError("schedule", f"at() is not a valid date and time: {exc}") from None


def _parse_rate(body: str) -> int:
    """Period in milliseconds of a rate() body."""
    match = _RATE_RE.fullmatch(body)
    if match is None:
        raise ScheduleError(
            "schedule", "rate() needs 'N unit' with unit second(s), minute(s), hour(s) or day(s)"
        )
    count = int(match[1])
    if count < 1:
        raise ScheduleError("schedule", "rate() must be at least 1 second")
    return count * _RATE_UNIT_MS[match[2]]


@dataclasses.dataclass(frozen=True)
class _FieldSpec:
    """One cron field: its name for messages, its range and its value names."""

    name: str
    low: int
    high: int
    names: Mapping[str, int] = dataclasses.field(default_factory=dict)


_DAY_NAMES: Final = "SUN MON TUE WED THU FRI SAT"
_MONTH_NAMES: Final = "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC"
_MINUTE: Final = _FieldSpec("minute", 0, 59)
_HOUR: Final = _FieldSpec("hour", 0, 23)
_DOM: Final = _FieldSpec("day-of-month", 1, 31)
_MONTH: Final = _FieldSpec("month", 1, 12, {n: i for i, n in enumerate(_MONTH_NAMES.split(), 1)})
_UNIX_DOW: Final = _FieldSpec("day-of-week", 0, 7, {n: i for i, n in enumerate(_DAY_NAMES.split())})
_AWS_DOW: Final = _FieldSpec(
    "day-of-week", 1, 7, {n: i for i, n in enumerate(_DAY_NAMES.split(), 1)}
)
_YEAR: Final = _FieldSpec("year", 1970, 2199)


def _cron_error(spec: _FieldSpec, text: str, reason: str) -> ScheduleError:
    """A ScheduleError naming the cron field at fault."""
    return ScheduleError("schedule", f"cron {spec.name} field {text!r}: {reason}")


def _value(token: str, spec: _FieldSpec, text: str) -> int:
    """One number or name of a field, range-checked."""
    if token.isdigit():
        value = int(token) if len(token) <= 4 else spec.high + 1
    elif token.upper() in spec.names:
        value = spec.names[token.upper()]
    else:
        raise _cron_error(spec, text, f"{token!r} is not a number or a name")
    if not spec.low <= value <= spec.high:
        raise _cron_error(spec, text, f"{token} is outside {spec.low}-{spec.high}")
    return value


def _values(text: str, spec: _FieldSpec) -> list[int] | None:
    """Expand a list of values, ranges and steps; None for a bare ``*``."""
    if text == "*":
        return None
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM_RE.fullmatch(item)
        if match is None or (match[1] == "*" and match[2] is not None):
            raise _cron_error(spec, text, f"malformed item {item!r}")
        first, last, step = match.groups()
        if first == "*":
            low, high = spec.low, spec.high
        else:
            low = _value(first, spec, text)
            if last is not None:
                high = _value(last, spec, text)
            elif step is not None:
                # "a/s" runs to the end of the field, as in Vixie cron and EventBridge.
                high = spec.high
            else:
                high = low
        if low > high:
            raise _cron_error(spec, text, f"range {item!r} runs backwards")
        stride = int(step) if step else 1
        if stride < 1:
            raise _cron_error(spec, text, "step must be at least 1")
        values.update(range(low, high + 1, stride))
    return sorted(values)


def _join(values: list[int] | None) -> str:
    """A croniter field for expanded values."""
    return "*" if values is None else ",".join(str(value) for value in values)


def _parse_cron(body: str, zone: ZoneInfo) -> _Cron:
    """Translate a 5-field (Unix) or 6-field (EventBridge) body for croniter."""
    # Spaces only: other whitespace (tabs, newlines) is an error, not a separator.
    fields = [part for part in body.split(" ") if part]
    if len(fields) == 5:
        rule = _unix_cron(fields, zone)
    elif len(fields) == 6:
        rule = _eventbridge_cron(fields, zone)
    else:
        raise ScheduleError(
            "schedule",
            f"cron() needs 5 fields (Unix) or 6 fields (EventBridge), got {len(fields)}",
        )
    # Our translation should only produce what croniter accepts; if it ever
    # does not, report a schedule error now rather than fail at fire time.
    try:
        croniter(rule.croniter_expression, datetime(2000, 1, 1))
    except CroniterBadCronError as exc:
        raise ScheduleError("schedule", f"unsupported cron expression: {exc}") from None
    return rule


def _common_fields(minute: str, hour: str, month: str) -> tuple[str, str, str]:
    """The fields whose syntax both cron flavours share."""
    return (
        _join(_values(minute, _MINUTE)),
        _join(_values(hour, _HOUR)),
        _join(_values(month, _MONTH)),
    )


def _unix_cron(fields: list[str], zone: ZoneInfo) -> _Cron:
    """Unix cron: min hour dom month dow, dow 0-7 with 0 and 7 = Sunday."""
    minute, hour, dom, month, dow = fields
    if "?" in dom or "?" in dow:
        raise ScheduleError("schedule", "'?' is only valid in 6-field (EventBridge) cron")
    cron_minute, cron_hour, cron_month = _common_fields(minute, hour, month)
    cron_dom = "l" if dom.upper() == "L" else _join(_values(dom, _DOM))
    nth = _NTH_WEEKDAY_RE.fullmatch(dow)
    if nth is not None:
        if dom != "*":
            raise _cron_error(_UNIX_DOW, dow, "'#' needs day-of-month '*'")
        cron_dow = f"{_value(nth[1], _UNIX_DOW, dow) % 7}#{_nth(nth[2], dow)}"
    else:
        days = _values(dow, _UNIX_DOW)
        cron_dow = _join(None if days is None else sorted({day % 7 for day in days}))
    return _Cron(zone, f"{cron_minute} {cron_hour} {cron_dom} {cron_month} {cron_dow}")


def _nth(text: str, dow: str) -> int:
    """The k of ``n#k``: which occurrence of the weekday in the month."""
    k = int(text)
    if not 1 <= k <= 5:
        raise ScheduleError("schedule", f"cron day-of-week field {dow!r}: '#' needs 1-5")
    return k


def _eventbridge_cron(fields: list[str], zone: ZoneInfo) -> _Cron:
    """EventBridge cron: min hour dom month dow year, dow 1-7 with 1 = SUN."""
    minute, hour, dom, month, dow, year = fields
    if (dom == "?") == (dow == "?"):
        raise ScheduleError(
            "schedule", "EventBridge cron needs '?' in exactly one of day-of-month and day-of-week"
        )
    cron_minute, cron_hour, cron_month = _common_fields(minute, hour, month)
    years = _values(year, _YEAR)

    nearest_weekday_to: int | None = None
    last_weekday = False
    nearest = _NEAREST_WEEKDAY_RE.fullmatch(dom)
    if dom == "?":
        cron_dom = "*"
    elif dom.upper() == "L":
        cron_dom = "l"
    elif dom.upper() == "LW":
        # A month ends on a weekday at most two days after its last weekday,
        # and no month is shorter than 28 days.
        cron_dom, last_weekday = "26-31", True
    elif nearest is not None:
        nearest_weekday_to = _value(nearest[1], _DOM, dom)
        cron_dom = f"{nearest_weekday_to}w"
    else:
        cron_dom = _join(_values(dom, _DOM))

    # croniter numbers weekdays 0 = SUN ... 6 = SAT, one less than EventBridge.
    last = _LAST_WEEKDAY_RE.fullmatch(dow)
    nth = _NTH_WEEKDAY_RE.fullmatch(dow)
    if dow == "?":
        cron_dow = "*"
    elif dow.upper() == "L":
        cron_dow = "6"
    elif last is not None:
        cron_dow = f"l{_value(last[1], _AWS_DOW, dow) - 1}"
    elif nth is not None:
        cron_dow = f"{_value(nth[1], _AWS_DOW, dow) - 1}#{_nth(nth[2], dow)}"
    else:
        days = _values(dow, _AWS_DOW)
        cron_dow = _join(None if days is None else [day - 1 for day in days])

    return _Cron(
        zone,
        f"{cron_minute} {cron_hour} {cron_dom} {cron_month} {cron_dow}",
        years=None if years is None else tuple(years),
        nearest_weekday_to=nearest_weekday_to,
        last_weekday=last_weekday,
    )
