"""LAZY failed writes: a writer's dead attempt is rolled back before cleaning, a live one never."""

from __future__ import annotations

import os
import posixpath
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.table import codecs
from service.table.instant import Action, State
from service.table.markers import IOType, create_marker
from service.table.table import HudiTable
from tests.clean.helpers import fid, make_cleaner
from tests.support.fixtures import FileSpec, FixtureTable, LogSpec, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)
LAZY = {"hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.cleaner.commits.retained": 1}


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", fid(1))])
    t.commit(ts(2), [FileSpec("a", fid(1))])
    t.commit(ts(3), [FileSpec("a", fid(2))], state=State.INFLIGHT)  # a writer's pending attempt
    t.commit(ts(4), [FileSpec("a", fid(1))])
    return t


def _heartbeat(t: FixtureTable, instant_time: str, age: timedelta) -> None:
    path = t.base / ".hoodie" / ".heartbeat" / instant_time
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    when = (NOW - age).timestamp()
    os.utime(path, (when, when))


def _run(t: FixtureTable, settings: dict[str, object]) -> HudiTable:
    table = HudiTable.open(str(t.base))
    make_cleaner(table, settings).run()
    return table


def _pending_writes(table: HudiTable) -> list[str]:
    return [i.timestamp for i in table.load_timeline().pending() if i.action is Action.COMMIT]


def test_expired_heartbeat_write_is_rolled_back_and_cleaning_proceeds(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _heartbeat(t, ts(3), timedelta(minutes=10))  # older than 60 s x 2 misses: the writer is gone
    table = _run(t, LAZY)
    assert _pending_writes(table) == []
    assert not list((t.base / "a").glob(f"*_{ts(3)}.parquet"))  # its file is deleted
    timeline = table.load_timeline()
    assert any(i.action is Action.ROLLBACK and i.is_completed for i in timeline)
    # No longer held back by the dead attempt, the clean removed the old slice of file group 1.
    assert any(i.action is Action.CLEAN and i.is_completed for i in timeline)
    assert not list((t.base / "a").glob(f"{fid(1)}_*_{ts(1)}.parquet"))


def test_missing_heartbeat_counts_as_expired(tmp_path: Path) -> None:
    t = _table(tmp_path)  # a writer that stopped deletes its heartbeat file
    assert _pending_writes(_run(t, LAZY)) == []


def test_live_writer_is_never_rolled_back(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _heartbeat(t, ts(3), timedelta(seconds=30))  # within 60 s x 2: the writer is alive
    table = _run(t, LAZY)
    assert _pending_writes(table) == [ts(3)]
    assert list((t.base / "a").glob(f"*_{ts(3)}.parquet"))


def test_eager_policy_leaves_failed_writes_to_the_writers(tmp_path: Path) -> None:
    t = _table(tmp_path)
    assert _pending_writes(_run(t, {"hoodie.cleaner.commits.retained": 1})) == [ts(3)]


def test_pending_clustering_plan_is_not_a_failed_write(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))])
    t.pending_clustering(ts(2), [("a", fid(1))], inflight=True)  # no heartbeat, as Hudi's services
    table = _run(t, LAZY)
    assert [i.timestamp for i in table.load_timeline().pending()] == [ts(2)]


def _mor_table(tmp_path: Path, markers: bool) -> tuple[FixtureTable, str, str]:
    """A MOR table whose writer's deltacommit ts(3) appended to f1's log and wrote f3's base file,
    then died (no heartbeat). Returns the table, its log file and its base file (base-relative)."""
    t = FixtureTable(tmp_path / "t", table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1))], action=Action.DELTA_COMMIT)
    t.commit(ts(2), [], action=Action.DELTA_COMMIT, logs=[LogSpec("a", fid(1), ts(1))])
    [base, log] = t.commit(
        ts(3),
        [FileSpec("a", fid(3))],
        action=Action.DELTA_COMMIT,
        state=State.INFLIGHT,
        logs=[LogSpec("a", fid(1), ts(1), version=2)],
        workload_profile=True,
    )
    if markers:
        create_marker(t.storage, ts(3), base.path or "", IOType.CREATE)
        create_marker(t.storage, ts(3), log.path or "", IOType.APPEND)
    return t, log.path or "", base.path or ""


@pytest.mark.parametrize("markers", [True, False])
def test_failed_deltacommit_is_rolled_back_with_a_command_block(tmp_path: Path, markers: bool) -> None:
    """With its markers (MarkerBasedRollbackStrategy) or without them (ListingBasedRollbackStrategy:
    the base file found by listing, the appended file group named by the workload profile), the
    rollback is the same."""
    t, log, base = _mor_table(tmp_path, markers=markers)
    table = _run(t, LAZY)
    timeline = table.load_timeline()
    assert [i for i in timeline if i.timestamp == ts(3)] == []
    assert not (t.base / base).exists()
    assert (t.base / log).exists(), "the failed commit's log file stays; its blocks are voided"
    block_file = f"a/.{fid(1)}_{ts(1)}.log.3_1-0-1"
    assert (t.base / block_file).exists()
    [rollback] = timeline.by_actions([Action.ROLLBACK]).completed()
    metadata = table.facts_reader.metadata(rollback, codecs.RollbackMetadata)
    pm = metadata.partition_metadata["a"]
    assert [posixpath.basename(p) for p in pm.success_delete_files] == [posixpath.basename(base)]
    assert {posixpath.basename(p) for p in pm.rollback_log_files or {}} == {posixpath.basename(block_file)}
    assert dict(pm.log_files_from_failed_commit or {}) == {posixpath.basename(log): 1}  # as Hudi 0.15
