"""Plans against real Hudi 0.15: Java's view order, Hudi's deserializer, Hudi's planner and executor."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from service.clustering.attempts import mark_as_ours
from service.clustering.records import read_clustering_plan, requested_metadata
from service.config.clustering import ClusteringConfig
from service.config.hoodie import HoodieConfig
from service.lock import InProcessTableLock
from service.table import codecs
from service.table.clustering_plan import PlannedClustering
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, next_instant_time
from strategies.clustering import java_hash_set_order, plan_clustering
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.histories import HudiHistory
from tests.support.jvm import run_java

# Small enough that Hudi's ~430 KB files of `many_commits` make two groups per partition (2 + 1 slices).
HUDI_OPTIONS = {
    "hoodie.clustering.plan.strategy.max.bytes.per.group": "1000000",
    "hoodie.clustering.plan.strategy.target.file.max.bytes": "500000",
}

GroupKey = tuple[str, tuple[str, ...], int, tuple[tuple[str, float], ...]]


def _config() -> ClusteringConfig:
    return HoodieConfig.from_mapping(HUDI_OPTIONS, "interop").clustering


def _groups(plan: PlannedClustering) -> list[GroupKey]:
    """Groups as (partition, file ids in slice order, numOutputFileGroups, metrics); sorted, since Java
    visits partitions in local directory order."""
    return sorted(
        (
            g.partition_path,
            tuple(s.file_id for s in g.slices),
            g.num_output_file_groups,
            tuple(sorted(g.metrics.items())),
        )
        for g in plan.groups
    )


def _options() -> str:
    return ",".join(f"{k}={v}" for k, v in HUDI_OPTIONS.items())


def _pending_plan(table: HudiTable) -> tuple[str, PlannedClustering]:
    timeline = table.load_timeline()
    pending = [i for i in timeline.pending() if i.action is Action.REPLACE_COMMIT]
    assert len(pending) == 1, pending
    return pending[0].timestamp, read_clustering_plan(table, pending[0])


@pytest.mark.hudi
def test_java_hash_set_order_matches_hudi_file_system_view(tmp_path: Path) -> None:
    fixture = FixtureTable(tmp_path / "t")
    ids = [f"{uuid.uuid4()}-0" for _ in range(60)]
    fixture.commit(ts(1), [FileSpec("p1", i, rows=1) for i in ids])
    java_order = run_java("ClusteringSliceOrderProbe", str(fixture.base), "p1").stdout.split()
    # Java lists the local directory in its own (directory) order: feed ours the same listing.
    listing = [name.split("_", 1)[0] for name in os.listdir(fixture.base / "p1") if name.endswith(".parquet")]
    assert java_order == java_hash_set_order(listing)


@pytest.mark.hudi
def test_hudi_deserializes_our_plan(tmp_path: Path) -> None:
    fixture = FixtureTable(tmp_path / "t")
    fixture.commit(ts(1), [FileSpec("p1", "a-0"), FileSpec("p1", "b-0")])
    table = HudiTable.open(str(fixture.base))
    outcome = plan_clustering(table.load_view(), _config(), datetime.now(UTC))
    assert outcome.plan is not None
    work = tmp_path / "decode"
    work.mkdir()
    (work / "1.HoodieRequestedReplaceMetadata.bin").write_bytes(
        codecs.encode(requested_metadata(outcome.plan, table.storage))
    )
    run_java("HudiTimelineDecode", "decode", str(work))
    assert not list(work.glob("*.err")), [p.read_text() for p in work.glob("*.err")]
    text = (work / "1.HoodieRequestedReplaceMetadata.out").read_text()
    assert '"operationType": "CLUSTER"' in text
    a_path = table.storage.qualify(f"p1/{fixture.file_name('p1', 'a-0', ts(1))}")
    assert f'"dataFilePath": "{a_path}"' in text
    assert '"preserveHoodieMetadata": true' in text


@pytest.mark.hudi
@pytest.mark.spark
@pytest.mark.slow
def test_our_plan_groups_equal_hudi_scheduled_plan(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    ours_table = HudiTable.open(str(history_many_commits.base_path))
    ours = plan_clustering(ours_table.load_view(), _config(), datetime.now(UTC))
    assert ours.plan is not None

    # Hudi schedules on the same directory (ours only planned, writing nothing): slices of equal
    # size keep the order of Java's HashSet, which for ids in one bucket is the directory's listing
    # order, and a copy of the directory may list its files in another order.
    base = history_many_commits.base_path
    rows = spark.sql(
        f"CALL run_clustering(path => '{base}', op => 'schedule', options => '{_options()}')"
    ).collect()
    assert rows and rows[0]["state"] == "REQUESTED"
    _, theirs = _pending_plan(HudiTable.open(str(base)))

    assert _groups(ours.plan) == _groups(theirs)
    assert [len(g.slices) for g in ours.plan.groups] == [2, 1] * 3
    assert (ours.plan.strategy_class, dict(ours.plan.strategy_params)) == (
        theirs.strategy_class,
        dict(theirs.strategy_params),
    )
    assert (ours.plan.preserve_hoodie_metadata, dict(ours.plan.extra_metadata)) == (
        theirs.preserve_hoodie_metadata,
        dict(theirs.extra_metadata),
    )
    # Same slices, same base files (relative), as the on-disk plans say.
    ours_files = {s.base_file_path for g in ours.plan.groups for s in g.slices}
    assert ours_files == {s.base_file_path for g in theirs.groups for s in g.slices}


@pytest.mark.hudi
@pytest.mark.spark
@pytest.mark.slow
def test_hudi_executes_our_plan_and_reads_same_rows(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    h = history_many_commits
    table = HudiTable.open(str(h.base_path))
    timeline = table.load_timeline()
    outcome = plan_clustering(table.load_view(timeline), _config(), datetime.now(UTC))
    assert outcome.plan is not None
    instant_time = next_instant_time(timeline, datetime.now(UTC), UTC)
    with InProcessTableLock(h.table_name, key=str(h.base_path)):
        create_instant_file(
            table.storage,
            table.layout,
            Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED),
            # Marked as scheduled by us (extraMetadata), as schedule_clustering writes it.
            codecs.encode(mark_as_ours(requested_metadata(outcome.plan, table.storage))),
        )

    rows = spark.sql(f"CALL run_clustering(path => '{h.base_path}', op => 'execute')").collect()
    assert [r["timestamp"] for r in rows] == [instant_time]
    assert instant_time in ht.instants_with_action(h.base_path, "replacecommit")

    expected = h.expected_rows()
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(h.base_path).to_pylist()) == expected
    after = table.load_view()
    assert {fg.file_group_id for fg in after.replaced_file_groups} == set(outcome.plan.input_file_groups)
    # Java wrote numOutputFileGroups new file groups per group (2 + 1 per partition).
    new_groups = [
        fg
        for fg in after.live_file_groups
        if fg.latest_slice and fg.latest_slice.base_instant_time == instant_time
    ]
    assert len(new_groups) == outcome.plan.num_output_file_groups == 9
