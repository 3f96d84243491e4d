"""The zone of a LOCAL timeline: the table entry's, the daemon's, or the machine's as Java finds it."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

from service.config.zones import ZoneChoice, choose_zone, machine_zone

ZONEINFO = Path("/usr/share/zoneinfo")


def _machine(tmp_path: Path, tz: str | None = None, written: str | None = None, link: str | None = None,
             copied: str | None = None) -> ZoneChoice | None:  # fmt: skip
    tmp_path.mkdir()
    localtime, timezone_file = tmp_path / "localtime", tmp_path / "timezone"
    if written is not None:
        timezone_file.write_text(written + "\n")
    if link is not None:
        localtime.symlink_to(ZONEINFO / link)
    if copied is not None:
        localtime.write_bytes((ZONEINFO / copied).read_bytes())
    env = {"TZ": tz} if tz is not None else {}
    return machine_zone(env, localtime=localtime, timezone_file=timezone_file)


def test_the_machines_zone_is_found_where_java_looks_for_it_in_its_order(tmp_path: Path) -> None:
    both = _machine(tmp_path / "a", tz=":Europe/Berlin", written="Asia/Tokyo", link="America/Chicago")
    assert both is not None and both.zone == ZoneInfo("Europe/Berlin") and "$TZ" in both.source
    written = _machine(tmp_path / "b", written="Asia/Tokyo", link="America/Chicago")
    assert written is not None and written.zone == ZoneInfo("Asia/Tokyo")
    linked = _machine(tmp_path / "c", link="America/Chicago")
    assert linked is not None and linked.zone == ZoneInfo("America/Chicago") and "->" in linked.source
    nothing = _machine(tmp_path / "d")
    assert nothing is not None and nothing.zone == ZoneInfo("UTC")  # Java's default zone then: GMT


def test_a_machine_naming_no_readable_zone_gives_none_rather_than_a_fixed_offset(tmp_path: Path) -> None:
    assert _machine(tmp_path / "a", copied="Europe/Paris") is None  # only its bytes say which zone
    assert _machine(tmp_path / "b", tz="Mars/Olympus") is None
    assert _machine(tmp_path / "c", written="not a zone", copied="Europe/Paris") is None


def test_the_table_entry_wins_over_the_daemon_which_wins_over_the_machine() -> None:
    machine = ZoneChoice(ZoneInfo("Asia/Tokyo"), "this machine's zone")
    assert choose_zone("Europe/Berlin", "UTC", machine) == ZoneChoice(
        ZoneInfo("Europe/Berlin"), "the table entry's timezone: Europe/Berlin"
    )
    assert choose_zone(None, "UTC", machine) == ZoneChoice(ZoneInfo("UTC"), "daemon.timezone: UTC")
    assert choose_zone(None, None, machine) is machine
    assert choose_zone(None, None, None) is None
