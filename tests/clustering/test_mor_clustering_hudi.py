"""Clustering merge-on-read tables real Hudi 0.15 wrote (issue 14 item 4), checked with Hudi's own
snapshot read (the oracle) and hudi-rs.

The histories (`tests.support.mor_tables`) hold updates in Avro and Parquet log blocks, log-vs-log
and base-vs-log ordering cases, a delete block, `_hoodie_is_deleted` and a rolled-back deltacommit.
Our clustering reads every input slice merged and rewrites it as base files: Hudi's snapshot is
the same record set before and after (meta fields included), hudi-rs reads it too, and Hudi's
upserts afterwards land once. A deltacommit that appends to an input file group while the
clustering runs makes the commit refuse: the clustering is rolled back and the update stays.
"""

from __future__ import annotations

import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.executor.clustering_job import GroupJob
from service.lock.in_process import InProcessTableLock
from service.rollback import find_completed_rollback
from service.table.base_file_writer import BaseFileWriteResult
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, MorHistoryCache, hudi_write, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

__all__ = ["mor_histories"]

COLUMNS = (
    "_hoodie_record_key",
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_partition_path",
    *ht.DATA_COLUMNS,
)
SORTED = {"hoodie.clustering.plan.strategy.sort.columns": "price"}
ALLOW_UPDATES = {
    "hoodie.clustering.updates.strategy": (
        "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
    )
}


def _snapshot(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base), COLUMNS)


def _copy(history: MorHistory, spark: SparkSession, target: Path) -> Path:
    """A copy of the history, plus one Hudi write so Hudi's snapshot reads past the rollback command
    block (whose instant is later than the write that rolled back; `scanInternalV1` ends its scan
    at it while it is after the read instant)."""
    shutil.copytree(history.base_path, target, symlinks=True)
    hudi_write(spark, history, "upsert", range(40, 44), tag=9, ts=50, base_path=target)
    return target


def _schedule(table: HudiTable, config: HoodieConfig) -> str:
    outcome = schedule_clustering(
        table, config, InProcessTableLock(table.name), now=datetime.now(UTC), zone=UTC
    )
    assert outcome.instant_time is not None, outcome.reason
    assert outcome.plan is not None
    return outcome.instant_time


@pytest.mark.parametrize("name", ["mor_partitioned_avro", "mor_nonpartitioned_parquet"])
def test_clustering_keeps_the_exact_latest_record_set(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path, name: str
) -> None:
    history = mor_histories.get(name)
    base = _copy(history, spark, tmp_path / name)
    before = _snapshot(spark, base)
    table = HudiTable.open(str(base), check_supported=False)
    config = HoodieConfig.from_mapping(SORTED, table.name)
    instant = _schedule(table, config)
    plan = table.facts_reader.clustering_plan(table.load_timeline().instants[-1], file_names_only=False)
    assert plan is not None
    slices = [s for g in plan.groups for s in g.slices]
    assert any(s.log_file_paths for s in slices), "the plan holds no slice with log files"
    live = {fg.file_group_id for fg in table.load_view().live_file_groups}
    assert {s.file_group_id for s in slices} == live  # every group is small: all are clustered

    run_group = SparkExecutor(session=spark).run_group
    result = execute_clustering(table, instant, config, run_group, InProcessTableLock(table.name), zone=UTC)
    assert result.committed, result.reason

    after = _snapshot(spark, base)
    assert after == before
    keys = {r["_hoodie_record_key"] for r in after}
    assert not keys & {*history.cases["deleted"], *history.cases["is_deleted"]}  # deletes stay deleted
    assert {
        r["name"].rsplit("-", 1)[-1]
        for r in after
        if r["_hoodie_record_key"] in history.cases["failed_write"]
    } == {"b1"}
    # Every live file group is one of ours now: base files only, which hudi-rs reads as Hudi does.
    view = HudiTable.open(str(base), check_supported=False).load_view()
    assert all(fg.latest_slice and not fg.latest_slice.log_files for fg in view.live_file_groups)
    assert {fg.latest_slice.base_instant_time for fg in view.live_file_groups if fg.latest_slice} == {instant}
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist(), COLUMNS) == before

    # Hudi's upserts after our clustering land once (deleted keys come back as inserts).
    updated = range(0, 48, 3)
    hudi_write(spark, history, "upsert", updated, tag=60, ts=100, base_path=base)
    rows = ht.read_snapshot(spark, base)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    expected = {r["id"]: {c: r[c] for c in ht.DATA_COLUMNS} for r in before}
    for i in updated:
        expected[i] = {**ht.expected_row(i, 60), "ts": 100}
    assert {r["id"]: r for r in ht.normalise_rows(rows)} == expected


def test_deltacommit_appending_to_an_input_group_during_clustering_makes_it_roll_back(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path
) -> None:
    """A Hudi writer allowed to update groups under a pending clustering
    (`SparkAllowUpdateStrategy`) appends log files to the old slices while our clustering runs. Its
    deltacommit completes after our read: the commit refuses, the clustering is rolled back (plan
    included), and Hudi's snapshot keeps the update."""
    history = mor_histories.get("mor_partitioned_avro")
    base = _copy(history, spark, tmp_path / "conflict")
    before = {
        r["id"]: {c: r[c] for c in ht.DATA_COLUMNS} for r in ht.normalise_rows(ht.read_snapshot(spark, base))
    }
    table = HudiTable.open(str(base), check_supported=False)
    config = HoodieConfig.from_mapping({}, table.name)
    instant = _schedule(table, config)

    updated = [i for i in range(24, 48, 2) if i in before]
    executor = SparkExecutor(session=spark)
    once = threading.Lock()
    wrote: list[str] = []

    def runner(job: GroupJob) -> list[BaseFileWriteResult]:
        with once:  # groups run in parallel: the writer's update lands once, mid-execution
            if not wrote:
                wrote.append(hudi_write(spark, history, "upsert", updated, 50, 200, base, **ALLOW_UPDATES))
        return executor.run_group(job)

    result = execute_clustering(table, instant, config, runner, InProcessTableLock(table.name), zone=UTC)
    assert wrote and wrote[0] > instant  # the writer's deltacommit came after our plan
    assert result.rolled_back and not result.committed
    assert f"deltacommit {wrote[0]}" in result.reason
    assert not [p.name for p in (base / ".hoodie").iterdir() if p.name.startswith(f"{instant}.")]
    assert find_completed_rollback(table, table.load_timeline(), instant) is not None
    assert not list(base.glob(f"*/*_{instant}.parquet"))

    expected = dict(before)
    for i in updated:
        expected[i] = {**ht.expected_row(i, 50), "ts": 200}
    rows = ht.read_snapshot(spark, base)
    assert {r["id"]: r for r in ht.normalise_rows(rows)} == expected  # the update survives
    rs = {r["id"]: r for r in ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist())}
    assert {i: rs[i] for i in updated} == {i: expected[i] for i in updated}


def test_file_groups_in_a_pending_compaction_are_not_clustered(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path
) -> None:
    """A compaction Hudi scheduled and left pending: its file groups are not planned
    (`ClusteringPlanStrategy.getFileSlicesEligibleForClustering` drops them); whatever else is
    eligible is clustered and Hudi's snapshot (which merges across the pending compaction) stays."""
    history = mor_histories.get("mor_pending_compaction")
    base = tmp_path / "pending-compaction"
    shutil.copytree(history.base_path, base, symlinks=True)
    before = _snapshot(spark, base)
    table = HudiTable.open(str(base), check_supported=False)
    view = table.load_view()
    live = {fg.file_group_id for fg in view.live_file_groups}
    compacting = {fg for fg in live if view.is_pending_compaction(fg)}
    assert compacting
    config = HoodieConfig.from_mapping({}, table.name)
    lock = InProcessTableLock(table.name)
    outcome = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC)
    planned = {s.file_group_id for g in (outcome.plan.groups if outcome.plan else ()) for s in g.slices}
    assert not planned & compacting
    assert planned == live - compacting
    if outcome.instant_time is not None:
        run_group = SparkExecutor(session=spark).run_group
        result = execute_clustering(table, outcome.instant_time, config, run_group, lock, zone=UTC)
        assert result.committed, result.reason
    else:
        assert outcome.plan is None and "pending compaction" in outcome.reason
    assert _snapshot(spark, base) == before
