"""Archiving a version-6 table into `archived/` log files, on fixture tables (the same against Hudi
0.15's archiver and its readers is in test_window_vs_hudi.py): one file per run, `batch` records a
block, every instant file once even when a run is retried after its file was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.archival.archive_merge import finish_last_merge
from service.cli import main
from service.errors import CorruptTableError
from service.table.archived_log import (
    archive_file_version,
    archived_keys,
    encode_merge_plan,
    next_archive_file_name,
    read_archive_blocks,
)
from service.table.instant import Action, State
from service.table.log_format.reader import read_block_frames
from service.table.storage import Storage
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


MERGE = [
    "--hoodie-conf",
    "hoodie.archive.merge.enable=true",
    "--hoodie-conf",
    "hoodie.archive.merge.files.batch.size=3",
]


def test_small_archive_files_are_merged_as_hudis_archiver_merges_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hoodie.archive.merge.enable` with batches of 3: the third run's file makes three small files,
    merged into the next version (their records, newest file first) and deleted with the plan."""
    t = _table(tmp_path / "t", 6)
    argv = ["archive", "--base-path", str(tmp_path / "t"), "--timezone", "UTC", *SETTINGS, *MERGE]
    assert main(argv) == 0
    for first in (7, 9):
        for i in (first, first + 1):
            t.commit(ts(i), [FileSpec("a", f"{i:08d}-0000-0000-0000-000000000000-0")])
        assert main(argv) == 0
    [merged] = _archive_files(tmp_path / "t")
    assert merged.name == ".commits_.archive.4_1-0-1"
    assert not (tmp_path / "t" / ".hoodie" / "archived" / "mergeArchivePlan").exists()
    blocks = read_archive_blocks(merged.read_bytes(), str(merged))
    times = [r["commitTime"] for block in blocks for r in block]
    # Newest file first: the third run's instants (7, 8), the second's (5, 6), then the first's (1-4).
    assert list(dict.fromkeys(times)) == [ts(i) for i in (7, 8, 5, 6, 1, 2, 3, 4)]
    assert len(times) == 8 * 3 and all(len(block) >= 4 for block in blocks[:-1])


def test_a_merge_stopped_midway_is_undone_or_finished_by_the_next_run(tmp_path: Path) -> None:
    """`verifyLastMergeArchiveFilesIfNecessary`: every candidate still there, the merged file goes;
    some gone, the merged file is whole and the remaining candidates go; the plan goes either way."""
    folder = tmp_path / ".hoodie" / "archived"
    folder.mkdir(parents=True)
    storage = Storage.for_base_uri(str(tmp_path))
    names = [f".commits_.archive.{n}_1-0-1" for n in (1, 2, 3)]
    for name in names:
        (folder / name).write_bytes(b"x")
    paths = [storage.qualify(f".hoodie/archived/{n}") for n in names]
    plan = encode_merge_plan(paths, ".commits_.archive.4_1-0-1")
    (folder / "mergeArchivePlan").write_bytes(plan)
    (folder / ".commits_.archive.4_1-0-1").write_bytes(b"partial")
    finish_last_merge(storage, ".hoodie/archived")
    assert sorted(p.name for p in folder.iterdir()) == names  # undone
    (folder / "mergeArchivePlan").write_bytes(plan)
    (folder / ".commits_.archive.4_1-0-1").write_bytes(b"whole")
    (folder / names[0]).unlink()
    finish_last_merge(storage, ".hoodie/archived")
    assert sorted(p.name for p in folder.iterdir()) == [".commits_.archive.4_1-0-1"]  # finished


def test_a_merge_plan_naming_a_file_outside_the_archive_is_refused_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".hoodie" / "archived"
    folder.mkdir(parents=True)
    victim = tmp_path / "a" / ".commits_.archive.1_1-0-1"
    victim.parent.mkdir()
    victim.write_bytes(b"x")
    storage = Storage.for_base_uri(str(tmp_path))
    plan = encode_merge_plan([storage.qualify("a/.commits_.archive.1_1-0-1")], ".commits_.archive.2_1-0-1")
    (folder / "mergeArchivePlan").write_bytes(plan)
    (folder / ".commits_.archive.2_1-0-1").write_bytes(b"x")
    with pytest.raises(
        CorruptTableError, match=r"mergeArchivePlan: .*a/\.commits_\.archive\.1_1-0-1.* is no archive file"
    ):
        finish_last_merge(storage, ".hoodie/archived")
    assert victim.exists() and (folder / ".commits_.archive.2_1-0-1").exists()


def test_the_newest_archive_file_is_read_once_while_it_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every window looks for a stopped run's instants in the newest archive file (Hudi may have grown
    it by appends): while its size and modification time are unchanged it is read once."""
    t = _table(tmp_path / "t", 6)
    _archive(tmp_path / "t", capsys)
    reads: list[str] = []
    read_bytes = Storage.read_bytes

    def counting(self: Storage, rel: str) -> bytes:
        reads.append(rel)
        return read_bytes(self, rel)

    monkeypatch.setattr(Storage, "read_bytes", counting)
    for n in (7, 8):  # a timeline change each time: each window is computed anew
        t.commit(ts(n), [FileSpec("a", f"{n:08d}-0000-0000-0000-000000000000-0")])
        assert (
            main(["archive", "--base-path", str(tmp_path / "t"), "--timezone", "UTC", "--dry-run", *SETTINGS])
            == 0
        )
    assert len([r for r in reads if r.endswith(".commits_.archive.1_1-0-1")]) == 1
