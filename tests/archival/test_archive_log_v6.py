"""Archiving a version-6 table into `archived/` log files, on fixture tables (the same against Hudi
0.15's archiver and its readers is in test_window_vs_hudi.py): one file per run, `batch` records a
block, every instant file once even when a run is retried after its file was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.cli import main
from service.table.archived_log import archive_file_version, archived_keys, next_archive_file_name
from service.table.instant import Action, State
from service.table.log_format.reader import read_block_frames
from tests.support.fixtures import FileSpec, FixtureTable, ts

SETTINGS = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
            "--hoodie-conf", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
            "--hoodie-conf", "hoodie.commits.archival.batch=4"]  # fmt: skip


def _table(base: Path, commits: int) -> FixtureTable:
    t = FixtureTable(base)
    for i in range(1, commits + 1):
        t.commit(ts(i), [FileSpec("a", f"{i:08d}-0000-0000-0000-000000000000-0")])
    return t


def _archive(base: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["archive", "--base-path", str(base), "--timezone", "UTC", "--json", *SETTINGS]) == 0
    reply: dict[str, object] = json.loads(capsys.readouterr().out)
    return reply


def _archive_files(base: Path) -> list[Path]:
    folder = base / ".hoodie" / "archived"
    return sorted((p for p in folder.iterdir() if archive_file_version(p.name)), key=lambda p: p.name)


def test_archive_file_names_roll_over_as_hudis_writer_does() -> None:
    assert next_archive_file_name([]) == ".commits_.archive.1_1-0-1"
    names = [".commits_.archive.1_1-0-1", "..commits_.archive.1_1-0-1.crc", ".commits_.archive.9_1-0-1"]
    assert next_archive_file_name(names) == ".commits_.archive.10_1-0-1"
    assert archive_file_version("mergeArchivePlan") is None


def test_a_run_writes_one_file_of_blocks_of_batch_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six commits, min 2 / max 3: four archived, each with its requested, inflight and completed
    file: twelve records in blocks of 4; the active timeline keeps the last two."""
    _table(tmp_path / "t", 6)
    reply = _archive(tmp_path / "t", capsys)
    [archive] = _archive_files(tmp_path / "t")
    assert archive.name == ".commits_.archive.1_1-0-1" and reply["data_file"]
    frames = list(read_block_frames(archive.read_bytes(), str(archive)))
    assert [int.from_bytes(bytes(f.content[4:8]), "big") for f in frames] == [4, 4, 4]
    keys = archived_keys(archive.read_bytes(), str(archive))
    assert keys == {(ts(i), "commit", s.name) for i in range(1, 5) for s in State}
    left = sorted(p.name for p in (tmp_path / "t" / ".hoodie").iterdir() if p.name[0].isdigit())
    assert left == sorted(
        f"{ts(i)}{ext}" for i in (5, 6) for ext in (".commit.requested", ".inflight", ".commit")
    )
    # Nothing more to archive: no new file.
    assert _archive(tmp_path / "t", capsys)["instants"] == []
    assert len(_archive_files(tmp_path / "t")) == 1


def test_a_rerun_after_the_file_was_written_archives_nothing_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed after writing its archive file (the active files all still there), and one
    killed midway through the deletes: the next run writes only what the latest file lacks."""
    t = _table(tmp_path / "t", 6)
    _archive(tmp_path / "t", capsys)
    [first] = _archive_files(tmp_path / "t")
    # Put back the archived instants, as if the run had stopped before deleting them; one more commit
    # makes the window one instant larger than the file.
    saved = first.read_bytes()
    for i in range(1, 5):
        t.commit(ts(i), [FileSpec("a", f"{i:08d}-0000-0000-0000-000000000000-0")])
    t.commit(ts(7), [FileSpec("a", f"{7:08d}-0000-0000-0000-000000000000-0")])
    assert first.read_bytes() == saved
    _archive(tmp_path / "t", capsys)
    files = _archive_files(tmp_path / "t")
    assert [f.name for f in files] == [".commits_.archive.1_1-0-1", ".commits_.archive.2_1-0-1"]
    second = archived_keys(files[1].read_bytes(), str(files[1]))
    assert second == {(ts(5), "commit", s.name) for s in State}
    # Midway through the deletes: only the completed file left of an instant the latest file holds;
    # a new commit makes the next window that instant and the one after it.
    (tmp_path / "t" / ".hoodie" / f"{ts(5)}.commit").write_bytes(b"")
    t.commit(ts(8), [FileSpec("a", f"{8:08d}-0000-0000-0000-000000000000-0")])
    _archive(tmp_path / "t", capsys)
    files = _archive_files(tmp_path / "t")
    assert archived_keys(files[-1].read_bytes(), str(files[-1])) == {(ts(6), "commit", s.name) for s in State}
    assert not (tmp_path / "t" / ".hoodie" / f"{ts(5)}.commit").exists()


def test_each_action_and_state_is_archived_in_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A clean (plan and metadata), a rollback and a replacecommit among the commits: the archive
    holds every one of their files; cleans and rollbacks come before the commits."""
    t = _table(tmp_path / "t", 3)
    t.completed_clean(ts(4), earliest_commit_to_retain=ts(2), last_completed_commit=ts(3))
    for i in range(5, 9):
        t.commit(ts(i), [FileSpec("a", f"{i:08d}-0000-0000-0000-000000000000-0")])
    t.commit(ts(9), [FileSpec("a", f"{9:08d}-0000-0000-0000-000000000000-0")], action=Action.REPLACE_COMMIT)
    for n in (10, 11, 12, 13):
        t.completed_clean(ts(n), earliest_commit_to_retain=ts(n - 4), last_completed_commit=ts(n - 1))
    _archive(tmp_path / "t", capsys)
    [archive] = _archive_files(tmp_path / "t")
    keys = archived_keys(archive.read_bytes(), str(archive))
    assert {(ts(4), "clean", s.name) for s in State} <= keys
    assert {k[0] for k in keys if k[1] == "commit"} >= {ts(1), ts(2), ts(3)}
