"""The zone a LOCAL timeline's instant times are written in, and where that choice came from.

Hudi's `HoodieTimelineTimeZone.LOCAL` makes every writer stamp instants in its JVM's default zone
(`HoodieInstantTimeGenerator`); our new instants must sort after theirs, so we need the same zone.
Like the CLI's `--timezone`, the daemon takes it from the table's entry, then `daemon.timezone`, then
its own machine's zone, found the way Java finds a JVM's default zone on Linux
(`java.util.TimeZone.getDefault`: `$TZ`, `/etc/timezone`, the zone `/etc/localtime` links to, UTC
when the machine names none). A machine whose `/etc/localtime` is a copied file names no zone we can
read (Java compares the file's bytes with its zone database); a fixed UTC offset guessed from it
would misorder instants across a daylight-saving change, so we refuse and ask for the setting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

LOCALTIME = Path("/etc/localtime")
TIMEZONE_FILE = Path("/etc/timezone")


@dataclass(frozen=True)
class ZoneChoice:
    """A zone and where it came from, as the daemon's start-up line and `check` say it."""

    zone: ZoneInfo
    source: str


def named_zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def machine_zone(
    environ: dict[str, str] | None = None, localtime: Path = LOCALTIME, timezone_file: Path = TIMEZONE_FILE
) -> ZoneChoice | None:
    """This machine's zone as Java would pick it, or None when the machine names none we can read."""
    env = os.environ if environ is None else environ
    tz = env.get("TZ", "").lstrip(":")
    if tz:
        zone = named_zone(tz)
        return ZoneChoice(zone, f"this machine's zone ($TZ={tz})") if zone is not None else None
    try:
        written = timezone_file.read_text(encoding="utf-8").strip()
    except OSError:
        written = ""
    if written and (zone := named_zone(written)) is not None:
        return ZoneChoice(zone, f"this machine's zone ({timezone_file})")
    if localtime.is_symlink():
        target = str(localtime.resolve())
        if "zoneinfo/" in target and (zone := named_zone(target.split("zoneinfo/", 1)[1])) is not None:
            return ZoneChoice(zone, f"this machine's zone ({localtime} -> {target})")
        return None
    if not localtime.exists():
        return ZoneChoice(ZoneInfo("UTC"), "this machine's zone (UTC: no $TZ, /etc/timezone, /etc/localtime)")
    return None  # a copied zone file: its name is not written anywhere


def choose_zone(
    entry_zone: str | None, daemon_zone: str | None, machine: ZoneChoice | None
) -> ZoneChoice | None:
    """The table entry's `timezone`, else `daemon.timezone`, else the machine's zone (both already
    validated as IANA names by the config models)."""
    if entry_zone:
        return ZoneChoice(ZoneInfo(entry_zone), f"the table entry's timezone: {entry_zone}")
    if daemon_zone:
        return ZoneChoice(ZoneInfo(daemon_zone), f"daemon.timezone: {daemon_zone}")
    return machine
