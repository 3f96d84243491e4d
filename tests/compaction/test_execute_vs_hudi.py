"""Executing a compaction Hudi 0.15 scheduled, against Hudi executing the same plan on an identical
copy: the same rows in snapshot and read-optimized reads (and in hudi-rs), a `C.commit` Java
accepts (`compacted`, COMPACT), and Hudi's writer appending and compacting afterwards."""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from service.executor import SparkExecutor
from service.executor.compaction_job import CompactionJob
from service.table import codecs
from service.table.codecs.commit import WriteOperationType
from tests.support import hudi_tables as ht
from tests.support.mor_tables import (
    MorHistory,
    MorHistoryCache,
    _MorBuilder,
    compacted_snapshot,
    copy_and_schedule_ours,
    hudi_compaction,
    mor_histories,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

__all__ = ["mor_histories"]


def _read(spark: SparkSession, base: Path, query_type: str = "snapshot") -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base, query_type))


def _commit(base: Path, instant: str) -> codecs.CommitMetadata:
    path = base / ".hoodie" / f"{instant}.commit"
    return codecs.decode(codecs.CommitMetadata, path.read_bytes(), str(path))


@pytest.fixture
def history(mor_histories: MorHistoryCache) -> MorHistory:
    return mor_histories.get("mor_partitioned_avro")


def test_we_execute_hudis_plan_as_hudi_does(
    spark: SparkSession, history: MorHistory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "hudi"
    shutil.copytree(history.base_path, ours, symlinks=True)
    instant = hudi_compaction(spark, ours, "schedule")
    shutil.copytree(ours, theirs, symlinks=True)

    assert main(["compact", "--base-path", str(ours), "--mode", "execute", "--json"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["instant_time"] == instant and reply["result"]["committed"]
    spark.sql(f"CALL run_compaction(op => 'run', path => '{theirs}', timestamp => {instant})").collect()

    metadata, hudi_metadata = _commit(ours, instant), _commit(theirs, instant)
    assert metadata.compacted and metadata.operation_type is WriteOperationType.COMPACT
    assert metadata.table_schema == hudi_metadata.table_schema
    written = {(s.partition_path, s.file_id) for s in metadata.write_stats}
    assert written == {(s.partition_path, s.file_id) for s in hudi_metadata.write_stats}
    assert all(s.path and s.path.endswith(f"_{instant}.parquet") for s in metadata.write_stats)
    assert sum(s.num_writes for s in metadata.write_stats) == sum(
        s.num_writes for s in hudi_metadata.write_stats
    )

    compacted = _read(spark, theirs)
    assert _read(spark, ours) == compacted
    assert _read(spark, ours, "read_optimized") == _read(spark, theirs, "read_optimized") == compacted
    assert ht.normalise_rows(ht.hudi_rs_snapshot(ours).to_pylist()) == compacted

    # Hudi's writer goes on: an upsert into the new slices, then Hudi's own compaction over our files.
    for base in (ours, theirs):
        writer = _MorBuilder(spark, history.name, base, history.partitioned, {})
        writer.write("upsert", range(0, 48, 3), tag=30, ts=500)
        hudi_compaction(spark, base, "run")
    assert _read(spark, ours) == _read(spark, theirs)
    assert _read(spark, ours, "read_optimized") == _read(spark, ours)


def test_a_failed_attempt_leaves_nothing_visible_and_is_recovered_by_us_or_hudi(
    spark: SparkSession,
    history: MorHistory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our plan, our execution failing after some base files are written: they are deleted, the
    compaction stays inflight (as a crashed Java compactor leaves it), readers see the table as
    before. The next execution rolls the attempt back by its markers (a rollback instant, the plan
    kept) and completes it: ours, or Hudi's `run_compaction` on a copy; both give the rows Hudi's
    own execution of the plan gives."""
    ours, theirs, recovered_by_hudi = tmp_path / "ours", tmp_path / "hudi", tmp_path / "recovered"
    instant = copy_and_schedule_ours(history, ours, capsys)
    shutil.copytree(ours, theirs, symlinks=True)
    before = _read(spark, ours)

    written: list[codecs.WriteStat] = []
    original = SparkExecutor.run_compaction

    def failing(self: SparkExecutor, job: CompactionJob) -> list[codecs.WriteStat]:
        # The operations' Spark tasks wrote their files; then the driver fails before committing.
        written.extend(original(self, job))
        raise OSError("disk full (injected)")

    monkeypatch.setattr(SparkExecutor, "run_compaction", failing)
    with caplog.at_level(logging.ERROR):
        assert main(["compact", "--base-path", str(ours), "--mode", "execute"]) == 1
    assert any("storage error: disk full (injected)" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    assert len(written) >= 2
    assert (ours / ".hoodie" / f"{instant}.compaction.inflight").exists()
    assert not (ours / ".hoodie" / f"{instant}.commit").exists()
    assert not list(ours.rglob(f"*_{instant}.parquet")), "this attempt's base files are deleted"
    assert _read(spark, ours) == before
    shutil.copytree(ours, recovered_by_hudi, symlinks=True)

    # A fresh `.inflight` without a heartbeat counts as another executor's for a heartbeat window.
    fast = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=500"]
    time.sleep(1.5)
    assert main(["compact", "--base-path", str(ours), "--mode", "execute", *fast]) == 0
    [name] = {p.name for p in (ours / ".hoodie").glob("*.rollback")} - {
        p.name for p in (theirs / ".hoodie").glob("*.rollback")
    }
    rollback = ours / ".hoodie" / name
    rolled = codecs.decode(codecs.RollbackMetadata, rollback.read_bytes(), str(rollback))
    assert rolled.commits_rollback == (instant,)
    assert (ours / ".hoodie" / f"{instant}.compaction.requested").exists()
    for base in (recovered_by_hudi, theirs):
        spark.sql(f"CALL run_compaction(op => 'run', path => '{base}', timestamp => {instant})").collect()
    for base in (ours, recovered_by_hudi, theirs):
        assert _commit(base, instant).operation_type is WriteOperationType.COMPACT
    compacted = _read(spark, theirs)
    assert _read(spark, ours) == _read(spark, recovered_by_hudi) == compacted
    assert _read(spark, ours, "read_optimized") == compacted


def test_a_table_schema_that_cannot_be_read_fails_before_the_attempt_naming_its_commit(
    history: MorHistory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The writer tasks read the newest deltacommit's schema: an unreadable one fails the execution
    in the driver, naming that commit file, before an inflight attempt exists (not in a Spark task)."""
    base = tmp_path / "ours"
    instant = copy_and_schedule_ours(history, base, capsys)
    garbled = ht.garble_table_schemas(base, "deltacommit")
    with caplog.at_level(logging.ERROR):
        assert main(["compact", "--base-path", str(base), "--mode", "execute"]) == 1
    assert re.search(rf"commit metadata of \S*/\.hoodie/{garbled[-1].name} cannot be read", caplog.text)
    assert not (base / ".hoodie" / f"{instant}.compaction.inflight").exists()


def test_writes_between_schedule_and_execute_land_in_the_new_slice(
    spark: SparkSession, history: MorHistory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scheduled by us, then Hudi's writer upserts (log files of slice C, `HoodieAppendHandle.init`)
    before we execute: the plan's input stays frozen, the upsert is read over the new base files,
    nothing is lost; Hudi executing the same plan on a copy gives the same rows."""
    ours, theirs = tmp_path / "ours", tmp_path / "hudi"
    instant = copy_and_schedule_ours(history, ours, capsys)
    writer = _MorBuilder(spark, history.name, ours, history.partitioned, {})
    writer.write("upsert", range(0, 48, 4), tag=40, ts=600)
    assert list(ours.rglob(f".*_{instant}.log.*")), "the upsert appended to slice C"
    shutil.copytree(ours, theirs, symlinks=True)
    during = _read(spark, ours)
    assert {r["id"] for r in during if r["name"].endswith("-b40")} == set(range(0, 48, 4))

    assert main(["compact", "--base-path", str(ours), "--mode", "execute", "--instant-time", instant]) == 0
    spark.sql(f"CALL run_compaction(op => 'run', path => '{theirs}', timestamp => {instant})").collect()
    after = _read(spark, ours)
    assert after == _read(spark, theirs)
    assert {r["id"] for r in after if r["name"].endswith("-b40")} == set(range(0, 48, 4))
    assert _read(spark, ours, "read_optimized") == _read(spark, theirs, "read_optimized")


@pytest.mark.parametrize("name", ["mor_nonpartitioned_parquet", "mor_default_payload"])
def test_schedule_and_execute_equals_hudis_compaction(
    spark: SparkSession,
    mor_histories: MorHistoryCache,
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Non-partitioned with Parquet log blocks, and `DefaultHoodieRecordPayload` (base vs log by
    ordering value): our `scheduleAndExecute` and Hudi's `run_compaction` on identical copies give
    the same plan and the same rows."""
    source = mor_histories.get(name).base_path
    ours, theirs = tmp_path / "ours", tmp_path / "hudi"
    shutil.copytree(source, ours, symlinks=True)
    shutil.copytree(source, theirs, symlinks=True)
    every = "hoodie.compact.inline.max.delta.commits=1"
    assert (
        main(["compact", "--base-path", str(ours), "--mode", "scheduleAndExecute", "--hoodie-conf", every])
        == 0
    )
    assert "committed" in capsys.readouterr().out
    hudi_instant = hudi_compaction(spark, theirs, "run")
    [instant] = [p.name.split(".")[0] for p in (ours / ".hoodie").glob("*.compaction.requested")]
    ours_stats, hudi_stats = _commit(ours, instant).write_stats, _commit(theirs, hudi_instant).write_stats
    assert {(s.partition_path, s.file_id, s.prev_commit) for s in ours_stats} == {
        (s.partition_path, s.file_id, s.prev_commit) for s in hudi_stats
    }
    compacted = _read(spark, theirs)
    assert _read(spark, ours) == compacted
    assert _read(spark, ours, "read_optimized") == compacted


def test_writers_appending_during_our_compaction_write_into_the_new_slice(
    spark: SparkSession,
    history: MorHistory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Hudi's writer upserts into the file groups under compaction while we execute: once after our
    claim (`C.compaction.inflight`) before the operations' tasks run, once after they wrote the new
    base files but before `C.commit`, and inserts new keys. Its log files are the new slice's (base
    instant C, `HoodieAppendHandle.init` on a pending compaction); after our commit Hudi's snapshot
    (and hudi-rs) holds exactly what the writes imply, and the read-optimized read the compacted
    rows without the upserts. (A finalize that deleted the instant's files by name instead of by
    markers fails it: the writer's `.<fileId>_C.log.*` go.)"""
    base = tmp_path / "table"
    instant = copy_and_schedule_ours(history, base, capsys)
    compacted = compacted_snapshot(
        history, _read(spark, base), ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist())
    )
    writer = _MorBuilder(spark, history.name, base, history.partitioned, {})
    writes = {40: range(0, 48, 4), 41: range(1, 48, 6), 42: range(200, 210)}
    original = SparkExecutor.run_compaction

    def with_writers(self: SparkExecutor, job: CompactionJob) -> list[codecs.WriteStat]:
        assert (base / ".hoodie" / f"{instant}.compaction.inflight").exists()
        writer.write("upsert", writes[40], tag=40, ts=600)
        stats = original(self, job)
        writer.write("upsert", writes[41], tag=41, ts=700)
        writer.write("upsert", writes[42], tag=42, ts=700)
        assert not (base / ".hoodie" / f"{instant}.commit").exists()
        return stats

    monkeypatch.setattr(SparkExecutor, "run_compaction", with_writers)
    assert main(["compact", "--base-path", str(base), "--mode", "execute", "--instant-time", instant]) == 0
    monkeypatch.undo()
    assert list(base.rglob(f".*_{instant}.log.*")), "the writer appended to the new slice"
    assert _commit(base, instant).compacted

    expected = {r["id"]: r for r in compacted}
    after = {r["id"]: r for r in _read(spark, base)}
    written = {i: tag for tag, ids in writes.items() for i in ids}
    assert set(after) == set(expected) | set(written)
    assert {i: after[i]["name"] for i in written} == {i: f"name-{i}-b{tag}" for i, tag in written.items()}
    assert {i: r for i, r in after.items() if i not in written} == {
        i: r for i, r in expected.items() if i not in written
    }
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == list(after.values())
    # The new keys went to new file groups' base files (the writer's own instant), which the
    # read-optimized read shows; of the groups under compaction it shows the compacted base files.
    read_optimized = _read(spark, base, "read_optimized")
    assert [r for r in read_optimized if r["id"] not in writes[42]] == compacted
