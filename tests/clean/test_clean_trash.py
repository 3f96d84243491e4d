"""The cleaner's trash (`cleaning.trash_retention_hours`, `clean --trash-retention-hours`): a clean moves
its files to the trash instead of deleting them, `clean --undo INSTANT` takes the clean back (its files
byte for byte, its instant off the timeline), the trash empties after its retention, and a clean killed
midway through its moves loses nothing. Fixture tables (no Spark); Hudi's readers on a table Hudi
wrote: `tests/clean/test_hudi_differential.py`, `tests/interop/test_hudi1_tables.py`."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from service import trash
from service.cleaning import CleanOptions
from service.cli import main
from service.table.table import HudiTable
from service.trash import TRASH_DIR
from tests.clean.helpers import NOW, fid, make_cleaner
from tests.support.crash_at import run_killed_at
from tests.support.fixtures import FileSpec, FixtureTable, ts

RETAIN_ONE = "--hoodie-conf=hoodie.cleaner.commits.retained=1"
# A killed run's heartbeat expires within a second and a half (interval x 2 tolerable misses).
FAST_HEARTBEAT = "--hoodie-conf=hoodie.client.heartbeat.interval_in_ms=500"
TRASH = ("--trash-retention-hours", "24")


def _table(tmp_path: Path, commits: int = 3) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    for i in range(1, commits + 1):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2)), FileSpec("b", fid(3))])
    return t


def _tree(base: Path) -> dict[str, str]:
    """Every data file of the table and of its trash: path -> SHA-256."""
    return {
        str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest() for p in base.rglob("*.parquet")
    }


def _by_name(tree: dict[str, str]) -> dict[str, str]:
    return {Path(p).name: digest for p, digest in tree.items()}


def _timeline(base: Path) -> set[str]:
    return {p.name for p in (base / ".hoodie").iterdir() if p.is_file() and p.name[:1].isdigit()}


def _clean(base: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    capsys.readouterr()
    argv = ["clean", "--base-path", str(base), "--timezone", "UTC", "--json", RETAIN_ONE, *extra]
    assert main(argv) == 0
    reply: dict[str, Any] = json.loads(capsys.readouterr().out)
    return reply


def _undo(base: Path, instant: str, capsys: pytest.CaptureFixture[str]) -> int:
    capsys.readouterr()
    return main(["clean", "--base-path", str(base), "--timezone", "UTC", "--undo", instant])


def test_a_clean_moves_its_files_to_the_trash_and_its_undo_takes_the_clean_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    before, timeline = _tree(t.base), _timeline(t.base)
    [clean] = _clean(t.base, capsys, *TRASH)["cleans"]
    instant = clean["instant_time"]
    run = f"clean-{instant}"
    after = _tree(t.base)
    moved = {p for p in before if p not in after}
    assert len(moved) == clean["files_deleted"] == 3  # the oldest version of each of three file groups
    assert _by_name(after) == _by_name(before)  # every byte kept: in place or in the trash
    assert {p for p in after if p.startswith(TRASH_DIR)} == {f"{TRASH_DIR}/{run}/files/{p}" for p in moved}
    manifest = json.loads((t.base / TRASH_DIR / run / "manifest.json").read_text())
    assert sorted(e["path"] for e in manifest["entries"]) == sorted(moved)
    assert (t.base / TRASH_DIR / run / "completed").exists()
    assert f"{instant}.clean" in _timeline(t.base)

    assert _undo(t.base, instant, capsys) == 0
    assert _tree(t.base) == before  # byte for byte, the trash copies gone
    assert _timeline(t.base) == timeline  # the clean is off the timeline: it never happened
    # The next clean plans exactly what the undone one deleted.
    [again] = _clean(t.base, capsys)["cleans"]
    assert {p for p in before if p not in _tree(t.base)} == moved and again["files_deleted"] == 3


def test_an_undo_is_refused_by_name_when_it_cannot_take_the_clean_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path)
    [plain] = _clean(t.base, capsys)["cleans"]  # no trash: its files are gone for good
    caplog.set_level(logging.ERROR)
    assert _undo(t.base, plain["instant_time"], capsys) == 1
    assert "has no files in the trash" in caplog.text and "trash_retention_hours" in caplog.text
    t.commit(ts(4), [FileSpec("a", fid(1))])
    [first] = _clean(t.base, capsys, *TRASH)["cleans"]
    t.commit(ts(5), [FileSpec("a", fid(1))])
    [second] = _clean(t.base, capsys, *TRASH)["cleans"]
    caplog.clear()
    tree = _tree(t.base)
    assert _undo(t.base, first["instant_time"], capsys) == 1
    assert f"then came {second['instant_time']}" in caplog.text and "newest first" in caplog.text
    assert _tree(t.base) == tree  # nothing moved
    assert _undo(t.base, second["instant_time"], capsys) == 0
    assert _undo(t.base, first["instant_time"], capsys) == 0  # newest first, then the one before
    assert main(["clean", "--base-path", str(t.base), "--undo", "../../etc"]) == 1


def test_the_trash_empties_after_its_retention_even_when_no_clean_is_due(tmp_path: Path) -> None:
    t = _table(tmp_path)
    props = {"hoodie.cleaner.commits.retained": 1}
    keep_a_day = CleanOptions(trash_retention=timedelta(hours=24))
    [clean] = make_cleaner(t.base, props, keep_a_day, now=NOW).run().cleans
    run = t.base / TRASH_DIR / f"clean-{clean.instant_time}"
    assert run.is_dir()
    later = make_cleaner(t.base, props, keep_a_day, now=NOW + timedelta(hours=23)).run()
    assert not later.cleans and run.is_dir()  # nothing due, and still within its retention
    make_cleaner(t.base, props, keep_a_day, now=NOW + timedelta(hours=25)).run()
    assert not run.exists() and len(_tree(t.base)) == 9 - clean.files_deleted  # the trash copies gone


# Where the clean is killed: between a file's copy into the trash and the delete of its original, and
# after an original was deleted (midway through the moves).
KILLS = {
    "between_copy_and_delete": ("on-copy", r"/clean-\d+/files/b/"),
    "midway": ("on-delete", r"^b/"),
}


@pytest.mark.parametrize("step", list(KILLS))
def test_a_clean_killed_midway_through_its_moves_loses_nothing_and_the_next_run_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str
) -> None:
    t = _table(tmp_path)
    before = _tree(t.base)
    mode, pattern = KILLS[step]
    argv = ["clean", "--base-path", str(t.base), "--timezone", "UTC", RETAIN_ONE, FAST_HEARTBEAT, *TRASH]
    run_killed_at(pattern, argv, tmp_path / "killed.log", mode=mode)
    # Each file whole in place or whole in the trash (a copy under way in another thread at the kill
    # may be partial: its original stays, and the next run copies it again).
    killed = _tree(t.base)
    [run] = [p.name for p in (t.base / TRASH_DIR).iterdir()]
    for path, digest in before.items():
        assert digest in (killed.get(path), killed.get(f"{TRASH_DIR}/{run}/files/{path}")), path
    time.sleep(1.5)  # the killed run's heartbeat expires
    [resumed] = _clean(t.base, capsys, FAST_HEARTBEAT, *TRASH)["cleans"]
    assert resumed["resumed"] and resumed["files_deleted"] + resumed["files_already_gone"] == 3
    final = _tree(t.base)
    assert _by_name(final) == _by_name(before) and len(final) == len(before)  # each file once
    assert _undo(t.base, resumed["instant_time"], capsys) == 0
    assert _tree(t.base) == before


def test_a_young_trash_run_costs_the_purge_no_read_and_no_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon purges at every cleaning tick: a run its name shows to be young is skipped without
    reading its folder or manifest and without the table lock."""
    t = _table(tmp_path)
    props = {"hoodie.cleaner.commits.retained": 1}
    keep = CleanOptions(trash_retention=timedelta(hours=24))
    make_cleaner(t.base, props, keep, now=NOW).run()
    storage = HudiTable.open(str(t.base)).storage
    reads: list[str] = []
    real_list, real_read = storage.list_file_names, storage.read_bytes
    monkeypatch.setattr(storage, "list_file_names", lambda rel: reads.append(rel) or real_list(rel))
    monkeypatch.setattr(storage, "read_bytes", lambda rel: reads.append(rel) or real_read(rel))
    assert trash.purge(storage, NOW + timedelta(hours=1), timedelta(hours=24), cleans=True) == []
    assert reads == []
    assert trash.purge(storage, NOW + timedelta(hours=25), timedelta(hours=24), cleans=True) != []
    assert reads  # an old one is read, checked and emptied


def test_an_undo_that_could_not_bring_every_file_back_is_refused_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Once the clean is off the timeline, Hudi's readers expect every file it deleted again: a file
    gone from the trash (here deleted by hand) makes the undo refuse before anything moves."""
    t = _table(tmp_path)
    [clean] = _clean(t.base, capsys, *TRASH)["cleans"]
    run = t.base / TRASH_DIR / f"clean-{clean['instant_time']}" / "files"
    lost = sorted(run.rglob("*.parquet"))[0]
    lost.unlink()
    tree, timeline = _tree(t.base), _timeline(t.base)
    caplog.set_level(logging.ERROR)
    assert _undo(t.base, clean["instant_time"], capsys) == 1
    assert "is neither in the trash nor in place" in caplog.text and lost.name in caplog.text
    assert _tree(t.base) == tree and _timeline(t.base) == timeline
