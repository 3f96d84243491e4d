"""Maintenance windows: cron-style times during which the daemon may start a table service.

A window opens at each fire time of its 5-field cron expression (minute hour day month day-of-week,
parsed by APScheduler's `CronTrigger.from_crontab` in the window's time zone) and stays open for
`duration_minutes` of elapsed time, so a window spanning midnight or a DST change is as long as it
says. Day-of-week is accepted by name only (`mon-fri`, `sat,sun`): crontab counts 0 as Sunday while
APScheduler counts 0 as Monday, so a numeric day would silently shift the window by one day.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# APScheduler's cron parsing is the one third-party import here (allowed by tests/architecture):
# windows are validated when the config is loaded, so a bad expression fails there, not at a tick.
from apscheduler.triggers.cron import CronTrigger
from pydantic import BaseModel, ConfigDict, Field, model_validator

_DIGIT = re.compile(r"\d")
_TICK = timedelta(microseconds=1)
_DST_MARGIN = timedelta(hours=3)  # longer than any zone's DST shift


class MaintenanceWindow(BaseModel):
    """One window: `cron` says when it opens, `duration_minutes` how long it stays open."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cron: str = Field(min_length=1)
    duration_minutes: int = Field(gt=0)
    timezone: str = "UTC"

    @model_validator(mode="after")
    def _parse(self) -> MaintenanceWindow:
        self.trigger()  # raises ValueError with the reason
        return self

    def zone(self) -> ZoneInfo:
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"window {self.cron!r}: {self.timezone!r} is not a known IANA time zone"
            ) from None

    def trigger(self) -> CronTrigger:
        fields = self.cron.split()
        if len(fields) != 5:
            raise ValueError(
                f"window {self.cron!r}: a cron expression has 5 fields (minute hour day month "
                f"day-of-week), got {len(fields)}"
            )
        day_of_week = fields[4]
        if _DIGIT.search(day_of_week):
            raise ValueError(
                f"window {self.cron!r}: day-of-week {day_of_week!r} must use names (mon, tue, ..., sun; "
                "e.g. mon-fri): crontab counts 0 as Sunday but APScheduler as Monday"
            )
        try:
            return CronTrigger.from_crontab(self.cron, timezone=self.zone())
        except ValueError as exc:
            raise ValueError(f"window {self.cron!r} (minute hour day month day-of-week): {exc}") from None

    @property
    def duration(self) -> timedelta:
        return timedelta(minutes=self.duration_minutes)

    def is_open(self, now: datetime) -> bool:
        """Whether a fire time falls in (now - duration, now]: the window opened and has not closed."""
        now_utc = now.astimezone(UTC)
        opened_after = now_utc - self.duration
        trigger = self.trigger()
        # Compared in UTC: APScheduler may return a wall time inside a DST gap (with the offset from
        # before the gap), which only UTC arithmetic reads as the instant it stands for.
        fire = trigger.get_next_fire_time(None, opened_after + _TICK)
        if fire is not None and fire.astimezone(UTC) <= now_utc:
            return True
        # APScheduler finds a fire inside a spring-forward gap only when its search starts before the
        # gap (its wall-clock search jumps past it otherwise), so search again from before any DST
        # change that could have swallowed one, stepping fire by fire up to the window's start.
        fire = trigger.get_next_fire_time(None, opened_after - _DST_MARGIN)
        while fire is not None and fire.astimezone(UTC) <= opened_after:
            fire = trigger.get_next_fire_time(fire, fire + _TICK)
        return fire is not None and fire.astimezone(UTC) <= now_utc


def inside_any(windows: Iterable[MaintenanceWindow], now: datetime) -> bool:
    """Whether any of `windows` is open at `now` (an aware datetime)."""
    return any(window.is_open(now) for window in windows)


def describe(windows: Iterable[MaintenanceWindow]) -> str:
    """The windows for a log line or a reason."""
    return "; ".join(f"{w.cron} for {w.duration_minutes} min ({w.timezone})" for w in windows)
