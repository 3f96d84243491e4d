"""Clustering executed by the project on a table written by Hudi, read back by Hudi and hudi-rs."""

from __future__ import annotations

from typing import Any

import pytest

from service.clustering import execute_clustering
from service.config.hoodie import HoodieConfig
from service.lock.in_process import InProcessTableLock
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, next_instant_time
from strategies.execution.spark_group import run_group
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path"]


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Full rows, meta columns aside from `_hoodie_file_name`, in a stable order."""
    return sorted(tuple(str(r.get(k)) for k in sorted(r) if k != "_hoodie_file_name") for r in rows)


def _schedule_whole_partitions(table: HudiTable, sort_columns: str | None) -> str:
    """A plan that clusters every live file group of each partition into one group (test scaffolding)."""
    from datetime import UTC, datetime

    view = table.load_view()
    groups = []
    for partition in sorted({fg.partition_path for fg in view.live_file_groups}):
        slices = tuple(
            codecs.SliceInfo(
                data_file_path=table.storage.qualify(s.base_file.path),
                delta_file_paths=(),
                file_id=s.file_id,
                partition_path=s.partition_path,
                bootstrap_file_path="",
            )
            for s in view.latest_file_slices(partition)
            if s.base_file is not None
        )
        groups.append(codecs.ClusteringGroup(slices=slices, num_output_file_groups=1, metrics={}))
    params = {"hoodie.clustering.plan.strategy.sort.columns": sort_columns} if sort_columns else {}
    plan = codecs.RequestedReplaceMetadata(
        operation_type=codecs.CLUSTER_OPERATION,
        clustering_plan=codecs.ClusteringPlan(
            input_groups=tuple(groups),
            strategy=codecs.ClusteringStrategy(
                strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
                strategy_params=params,
            ),
            extra_metadata={},
            preserve_hoodie_metadata=True,
        ),
        extra_metadata={},
    )
    instant_time = next_instant_time(view.timeline, datetime.now(UTC), UTC)
    create_instant_file(
        table.storage, Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED), codecs.encode(plan)
    )
    return instant_time


@pytest.mark.parametrize(
    ("layout", "sort_columns"), [("LINEAR", "qty,id"), ("ZORDER", "qty,price"), ("HILBERT", "qty,price")]
)
def test_clustering_keeps_every_record_for_hudi_and_hudi_rs(
    history_many_commits: HudiHistory, spark: Any, layout: str, sort_columns: str
) -> None:
    base = history_many_commits.base_path
    before_hudi = _rows(ht.read_snapshot(spark, base))
    before_rs = _rows(ht.hudi_rs_snapshot(base).to_pylist())
    table = HudiTable.open(str(base))
    groups_before = len(table.load_view().live_file_groups)
    instant_time = _schedule_whole_partitions(table, sort_columns)
    config = HoodieConfig.from_mapping({"hoodie.layout.optimize.strategy": layout}, table.name)

    def no_attempt(_t: HudiTable, _i: str) -> None:
        raise AssertionError("no previous attempt to roll back")

    result = execute_clustering(
        table,
        instant_time,
        config,
        lambda job: run_group(spark, job),
        InProcessTableLock(table.name),
        no_attempt,
    )
    assert result.committed
    view = HudiTable.open(str(base)).load_view()
    partitions = {fg.partition_path for fg in view.live_file_groups}
    assert len(view.live_file_groups) == len(partitions) < groups_before  # one file per partition
    assert _rows(ht.read_snapshot(spark, base)) == before_hudi
    assert _rows(ht.hudi_rs_snapshot(base).to_pylist()) == before_rs
    assert not (base / ".hoodie" / ".temp" / instant_time).exists()
    # Linear output is globally ordered by the sort columns within each file.
    if layout == "LINEAR":
        for fg in view.live_file_groups:
            import pyarrow.parquet as pq

            assert fg.latest_slice is not None and fg.latest_slice.base_file is not None
            data = pq.read_table(base / fg.latest_slice.base_file.path, columns=["qty", "id"]).to_pylist()
            keys = [(r["qty"], r["id"]) for r in data]
            assert keys == sorted(keys)
    # Hudi's writer keeps writing (upserts into clustered file groups, bloom index) without duplicates.
    new_instant = history_many_commits.write(spark, ht.generate(spark, range(0, 90), batch=99), "upsert")
    assert new_instant
    rows = ht.read_snapshot(spark, base)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
