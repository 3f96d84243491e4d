from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.errors import CorruptTableError, InstantExistsError
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.storage import Storage
from service.table.timeline import (
    Timeline,
    create_instant_file,
    load_timeline,
    next_instant_time,
    parse_instant_time,
    read_requested,
)


def _touch(base: Path, *names: str) -> None:
    (base / ".hoodie").mkdir(parents=True, exist_ok=True)
    for name in names:
        (base / ".hoodie" / name).write_bytes(b"")


def test_timeline_keeps_highest_state_per_instant(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "001.commit.requested".replace("001", "20240101000000001"),
        "20240101000000001.inflight",
        "20240101000000001.commit",
        "20240101000000002.replacecommit.requested",
        "20240101000000003.compaction.requested",
        "20240101000000003.compaction.inflight",
        "hoodie.properties",
    )
    (tmp_path / ".hoodie" / "archived").mkdir()
    timeline = load_timeline(Storage.for_base_uri(str(tmp_path)), LAYOUT_1)
    assert [(i.timestamp[-1], i.action, i.state) for i in timeline] == [
        ("1", Action.COMMIT, State.COMPLETED),
        ("2", Action.REPLACE_COMMIT, State.REQUESTED),
        ("3", Action.COMPACTION, State.INFLIGHT),
    ]
    assert timeline.completed_commit_times == ("20240101000000001",)
    assert [i.timestamp for i in timeline.pending()] == ["20240101000000002", "20240101000000003"]


def test_timeline_completed_compaction_collapses_into_commit(tmp_path: Path) -> None:
    _touch(tmp_path, "20240101000000003.compaction.requested", "20240101000000003.commit")
    timeline = load_timeline(Storage.for_base_uri(str(tmp_path)), LAYOUT_1)
    assert [(i.action, i.state) for i in timeline] == [(Action.COMMIT, State.COMPLETED)]


def test_timeline_rejects_garbage_instant_name_naming_file(tmp_path: Path) -> None:
    _touch(tmp_path, "20240101000000001.commit", "20240101000000002.comit")
    with pytest.raises(CorruptTableError, match=r"20240101000000002\.comit"):
        load_timeline(Storage.for_base_uri(str(tmp_path)), LAYOUT_1)


def test_timeline_create_instant_file_is_exclusive(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    instant = Instant("20240101000000001", Action.REPLACE_COMMIT, State.REQUESTED)
    create_instant_file(storage, LAYOUT_1, instant, b"plan")
    with pytest.raises(InstantExistsError):
        create_instant_file(storage, LAYOUT_1, instant, b"other")
    assert read_requested(storage, LAYOUT_1, instant.with_state(State.INFLIGHT)) == b"plan"
    # The temp file used for the atomic create is gone and invisible to timeline listings.
    assert load_timeline(storage, LAYOUT_1).instants == (instant,)
    assert list((tmp_path / ".hoodie" / ".aux" / ".hts-tmp").iterdir()) == []


def test_timeline_create_instant_file_races_have_one_winner(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    storage = Storage.for_base_uri(str(tmp_path))
    instant = Instant("20240101000000001", Action.CLEAN, State.COMPLETED)

    def attempt(i: int) -> bool:
        try:
            create_instant_file(storage, LAYOUT_1, instant, str(i).encode())
        except InstantExistsError:
            return False
        return True

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(attempt, range(32)))
    assert results.count(True) == 1


def test_next_instant_time_uses_zone_and_is_strictly_later() -> None:
    now = datetime(2024, 6, 1, 12, 0, 0, 123000, tzinfo=UTC)
    empty = Timeline.of([])
    assert next_instant_time(empty, now, UTC) == "20240601120000123"
    assert next_instant_time(empty, now, ZoneInfo("America/Chicago")) == "20240601070000123"
    future = Timeline.of([Instant("20300101000000000", Action.COMMIT, State.REQUESTED)])
    assert next_instant_time(future, now, UTC) == "20300101000000001"
    legacy = Timeline.of([Instant("20300101000000", Action.COMMIT, State.COMPLETED)])
    assert next_instant_time(legacy, now, UTC) == "20300101000001000"
    assert next_instant_time(empty, now, UTC, floor="20240601120000123") == "20240601120000124"


@given(
    existing=st.lists(
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)), max_size=5
    ),
    now=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)),
)
def test_next_instant_time_always_exceeds_every_instant(existing: list[datetime], now: datetime) -> None:
    fmt = "%Y%m%d%H%M%S"
    times = [d.strftime(fmt) + f"{d.microsecond // 1000:03d}" for d in existing]
    timeline = Timeline.of(Instant(t, Action.COMMIT, State.COMPLETED) for t in times)
    new = next_instant_time(timeline, now.replace(tzinfo=UTC), UTC)
    assert len(new) == 17
    assert all(new > t for t in times)
    assert parse_instant_time(new, UTC) >= now.replace(tzinfo=UTC) - timedelta(milliseconds=1)
