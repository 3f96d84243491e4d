"""Maintenance windows: when a cron window is open, across midnight and DST, and its config errors."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from service.config.windows import MaintenanceWindow, inside_any

BERLIN = ZoneInfo("Europe/Berlin")


def _window(cron: str, minutes: int, zone: str = "UTC") -> MaintenanceWindow:
    return MaintenanceWindow(cron=cron, duration_minutes=minutes, timezone=zone)


def test_window_is_open_from_its_fire_time_until_the_duration_ends() -> None:
    w = _window("0 2 * * *", 60)
    assert not w.is_open(datetime(2024, 5, 1, 1, 59, 59, tzinfo=UTC))
    assert w.is_open(datetime(2024, 5, 1, 2, 0, tzinfo=UTC))
    assert w.is_open(datetime(2024, 5, 1, 2, 59, 59, tzinfo=UTC))
    assert not w.is_open(datetime(2024, 5, 1, 3, 0, tzinfo=UTC))  # half-open: fire + duration is closed


def test_weekday_window_spanning_midnight_is_open_the_next_morning_only_after_a_weekday() -> None:
    w = _window("0 22 * * mon-fri", 6 * 60)  # 22:00 -> 04:00
    assert w.is_open(datetime(2024, 5, 7, 3, 0, tzinfo=UTC))  # Tuesday 03:00, opened Monday 22:00
    assert w.is_open(datetime(2024, 5, 11, 1, 0, tzinfo=UTC))  # Saturday 01:00, opened Friday 22:00
    assert not w.is_open(datetime(2024, 5, 12, 1, 0, tzinfo=UTC))  # Sunday 01:00: no Saturday window
    assert not w.is_open(datetime(2024, 5, 6, 1, 0, tzinfo=UTC))  # Monday 01:00: no Sunday window
    assert not w.is_open(datetime(2024, 5, 7, 4, 0, tzinfo=UTC))


def test_window_in_a_zone_follows_its_wall_clock() -> None:
    w = _window("0 1 * * *", 60, "Europe/Berlin")
    assert w.is_open(datetime(2024, 7, 1, 23, 30, tzinfo=UTC))  # 01:30 CEST on 2 July
    assert not w.is_open(datetime(2024, 7, 1, 1, 30, tzinfo=UTC))  # 03:30 CEST
    assert w.is_open(datetime(2024, 1, 2, 0, 30, tzinfo=UTC))  # 01:30 CET in winter


def test_duration_is_elapsed_time_across_the_autumn_dst_change() -> None:
    # Opens 01:00 CEST (23:00 UTC) on 27 Oct 2024; clocks fall back at 03:00 CEST to 02:00 CET.
    w = _window("0 1 * * *", 120, "Europe/Berlin")
    assert w.is_open(datetime(2024, 10, 26, 23, 0, tzinfo=UTC))
    assert w.is_open(datetime(2024, 10, 27, 0, 59, tzinfo=UTC))  # 02:59 CEST
    # Two hours of wall clock would reach 03:00 CET, but two elapsed hours end at 02:00 CET.
    assert not w.is_open(datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=BERLIN))  # the second 02:30
    assert w.is_open(datetime(2024, 10, 27, 2, 30, fold=0, tzinfo=BERLIN))  # the first (CEST)
    assert not w.is_open(datetime(2024, 10, 27, 1, 0, tzinfo=UTC))


def test_window_opening_in_the_spring_dst_gap_still_opens_that_night() -> None:
    # 02:30 does not exist in Berlin on 31 Mar 2024 (02:00 CET -> 03:00 CEST): APScheduler fires at
    # the instant 02:30 CET stands for, 01:30 UTC (03:30 CEST), so the night's window is not lost.
    w = _window("30 2 * * *", 30, "Europe/Berlin")
    assert not w.is_open(datetime(2024, 3, 31, 1, 29, tzinfo=UTC))
    assert w.is_open(datetime(2024, 3, 31, 1, 45, tzinfo=UTC))
    assert not w.is_open(datetime(2024, 3, 31, 2, 0, tzinfo=UTC))


def test_a_window_longer_than_its_period_is_always_open() -> None:
    w = _window("0 * * * *", 90)  # every hour, 90 minutes each
    assert all(w.is_open(datetime(2024, 5, 1, h, m, tzinfo=UTC)) for h in range(3, 6) for m in (0, 31, 59))


def test_inside_any_is_open_when_one_window_is() -> None:
    night = _window("0 1 * * *", 60)
    weekend = _window("0 0 * * sat", 48 * 60)
    assert not inside_any([], datetime(2024, 5, 1, 1, 30, tzinfo=UTC))
    assert inside_any([night, weekend], datetime(2024, 5, 1, 1, 30, tzinfo=UTC))  # Wednesday night
    assert inside_any([night, weekend], datetime(2024, 5, 5, 12, 0, tzinfo=UTC))  # Sunday noon
    assert not inside_any([night, weekend], datetime(2024, 5, 6, 12, 0, tzinfo=UTC))  # Monday noon


@pytest.mark.parametrize("day_of_week", ["0", "1-5", "sat,0", "*/2"])
def test_numeric_day_of_week_is_refused_with_the_off_by_one_reason(day_of_week: str) -> None:
    with pytest.raises(ValidationError, match=r"must use names .*0 as Sunday but APScheduler as Monday"):
        _window(f"0 1 * * {day_of_week}", 60)


@pytest.mark.parametrize(
    ("cron", "zone", "message"),
    [
        ("0 1 * *", "UTC", "a cron expression has 5 fields .* got 4"),
        ("0 25 * * *", "UTC", "window '0 25 \\* \\* \\*' .*'25'.* maximum value \\(23\\)"),
        ("0 1 * * mon", "Mars/Olympus", "'Mars/Olympus' is not a known IANA time zone"),
    ],
)
def test_bad_window_names_the_expression_and_the_problem(cron: str, zone: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        _window(cron, 60, zone)


def test_duration_must_be_positive() -> None:
    with pytest.raises(ValidationError, match="greater than 0"):
        _window("0 1 * * *", 0)
