"""Unit tests for shared.schedule: expected instants are worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.schedule import (
    PAST_TOLERANCE_MS,
    Schedule,
    ScheduleError,
    parse_schedule,
    validate_new_schedule,
)

NY = "America/New_York"
BERLIN = "Europe/Berlin"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms(text: str) -> int:
    """Epoch milliseconds of an RFC 3339 literal."""
    return (datetime.fromisoformat(text) - EPOCH) // timedelta(milliseconds=1)


def cron(expression: str, timezone: str = "UTC", **kwargs: int) -> Schedule:
    """A schedule whose anchor does not matter (cron ignores it)."""
    return parse_schedule(expression, timezone=timezone, anchor_ms=0, **kwargs)


def occurrences(schedule: Schedule, from_text: str, count: int) -> list[int | None]:
    """The next ``count`` occurrences from an instant, None once exhausted."""
    found: list[int | None] = []
    t_ms = ms(from_text)
    for _ in range(count):
        occurrence = schedule.next_at_or_after(t_ms)
        found.append(occurrence)
        if occurrence is None:
            break
        t_ms = occurrence + 1
    return found


def instants(*texts: str) -> list[int | None]:
    """Expected occurrences, written as RFC 3339 literals."""
    return [ms(text) for text in texts]


# --- errors and parsing -------------------------------------------------------


def test_schedule_error_names_field_and_message() -> None:
    # GIVEN / WHEN
    error = ScheduleError("timezone", "unknown time zone 'X'")

    # THEN
    assert isinstance(error, ValueError)
    assert error.field == "timezone"
    assert error.message == "unknown time zone 'X'"


@pytest.mark.parametrize(
    ("expression", "kind", "one_shot"),
    [
        ("now", "now", True),
        ("at(2026-11-22T10:00:00)", "at", True),
        ("rate(5 minutes)", "rate", False),
        ("cron(0 9 * * MON-FRI)", "cron", False),
        ("cron(0 9 ? * MON-FRI *)", "cron", False),
    ],
)
def test_parse_schedule_records_expression_and_kind(
    expression: str, kind: str, one_shot: bool
) -> None:
    # GIVEN / WHEN
    schedule = parse_schedule(
        expression, timezone=NY, anchor_ms=5, start_at_ms=7, end_at_ms=ms("2030-01-01T00:00:00Z")
    )

    # THEN
    assert schedule.expression == expression
    assert schedule.kind == kind
    assert schedule.is_one_shot is one_shot
    assert (schedule.timezone, schedule.anchor_ms, schedule.start_at_ms) == (NY, 5, 7)
    assert schedule.end_at_ms == ms("2030-01-01T00:00:00Z")


def test_parse_schedule_defaults_to_utc() -> None:
    # GIVEN / WHEN
    schedule = parse_schedule("at(2026-11-22T10:00:00)", anchor_ms=0)

    # THEN
    assert schedule.timezone == "UTC"
    assert schedule.next_at_or_after(0) == ms("2026-11-22T10:00:00Z")


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "NOW",
        "now()",
        " now",
        "later",
        "cron 0 9 * * *",
        # rate
        "rate(5 minutes",
        "rate(0 seconds)",
        "rate(0 minutes)",
        "rate(-1 minutes)",
        "rate(1.5 hours)",
        "rate(5 fortnights)",
        "rate(5  minutes)",
        "rate(minutes)",
        # at
        "at()",
        "at(2026-02-30T10:00:00)",
        "at(2026-11-22T24:00:00)",
        "at(2026-11-22 10:00:00)",
        "at(2026-11-22T10:00)",
        "at(2026-11-22)",
        "at(2026-11-22T10:00:00+24:00)",
        "at(2026-11-22T10:00:00+01)",
        "at(2026-11-22T10:00:00.)",
        # cron: shape
        "cron()",
        "cron(0 9 * *)",
        "cron(0 9 * * * * *)",
        "cron(0\u00a09 * * *)",
        "cron(0\t9 * * *)",
        "cron(@daily)",
        # cron: values, names, ranges, steps
        "cron(60 9 * * *)",
        "cron(0 24 * * *)",
        "cron(0 9 0 * *)",
        "cron(0 9 32 * *)",
        "cron(0 9 * 0 *)",
        "cron(0 9 * 13 *)",
        "cron(0 9 * * 8)",
        "cron(0 9 * * FUN)",
        "cron(0 9 * FOO *)",
        "cron(*/0 * * * *)",
        "cron(5-1 * * * *)",
        "cron(0 9 * * FRI-MON)",
        "cron(0 9 * * MON-)",
        "cron(1,,2 * * * *)",
        "cron(*-5 * * * *)",
        "cron(99999 * * * *)",
        # cron: special characters in the wrong place or flavour
        "cron(L 9 * * *)",
        "cron(0 L * * *)",
        "cron(0 9 * L *)",
        "cron(0 9 * * L)",
        "cron(0 9 ? * MON)",
        "cron(0 9 * * ?)",
        "cron(0 9 15W * *)",
        "cron(0 9 LW * *)",
        "cron(0 9 * * 5L)",
        "cron(0 9 1 * 1#2)",
        "cron(0 9 * * 1#6)",
        "cron(0 9 1,L * *)",
        "cron(? 9 * * *)",
        # EventBridge: the '?' rule, numbering, specials, year
        "cron(0 9 ? * ? *)",
        "cron(0 9 1 * 2 *)",
        "cron(0 9 * * * *)",
        "cron(0 9 ? * 0 *)",
        "cron(0 9 ? * 8 *)",
        "cron(0 9 ? * 3#0 *)",
        "cron(0 9 ? * 3#6 *)",
        "cron(0 9 ? * 8L *)",
        "cron(0 9 ? * 2L,3L *)",
        "cron(0 9 32W * ? *)",
        "cron(0 9 0W * ? *)",
        "cron(0 9 1,15W * ? *)",
        "cron(0 9 1,L * ? *)",
        "cron(0 9 L-2 * ? *)",
        "cron(0 9 # * ? *)",
        "cron(0 9 1 * ? 1969)",
        "cron(0 9 1 * ? 2200)",
        "cron(0 9 1 * ? 2028-2027)",
        "cron(0 9 1 * ? L)",
        "cron(0 9 1 ? ? *)",
    ],
)
def test_parse_schedule_rejects_malformed_expression(expression: str) -> None:
    # GIVEN a malformed expression
    # WHEN / THEN
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(expression, anchor_ms=0)
    assert raised.value.field == "schedule"


@pytest.mark.parametrize(
    "timezone", ["Mars/Olympus", "", "America", "../etc/passwd", "/etc/localtime", "localtime"]
)
def test_parse_schedule_rejects_unknown_timezone(timezone: str) -> None:
    # GIVEN / WHEN
    with pytest.raises(ScheduleError) as raised:
        parse_schedule("cron(0 9 * * *)", timezone=timezone, anchor_ms=0)

    # THEN
    assert raised.value.field == "timezone"
    assert raised.value.message == f"unknown time zone {timezone!r}"


@pytest.mark.parametrize("field", ["start_at", "end_at"])
@pytest.mark.parametrize("value", [-1, True, 1.5, ms("9000-01-01T00:00:00Z")])
def test_parse_schedule_rejects_bad_bounds(field: str, value: object) -> None:
    # GIVEN / WHEN
    with pytest.raises(ScheduleError) as raised:
        parse_schedule("rate(1 minute)", anchor_ms=0, **{f"{field}_ms": value})  # type: ignore[arg-type]

    # THEN
    assert raised.value.field == field


# --- now ----------------------------------------------------------------------


def test_now_fires_once_at_anchor() -> None:
    # GIVEN
    anchor = ms("2026-05-01T12:00:00.123Z")
    schedule = parse_schedule("now", anchor_ms=anchor)

    # WHEN / THEN
    assert schedule.next_at_or_after(anchor - 5_000) == anchor
    assert schedule.next_at_or_after(anchor) == anchor
    assert schedule.next_at_or_after(anchor + 1) is None


def test_now_waits_for_later_start_at() -> None:
    # GIVEN
    anchor, start = ms("2026-05-01T12:00:00Z"), ms("2026-05-01T13:00:00Z")
    schedule = parse_schedule("now", anchor_ms=anchor, start_at_ms=start)

    # WHEN / THEN
    assert schedule.next_at_or_after(anchor) == start


def test_now_ignores_earlier_start_at() -> None:
    # GIVEN
    anchor, start = ms("2026-05-01T12:00:00Z"), ms("2026-05-01T11:00:00Z")
    schedule = parse_schedule("now", anchor_ms=anchor, start_at_ms=start)

    # WHEN / THEN
    assert schedule.next_at_or_after(start) == anchor


def test_now_after_end_at_never_fires() -> None:
    # GIVEN
    anchor = ms("2026-05-01T12:00:00Z")
    schedule = parse_schedule("now", anchor_ms=anchor, end_at_ms=anchor - 1)

    # WHEN / THEN
    assert schedule.next_at_or_after(anchor) is None


# --- at -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "timezone", "expected"),
    [
        ("at(2026-11-22T10:00:00)", "UTC", "2026-11-22T10:00:00Z"),
        ("at(2026-11-22T10:00:00)", NY, "2026-11-22T15:00:00Z"),
        ("at(2026-07-22T10:00:00)", NY, "2026-07-22T14:00:00Z"),
        ("at(2026-11-22T10:00:00)", "Asia/Kolkata", "2026-11-22T04:30:00Z"),
        ("at(2026-11-22T10:00:00Z)", "Asia/Tokyo", "2026-11-22T10:00:00Z"),
        ("at(2026-11-22T10:00:00+01:00)", NY, "2026-11-22T09:00:00Z"),
        ("at(2026-11-22T10:00:00-05:30)", BERLIN, "2026-11-22T15:30:00Z"),
        ("at(2026-11-22T10:00:00.25Z)", "UTC", "2026-11-22T10:00:00.250Z"),
        ("at(2026-11-22T10:00:00.123999Z)", "UTC", "2026-11-22T10:00:00.123Z"),
        # Gap: wall time skipped by spring-forward fires at the transition instant.
        ("at(2026-03-08T02:30:00)", NY, "2026-03-08T07:00:00Z"),
        ("at(2026-03-08T02:00:00)", NY, "2026-03-08T07:00:00Z"),
        ("at(2026-03-29T02:59:59.999)", BERLIN, "2026-03-29T01:00:00Z"),
        # Overlap: wall time that occurs twice fires at its first occurrence.
        ("at(2026-11-01T01:30:00)", NY, "2026-11-01T05:30:00Z"),
        ("at(2026-10-25T02:30:00)", BERLIN, "2026-10-25T00:30:00Z"),
        # An offset pins the second occurrence explicitly.
        ("at(2026-11-01T01:30:00-05:00)", NY, "2026-11-01T06:30:00Z"),
    ],
)
def test_at_fires_once_at_the_named_instant(expression: str, timezone: str, expected: str) -> None:
    # GIVEN
    schedule = parse_schedule(expression, timezone=timezone, anchor_ms=0)

    # WHEN
    first = schedule.next_at_or_after(0)

    # THEN
    assert first == ms(expected)
    assert schedule.next_at_or_after(ms(expected) + 1) is None


def test_at_before_start_at_never_fires() -> None:
    # GIVEN
    schedule = parse_schedule(
        "at(2026-11-22T10:00:00Z)", anchor_ms=0, start_at_ms=ms("2026-11-22T10:00:01Z")
    )

    # WHEN / THEN
    assert schedule.next_at_or_after(0) is None


# --- rate ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "period_ms"),
    [
        ("rate(1 second)", 1_000),
        ("rate(1 seconds)", 1_000),
        ("rate(30 seconds)", 30_000),
        ("rate(1 minute)", 60_000),
        ("rate(5 minutes)", 300_000),
        ("rate(7 minute)", 420_000),
        ("rate(1 hour)", 3_600_000),
        ("rate(2 hours)", 7_200_000),
        ("rate(1 day)", 86_400_000),
        ("rate(3 days)", 259_200_000),
    ],
)
def test_rate_fires_every_period_from_anchor(expression: str, period_ms: int) -> None:
    # GIVEN
    anchor = ms("2026-05-01T12:00:00.500Z")
    schedule = parse_schedule(expression, anchor_ms=anchor)

    # WHEN / THEN
    assert schedule.next_at_or_after(anchor - 10) == anchor
    assert schedule.next_at_or_after(anchor) == anchor
    assert schedule.next_at_or_after(anchor + 1) == anchor + period_ms
    assert schedule.next_at_or_after(anchor + period_ms) == anchor + period_ms
    assert schedule.next_at_or_after(anchor + 2 * period_ms - 1) == anchor + 2 * period_ms


def test_rate_anchors_on_start_at() -> None:
    # GIVEN
    schedule = parse_schedule(
        "rate(15 minutes)",
        anchor_ms=ms("2026-05-01T12:03:00Z"),
        start_at_ms=ms("2026-05-01T13:00:00Z"),
    )

    # WHEN
    found = occurrences(schedule, "2026-05-01T12:00:00Z", 3)

    # THEN
    assert found == instants("2026-05-01T13:00:00Z", "2026-05-01T13:15:00Z", "2026-05-01T13:30:00Z")


def test_rate_ignores_dst() -> None:
    # GIVEN a daily rate anchored at 09:00 New York time the day before spring-forward
    schedule = parse_schedule("rate(1 day)", timezone=NY, anchor_ms=ms("2026-03-07T14:00:00Z"))

    # WHEN
    found = occurrences(schedule, "2026-03-07T14:00:00Z", 2)

    # THEN 24 h later is 10:00 EDT, not 09:00
    assert found == instants("2026-03-07T14:00:00Z", "2026-03-08T14:00:00Z")


def test_rate_far_future_is_arithmetic() -> None:
    # GIVEN a one-second rate
    anchor = ms("2026-01-01T00:00:00Z")
    schedule = parse_schedule("rate(1 second)", anchor_ms=anchor)

    # WHEN asking ~7000 years ahead (~2e11 periods: only arithmetic finishes)
    found = schedule.next_at_or_after(ms("8999-12-31T23:59:59.001Z"))

    # THEN
    assert found == ms("9000-01-01T00:00:00Z")


def test_rate_stops_after_end_at() -> None:
    # GIVEN
    schedule = parse_schedule(
        "rate(10 minutes)",
        anchor_ms=ms("2026-05-01T12:00:00Z"),
        end_at_ms=ms("2026-05-01T12:20:00Z"),
    )

    # WHEN
    found = occurrences(schedule, "2026-05-01T12:00:00Z", 5)

    # THEN end_at itself is included
    expected = instants("2026-05-01T12:00:00Z", "2026-05-01T12:10:00Z", "2026-05-01T12:20:00Z")
    assert found == [*expected, None]


# --- cron and DST -------------------------------------------------------------


@pytest.mark.parametrize(
    ("timezone", "start", "expected"),
    [
        (
            NY,
            "2026-03-07T00:00:00Z",
            ("2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"),
        ),
        (
            BERLIN,
            "2026-03-28T00:00:00Z",
            ("2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"),
        ),
    ],
)
def test_cron_daily_in_spring_gap_fires_once_at_transition(
    timezone: str, start: str, expected: tuple[str, ...]
) -> None:
    # GIVEN 02:30 every day, a wall time that does not exist on spring-forward day
    schedule = cron("cron(30 2 * * *)", timezone)

    # WHEN
    found = occurrences(schedule, start, 3)

    # THEN it fires at the transition (03:00 summer time) that day
    assert found == instants(*expected)


@pytest.mark.parametrize(
    ("expression", "timezone", "start", "expected"),
    [
        (
            "cron(30 1 * * *)",
            NY,
            "2026-10-31T00:00:00Z",
            ("2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"),
        ),
        (
            "cron(30 2 * * *)",
            BERLIN,
            "2026-10-24T00:00:00Z",
            ("2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"),
        ),
    ],
)
def test_cron_daily_in_fall_overlap_fires_once_at_first_occurrence(
    expression: str, timezone: str, start: str, expected: tuple[str, ...]
) -> None:
    # GIVEN a daily wall time that occurs twice on fall-back day
    schedule = cron(expression, timezone)

    # WHEN
    found = occurrences(schedule, start, 3)

    # THEN only its first (summer time) occurrence fires
    assert found == instants(*expected)


def test_cron_daily_skips_second_pass_of_overlap() -> None:
    # GIVEN 01:30 New York, asked from inside the repeated hour
    schedule = cron("cron(30 1 * * *)", NY)

    # WHEN asking at 01:10 EST (the second 01:10 of the day)
    found = schedule.next_at_or_after(ms("2026-11-01T06:10:00Z"))

    # THEN 01:30 EST that day (06:30Z) is not an occurrence
    assert found == ms("2026-11-02T06:30:00Z")


@pytest.mark.parametrize(
    ("timezone", "start", "expected"),
    [
        (
            NY,
            "2026-03-08T05:45:00Z",
            (
                "2026-03-08T06:00:00Z",  # 01:00 EST
                "2026-03-08T06:30:00Z",  # 01:30 EST
                "2026-03-08T07:00:00Z",  # 02:00, 02:30 (gap) and 03:00 EDT, once
                "2026-03-08T07:30:00Z",  # 03:30 EDT
            ),
        ),
        (
            BERLIN,
            "2026-03-28T23:45:00Z",
            (
                "2026-03-29T00:00:00Z",  # 01:00 CET
                "2026-03-29T00:30:00Z",  # 01:30 CET
                "2026-03-29T01:00:00Z",  # 02:00, 02:30 (gap) and 03:00 CEST, once
                "2026-03-29T01:30:00Z",  # 03:30 CEST
            ),
        ),
    ],
)
def test_cron_half_hourly_across_spring_gap(
    timezone: str, start: str, expected: tuple[str, ...]
) -> None:
    # GIVEN
    schedule = cron("cron(*/30 * * * *)", timezone)

    # WHEN
    found = occurrences(schedule, start, len(expected))

    # THEN
    assert found == instants(*expected)


@pytest.mark.parametrize(
    ("timezone", "start", "expected"),
    [
        (
            NY,
            "2026-11-01T04:00:00Z",
            (
                "2026-11-01T04:00:00Z",  # 00:00 EDT
                "2026-11-01T04:30:00Z",  # 00:30 EDT
                "2026-11-01T05:00:00Z",  # 01:00 EDT
                "2026-11-01T05:30:00Z",  # 01:30 EDT; 01:00 and 01:30 EST do not fire
                "2026-11-01T07:00:00Z",  # 02:00 EST
                "2026-11-01T07:30:00Z",  # 02:30 EST
            ),
        ),
        (
            BERLIN,
            "2026-10-24T23:00:00Z",
            (
                "2026-10-24T23:00:00Z",  # 01:00 CEST
                "2026-10-24T23:30:00Z",  # 01:30 CEST
                "2026-10-25T00:00:00Z",  # 02:00 CEST
                "2026-10-25T00:30:00Z",  # 02:30 CEST; 02:00 and 02:30 CET do not fire
                "2026-10-25T02:00:00Z",  # 03:00 CET
                "2026-10-25T02:30:00Z",  # 03:30 CET
            ),
        ),
    ],
)
def test_cron_half_hourly_across_fall_overlap(
    timezone: str, start: str, expected: tuple[str, ...]
) -> None:
    # GIVEN
    schedule = cron("cron(*/30 * * * *)", timezone)

    # WHEN
    found = occurrences(schedule, start, len(expected))

    # THEN
    assert found == instants(*expected)


@pytest.mark.parametrize(
    ("timezone", "asked", "expected"),
    [
        (NY, "2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z"),
        (NY, "2026-03-08T07:00:00Z", "2026-03-08T07:00:00Z"),
        (NY, "2026-03-08T07:00:00.001Z", "2026-03-08T07:30:00Z"),
        (NY, "2026-11-01T05:31:00Z", "2026-11-01T07:00:00Z"),
        (NY, "2026-11-01T06:10:00Z", "2026-11-01T07:00:00Z"),
        (BERLIN, "2026-10-25T01:10:00Z", "2026-10-25T02:00:00Z"),
    ],
)
def test_cron_half_hourly_asked_near_transition(timezone: str, asked: str, expected: str) -> None:
    # GIVEN
    schedule = cron("cron(*/30 * * * *)", timezone)

    # WHEN
    found = schedule.next_at_or_after(ms(asked))

    # THEN
    assert found == ms(expected)


@pytest.mark.parametrize(
    ("timezone", "start", "expected"),
    [
        (NY, "2026-03-07T00:00:00Z", ("2026-03-07T14:00:00Z", "2026-03-08T13:00:00Z")),
        (NY, "2026-10-31T00:00:00Z", ("2026-10-31T13:00:00Z", "2026-11-01T14:00:00Z")),
        (BERLIN, "2026-03-28T00:00:00Z", ("2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z")),
        (BERLIN, "2026-10-24T00:00:00Z", ("2026-10-24T07:00:00Z", "2026-10-25T08:00:00Z")),
    ],
)
def test_cron_fixed_local_time_moves_in_utc_across_transitions(
    timezone: str, start: str, expected: tuple[str, ...]
) -> None:
    # GIVEN 09:00 local every day
    schedule = cron("cron(0 9 * * *)", timezone)

    # WHEN
    found = occurrences(schedule, start, 2)

    # THEN 09:00 local, an hour apart in UTC
    assert found == instants(*expected)


def test_cron_every_minute_collapses_gap_and_skips_overlap() -> None:
    # GIVEN every minute in Berlin
    schedule = cron("cron(* * * * *)", BERLIN)

    # WHEN walking over the gap and the overlap
    spring = occurrences(schedule, "2026-03-29T00:58:00Z", 4)
    fall = occurrences(schedule, "2026-10-25T00:58:00Z", 4)

    # THEN
    assert spring == instants(
        "2026-03-29T00:58:00Z",
        "2026-03-29T00:59:00Z",
        "2026-03-29T01:00:00Z",  # 02:00-02:59 (gap) and 03:00 CEST, once
        "2026-03-29T01:01:00Z",
    )
    assert fall == instants(
        "2026-10-25T00:58:00Z",
        "2026-10-25T00:59:00Z",  # 02:59 CEST; the repeated 02:00-02:59 CET is skipped
        "2026-10-25T02:00:00Z",  # 03:00 CET
        "2026-10-25T02:01:00Z",
    )


# --- cron fields --------------------------------------------------------------


def test_cron_feb_29_waits_for_leap_year() -> None:
    # GIVEN
    schedule = cron("cron(0 12 29 2 *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 2)

    # THEN
    assert found == instants("2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z")


def test_cron_unix_dom_and_dow_match_either() -> None:
    # GIVEN the 13th OR any Friday (Vixie cron)
    schedule = cron("cron(0 9 13 * 5)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 4)

    # THEN Fri 2, Fri 9, Tue 13, Fri 16
    assert found == instants(
        "2026-01-02T09:00:00Z",
        "2026-01-09T09:00:00Z",
        "2026-01-13T09:00:00Z",
        "2026-01-16T09:00:00Z",
    )


@pytest.mark.parametrize("dow", ["0", "7", "SUN", "sun"])
def test_cron_unix_sunday_is_0_or_7(dow: str) -> None:
    # GIVEN
    schedule = cron(f"cron(0 9 * * {dow})")

    # WHEN
    found = schedule.next_at_or_after(ms("2026-01-01T00:00:00Z"))

    # THEN Sunday 4 January 2026
    assert found == ms("2026-01-04T09:00:00Z")


def test_cron_unix_weekday_range_and_month_names() -> None:
    # GIVEN weekdays in March and June only
    schedule = cron("cron(15 8 * MAR,jun MON-FRI)")

    # WHEN from Saturday 28 Feb 2026
    found = occurrences(schedule, "2026-02-28T00:00:00Z", 2)

    # THEN Mon 2 Mar, Tue 3 Mar
    assert found == instants("2026-03-02T08:15:00Z", "2026-03-03T08:15:00Z")


def test_cron_unix_steps_and_lists() -> None:
    # GIVEN minutes 10-50/20 at hours 1 and 3
    schedule = cron("cron(10-50/20 1,3 * * *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 4)

    # THEN
    assert found == instants(
        "2026-01-01T01:10:00Z",
        "2026-01-01T01:30:00Z",
        "2026-01-01T01:50:00Z",
        "2026-01-01T03:10:00Z",
    )


def test_cron_unix_last_day_of_month() -> None:
    # GIVEN
    schedule = cron("cron(0 10 L * *)")

    # WHEN
    found = occurrences(schedule, "2026-02-01T00:00:00Z", 2)

    # THEN
    assert found == instants("2026-02-28T10:00:00Z", "2026-03-31T10:00:00Z")


def test_cron_unix_nth_weekday_uses_unix_numbering() -> None:
    # GIVEN 2#2: second Tuesday (2 = TUE in Unix cron)
    schedule = cron("cron(0 10 * * 2#2)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 2)

    # THEN
    assert found == instants("2026-01-13T10:00:00Z", "2026-02-10T10:00:00Z")


def test_cron_eventbridge_dow_1_is_sunday() -> None:
    # GIVEN
    schedule = cron("cron(0 9 ? * 1 *)")

    # WHEN
    found = schedule.next_at_or_after(ms("2026-01-01T00:00:00Z"))

    # THEN Sunday 4 January 2026
    assert found == ms("2026-01-04T09:00:00Z")


@pytest.mark.parametrize("dow", ["2-6", "MON-FRI"])
def test_cron_eventbridge_weekday_range(dow: str) -> None:
    # GIVEN Monday to Friday in EventBridge numbering
    schedule = cron(f"cron(0 9 ? * {dow} *)")

    # WHEN from Saturday 3 January 2026
    found = occurrences(schedule, "2026-01-03T00:00:00Z", 2)

    # THEN Mon 5, Tue 6
    assert found == instants("2026-01-05T09:00:00Z", "2026-01-06T09:00:00Z")


def test_cron_eventbridge_last_day_of_month() -> None:
    # GIVEN
    schedule = cron("cron(0 10 L * ? *)")

    # WHEN
    found = occurrences(schedule, "2028-02-01T00:00:00Z", 2)

    # THEN
    assert found == instants("2028-02-29T10:00:00Z", "2028-03-31T10:00:00Z")


def test_cron_eventbridge_l_in_dow_is_saturday() -> None:
    # GIVEN
    schedule = cron("cron(0 10 ? * L *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 2)

    # THEN Saturdays 3 and 10 January 2026
    assert found == instants("2026-01-03T10:00:00Z", "2026-01-10T10:00:00Z")


def test_cron_eventbridge_last_friday() -> None:
    # GIVEN 6L: last FRI (6 in EventBridge numbering)
    schedule = cron("cron(0 10 ? * 6L *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 3)

    # THEN
    assert found == instants("2026-01-30T10:00:00Z", "2026-02-27T10:00:00Z", "2026-03-27T10:00:00Z")


def test_cron_eventbridge_last_weekday_of_month() -> None:
    # GIVEN LW
    schedule = cron("cron(0 0 LW * ? *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 5)

    # THEN Jan 31 is a Saturday, Mar 31 a Tuesday, May 31 a Sunday
    assert found == instants(
        "2026-01-30T00:00:00Z",
        "2026-02-27T00:00:00Z",
        "2026-03-31T00:00:00Z",
        "2026-04-30T00:00:00Z",
        "2026-05-29T00:00:00Z",
    )


@pytest.mark.parametrize(
    ("dom", "start", "expected"),
    [
        ("15W", "2026-01-01T00:00:00Z", "2026-01-15T00:00:00Z"),  # Thursday: itself
        ("15W", "2026-08-01T00:00:00Z", "2026-08-14T00:00:00Z"),  # Saturday: Friday before
        ("15W", "2026-02-01T00:00:00Z", "2026-02-16T00:00:00Z"),  # Sunday: Monday after
        ("1W", "2026-07-15T00:00:00Z", "2026-08-03T00:00:00Z"),  # Sat 1st: Monday the 3rd
        ("31W", "2026-05-01T00:00:00Z", "2026-05-29T00:00:00Z"),  # Sun 31st: Friday the 29th
        ("31W", "2026-04-01T00:00:00Z", "2026-05-29T00:00:00Z"),  # April has no 31st
    ],
)
def test_cron_eventbridge_nearest_weekday(dom: str, start: str, expected: str) -> None:
    # GIVEN
    schedule = cron(f"cron(0 0 {dom} * ? *)")

    # WHEN
    found = schedule.next_at_or_after(ms(start))

    # THEN
    assert found == ms(expected)


def test_cron_eventbridge_nth_weekday() -> None:
    # GIVEN 3#2: second TUE (3 in EventBridge numbering)
    schedule = cron("cron(0 10 ? * 3#2 *)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 2)

    # THEN
    assert found == instants("2026-01-13T10:00:00Z", "2026-02-10T10:00:00Z")


def test_cron_eventbridge_year_field_ends_schedule() -> None:
    # GIVEN
    schedule = cron("cron(0 0 1 1 ? 2027-2028)")

    # WHEN
    found = occurrences(schedule, "2026-01-15T00:00:00Z", 3)

    # THEN
    assert found == [*instants("2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"), None]


def test_cron_eventbridge_year_list_jumps_ahead() -> None:
    # GIVEN every minute, but only in 2030 and 2199
    schedule = cron("cron(* * * * ? 2030,2199)")

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 1)
    last = schedule.next_at_or_after(ms("2031-01-01T00:00:00Z"))

    # THEN
    assert found == instants("2030-01-01T00:00:00Z")
    assert last == ms("2199-01-01T00:00:00Z")


def test_cron_eventbridge_in_timezone() -> None:
    # GIVEN 09:00 Berlin on weekdays
    schedule = cron("cron(0 9 ? * MON-FRI *)", BERLIN)

    # WHEN
    found = schedule.next_at_or_after(ms("2026-07-04T00:00:00Z"))

    # THEN Monday 6 July, 09:00 CEST
    assert found == ms("2026-07-06T07:00:00Z")


@pytest.mark.parametrize("expression", ["cron(0 0 30 2 *)", "cron(0 0 30 2 ? *)"])
def test_cron_impossible_date_has_no_occurrence(expression: str) -> None:
    # GIVEN
    schedule = cron(expression)

    # WHEN / THEN
    assert schedule.next_at_or_after(ms("2026-01-01T00:00:00Z")) is None


def test_cron_respects_start_at_and_end_at() -> None:
    # GIVEN
    schedule = cron(
        "cron(0 9 * * *)",
        start_at_ms=ms("2026-01-10T09:00:00Z"),
        end_at_ms=ms("2026-01-11T09:00:00Z"),
    )

    # WHEN
    found = occurrences(schedule, "2026-01-01T00:00:00Z", 3)

    # THEN
    assert found == [*instants("2026-01-10T09:00:00Z", "2026-01-11T09:00:00Z"), None]


def test_cron_has_no_occurrence_past_year_9000() -> None:
    # GIVEN
    schedule = cron("cron(* * * * *)")

    # WHEN / THEN
    assert schedule.next_at_or_after(ms("9000-01-01T00:00:00Z")) is None


# --- validate_new_schedule ----------------------------------------------------

NOW = ms("2026-05-01T12:00:00Z")


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"expression": "cron(0 9 * *)"}, "schedule", "5 fields"),
        ({"expression": "cron(0 9 * * *)", "timezone": "Nowhere/Town"}, "timezone", "unknown"),
        ({"expression": "at(2026-05-01T11:58:59Z)"}, "schedule", "in the past"),
        ({"expression": "at(2026-05-01T07:58:59)", "timezone": NY}, "schedule", "in the past"),
        ({"expression": "cron(0 0 30 2 ? *)"}, "schedule", "never fires"),
        ({"expression": "cron(0 0 1 1 ? 2020)"}, "schedule", "never fires"),
        ({"expression": "cron(0 9 * * *)", "end_at_ms": NOW - 120_000}, "schedule", "never fires"),
        ({"expression": "rate(5 minutes)", "end_at_ms": NOW - 61_000}, "schedule", "never fires"),
        (
            {"expression": "at(2026-06-01T00:00:00Z)", "start_at_ms": ms("2026-07-01T00:00:00Z")},
            "schedule",
            "never fires",
        ),
        (
            {"expression": "rate(5 minutes)", "start_at_ms": NOW + 10, "end_at_ms": NOW + 9},
            "end_at",
            "before start_at",
        ),
        ({"expression": "rate(0 seconds)"}, "schedule", "at least 1 second"),
        ({"expression": "rate(5 minutes)", "start_at_ms": -5}, "start_at", ""),
    ],
)
def test_validate_new_schedule_names_the_faulty_field(
    kwargs: dict[str, object], field: str, fragment: str
) -> None:
    # GIVEN
    arguments: dict[str, object] = {"timezone": "UTC", "now_ms": NOW, **kwargs}

    # WHEN
    with pytest.raises(ScheduleError) as raised:
        validate_new_schedule(**arguments)  # type: ignore[arg-type]

    # THEN
    assert raised.value.field == field
    assert fragment in raised.value.message


@pytest.mark.parametrize(
    "expression",
    ["at(2026-05-01T11:59:01Z)", "at(2026-05-01T11:59:00Z)", "at(2026-05-01T12:00:00Z)"],
)
def test_validate_new_schedule_tolerates_at_up_to_60s_in_the_past(expression: str) -> None:
    # GIVEN an at() 59 s, exactly 60 s and 0 s before now
    # WHEN
    schedule = validate_new_schedule(expression, timezone="UTC", now_ms=NOW)

    # THEN it is kept, and still fires
    assert schedule.next_at_or_after(NOW - PAST_TOLERANCE_MS) == ms(expression[3:-1])


def test_validate_new_schedule_anchors_on_now() -> None:
    # GIVEN / WHEN
    now = validate_new_schedule("now", timezone="UTC", now_ms=NOW)
    rate = validate_new_schedule("rate(1 hour)", timezone="UTC", now_ms=NOW)

    # THEN
    assert now.anchor_ms == NOW
    assert now.next_at_or_after(NOW) == NOW
    assert rate.next_at_or_after(NOW + 1) == NOW + 3_600_000


def test_validate_new_schedule_keeps_given_anchor() -> None:
    # GIVEN a rate created an hour and a minute ago
    anchor = NOW - 3_660_000

    # WHEN
    schedule = validate_new_schedule("rate(1 hour)", timezone="UTC", now_ms=NOW, anchor_ms=anchor)

    # THEN
    assert schedule.anchor_ms == anchor
    assert schedule.next_at_or_after(NOW) == anchor + 2 * 3_600_000


def test_validate_new_schedule_accepts_schedule_with_future_occurrence() -> None:
    # GIVEN second Tuesdays 09:00 Berlin, until the end of June 2026
    # WHEN validated on 1 May
    schedule = validate_new_schedule(
        "cron(0 9 ? * 3#2 2026-2030)",
        timezone=BERLIN,
        now_ms=NOW,
        start_at_ms=NOW,
        end_at_ms=ms("2026-06-30T00:00:00Z"),
    )

    # THEN Tuesday 12 May, 09:00 CEST, then nothing
    found = occurrences(schedule, "2026-05-01T12:00:00Z", 3)
    assert found == [*instants("2026-05-12T07:00:00Z", "2026-06-09T07:00:00Z"), None]


def test_validate_new_schedule_now_waits_for_start_at() -> None:
    # GIVEN / WHEN
    schedule = validate_new_schedule("now", timezone="UTC", now_ms=NOW, start_at_ms=NOW + 1)

    # THEN
    assert schedule.next_at_or_after(NOW) == NOW + 1
