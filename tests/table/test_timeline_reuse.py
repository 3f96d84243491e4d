"""An idle table's timeline reload: one cheap listing, the previous snapshot reused while nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.storage import Storage
from service.table.timeline import InstantFiles, load_timeline
from tests.support.fixtures import FileSpec, FixtureTable, ts


def test_storage_list_file_names_skips_directories_and_missing_folders(tmp_path: Path) -> None:
    (tmp_path / ".hoodie" / ".aux").mkdir(parents=True)
    (tmp_path / ".hoodie" / "20240101000000000.commit").write_bytes(b"{}")
    (tmp_path / ".hoodie" / "hoodie.properties").write_bytes(b"")
    storage = Storage.for_base_uri(str(tmp_path))

    assert sorted(storage.list_file_names(".hoodie")) == ["20240101000000000.commit", "hoodie.properties"]
    assert sorted(storage.list_file_names(".hoodie")) == sorted(
        s.name for s in storage.list_dir(".hoodie") if not s.is_dir
    )
    assert storage.list_file_names("no/such/dir") == []


def test_timeline_reload_reuses_the_previous_snapshot_until_hoodie_changes(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", "f1")])
    first = load_timeline(t.storage, LAYOUT_1)

    assert load_timeline(t.storage, LAYOUT_1, first) is first

    t.commit(ts(2), [FileSpec("a", "f2")], state=State.INFLIGHT)
    pending = load_timeline(t.storage, LAYOUT_1, first)
    assert pending is not first
    assert pending == load_timeline(t.storage, LAYOUT_1)  # the same snapshot a fresh load builds
    assert pending.last == Instant(ts(2), Action.COMMIT, State.INFLIGHT)

    (t.base / ".hoodie" / Instant(ts(2), Action.COMMIT, State.INFLIGHT).file_name).unlink()
    assert load_timeline(t.storage, LAYOUT_1, pending).instants == (
        Instant(ts(1), Action.COMMIT, State.COMPLETED),
        Instant(ts(2), Action.COMMIT, State.REQUESTED),
    )


def test_timeline_reload_with_previous_still_rejects_unknown_instant_names(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", "f1")])
    first = load_timeline(t.storage, LAYOUT_1)
    (t.base / ".hoodie" / f"{ts(2)}.bogus").write_bytes(b"")

    with pytest.raises(CorruptTableError, match=r"\.bogus"):
        load_timeline(t.storage, LAYOUT_1, first)


def test_instant_files_keep_a_digest_and_the_names_packed() -> None:
    names = ["20240101000000002.commit", "20240101000000001.commit.requested", "20240101000000001.commit"]
    files = InstantFiles.of(names)

    assert list(files) == sorted(names) and len(files) == 3 and files.names() == frozenset(names)
    assert files == InstantFiles.of(reversed(names)) and files != InstantFiles.of(names[:2])
    assert InstantFiles.of(reversed(names), files) is files  # the same names: the previous object
    assert InstantFiles.of(names[:2], files) != files
    assert list(InstantFiles.of([])) == [] and len(InstantFiles()) == 0
    assert InstantFiles().names() == frozenset() and InstantFiles.of([]) == InstantFiles.of([], None)
    many = [f"2024010100{n:07d}.commit" for n in range(300)]
    assert len(InstantFiles.of(many).packed) < len("\n".join(many)) / 4  # held per table by a daemon
    undecodable = "20240101000000003.commit\udcff"  # a local name that is not UTF-8
    assert list(InstantFiles.of([undecodable])) == [undecodable]


def test_a_timeline_lists_its_instant_files_of_every_state(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", "f1")])
    t.commit(ts(2), [FileSpec("a", "f2")], state=State.INFLIGHT)
    timeline = load_timeline(t.storage, LAYOUT_1)

    on_disk = {p.name for p in (tmp_path / "t" / ".hoodie").iterdir() if p.name[0].isdigit()}
    assert timeline.files.names() == on_disk and len(timeline.files) == len(on_disk) == 5
