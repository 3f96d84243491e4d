"""Scheduling compaction against real Hudi 0.15: a merge-on-read table Hudi wrote (updates in log
files, a datasource delete, `_hoodie_is_deleted`, a rolled-back failed deltacommit;
`mor_tables.build_mor`). We schedule through the CLI; Hudi's scheduler on an identical copy plans
the same operations; Hudi's `show_compaction` reads our plan; Hudi's `run_compaction` executes it,
after which the snapshot read is the one before and the read-optimized read shows the compacted rows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from service.table import codecs
from service.table.codecs.commit import WriteOperationType
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, MorHistoryCache, hudi_compaction, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

__all__ = ["mor_histories"]


def _read(spark: SparkSession, base: Path, query_type: str = "snapshot") -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base, query_type))


def _requested(base: Path) -> set[str]:
    return {p.name.split(".")[0] for p in (base / ".hoodie").glob("*.compaction.requested")}


def _plan(base: Path, instant: str) -> codecs.CompactionPlan:
    path = base / ".hoodie" / f"{instant}.compaction.requested"
    return codecs.decode(codecs.CompactionPlan, path.read_bytes(), str(path))


def _operations(plan: codecs.CompactionPlan) -> dict[tuple[str, str], codecs.CompactionOperation]:
    return {(op.partition_path or "", op.file_id or ""): op for op in plan.operations or ()}


def _schedule(base: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["compact", "--base-path", str(base), "--mode", "schedule", "--json", *extra])
    assert code == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


@pytest.fixture
def history(mor_histories: MorHistoryCache) -> MorHistory:
    return mor_histories.get("mor_partitioned_avro")


@pytest.fixture
def table(history: MorHistory, tmp_path: Path) -> Path:
    base = tmp_path / "ours"
    shutil.copytree(history.base_path, base, symlinks=True)
    return base


def test_hudi_plans_what_we_plan_reads_and_executes_ours(
    spark: SparkSession,
    history: MorHistory,
    table: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hudi_copy = tmp_path / "hudi"
    shutil.copytree(table, hudi_copy, symlinks=True)
    snapshot = _read(spark, table)
    assert _read(spark, table, "read_optimized") != snapshot, "the history keeps updates in log files"

    reply = _schedule(table, capsys)
    instant = reply["instant_time"]
    assert reply["written"] and _requested(table) == {instant}
    ours = _plan(table, instant)
    assert ours.version == 2 and ours.extra_metadata is None and ours.strategy is None

    hudi_instant = hudi_compaction(spark, hudi_copy, "schedule")
    hudi_plan = _plan(hudi_copy, hudi_instant)
    assert hudi_plan.version == ours.version
    assert _operations(ours) == _operations(hudi_plan)  # names, log order, metrics: all of it
    sizes = [op.metrics["TOTAL_LOG_FILES_SIZE"] for op in ours.operations or () if op.metrics]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == len(ours.operations or ())

    # Hudi's own reader of pending plans (TimelineMetadataUtils / CompactionUtils) reads ours.
    shown = spark.sql(f"CALL show_compaction(path => '{table}')").collect()
    [row] = [r.asDict() for r in shown if str(r["timestamp"]) == instant]
    assert row["operation_size"] == len(ours.operations or ())
    assert row["state"] == "REQUESTED"

    spark.sql(f"CALL run_compaction(op => 'run', path => '{table}', timestamp => {instant})").collect()
    commit = table / ".hoodie" / f"{instant}.commit"
    metadata = codecs.decode(codecs.CommitMetadata, commit.read_bytes(), str(commit))
    assert metadata.operation_type is WriteOperationType.COMPACT and metadata.compacted
    after = _read(spark, table)
    assert _read(spark, table, "read_optimized") == after  # every slice with log files was compacted
    # Hudi executing its own plan on the copy compacts to the same rows.
    spark.sql(
        f"CALL run_compaction(op => 'run', path => '{hudi_copy}', timestamp => {hudi_instant})"
    ).collect()
    assert _read(spark, hudi_copy) == after
    # Equal to the snapshot before, but for the write after the rolled-back one: Hudi's snapshot read
    # stopped at the rollback command block (its instant is later than the read instant; see
    # tests/log_format/test_merged_read_hudi.py), the compaction reads up to the rollback and keeps
    # that committed write (tag 8).
    after_rollback = {int(k) for k in history.cases["after_rollback"]}
    changed = {r["id"] for r in after} ^ {r["id"] for r in snapshot} | {
        a["id"] for a, b in zip(after, snapshot, strict=True) if a != b
    }
    assert changed == after_rollback
    assert {r["name"].rsplit("-", 1)[-1] for r in after if r["id"] in after_rollback} == {"b8"}


def test_trigger_agrees_with_hudis(
    spark: SparkSession, table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Below `max.delta.commits` neither schedules; at it both do (NUM_COMMITS, the default)."""
    hudi_copy = tmp_path / "hudi"
    shutil.copytree(table, hudi_copy, symlinks=True)
    deltas = len(list((table / ".hoodie").glob("*.deltacommit")))
    for threshold, due in ((deltas + 1, False), (deltas, True)):
        key = f"hoodie.compact.inline.max.delta.commits={threshold}"
        reply = _schedule(table, capsys, "--hoodie-conf", key)
        call = f"CALL run_compaction(op => 'schedule', path => '{hudi_copy}', options => '{key}')"
        before = _requested(hudi_copy)
        spark.sql(call).collect()
        assert reply["written"] is due, reply["reason"]
        assert (len(_requested(hudi_copy) - before) == 1) is due
        if due:
            [hudi_instant] = _requested(hudi_copy) - before
            assert _operations(_plan(table, reply["instant_time"])) == _operations(
                _plan(hudi_copy, hudi_instant)
            )


def test_dry_run_writes_nothing(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = sorted(p.name for p in (table / ".hoodie").iterdir())
    reply = _schedule(table, capsys, "--dry-run")
    assert reply["written"] is False and reply["instant_time"] is None and reply["operations"]
    assert sorted(p.name for p in (table / ".hoodie").iterdir()) == before


def test_groups_of_a_pending_compaction_are_left_out_as_hudi_does(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slices left by two completed compactions, new file groups, and a compaction Hudi left pending
    with a deltacommit appended to its slices (`mor_tables.build_compacted`): both schedulers leave
    the pending plan's file groups out and plan the same operations (or none)."""
    source = mor_histories.get("mor_compacted").base_path
    ours, theirs = tmp_path / "ours", tmp_path / "hudi"
    shutil.copytree(source, ours, symlinks=True)
    shutil.copytree(source, theirs, symlinks=True)
    requested = _requested(ours)
    pending = {i for i in requested if not (ours / ".hoodie" / f"{i}.commit").exists()}
    assert pending, "the history keeps a compaction pending"
    every = "hoodie.compact.inline.max.delta.commits=1"
    reply = _schedule(ours, capsys, "--hoodie-conf", every)
    spark.sql(f"CALL run_compaction(op => 'schedule', path => '{theirs}', options => '{every}')").collect()
    hudi_new = _requested(theirs) - requested
    assert reply["written"] is bool(hudi_new), reply["reason"]
    if not hudi_new:  # every group with log files is in the pending plan
        assert "pending" in reply["reason"]
    in_pending = {key for instant in pending for key in _operations(_plan(ours, instant))}
    if hudi_new:
        [hudi_instant] = hudi_new
        planned = _operations(_plan(ours, reply["instant_time"]))
        assert planned == _operations(_plan(theirs, hudi_instant))
        assert not set(planned) & in_pending
