"""Clustering by the project on tables written by Hudi, proven with Hudi's reader, writer and hudi-rs."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.clustering.orchestrator import group_jobs, run_groups
from service.clustering.records import read_clustering_plan
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor, clustering_job
from service.executor.clustering_job import GroupJob, compressed_data_bytes, run_group
from service.lock.in_process import InProcessTableLock
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from service.table.timeline import create_instant_file
from strategies.execution import direct_read, writer_sort
from strategies.layout import LayoutStrategy, curve_sort_key
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

BLOOM = {"hoodie.index.type": "BLOOM"}
ALLOW_UPDATES = {
    "hoodie.clustering.updates.strategy": (
        "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
    )
}


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Full rows, meta columns aside from `_hoodie_file_name`, in a stable order."""
    return sorted(tuple(str(r.get(k)) for k in sorted(r) if k != "_hoodie_file_name") for r in rows)


def _snapshots(spark: Any, base: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return _rows(ht.read_snapshot(spark, base)), _rows(ht.hudi_rs_snapshot(base).to_pylist())


def _schedule(table: HudiTable, config: HoodieConfig) -> str:
    outcome = schedule_clustering(
        table, config, InProcessTableLock(table.name), now=datetime.now(UTC), zone=UTC
    )
    assert outcome.instant_time is not None, outcome.reason
    return outcome.instant_time


def _execute(table: HudiTable, instant: str, config: HoodieConfig, spark: Any) -> Any:
    executor = SparkExecutor(session=spark)
    return execute_clustering(
        table, instant, config, executor.run_group, InProcessTableLock(table.name), zone=UTC
    )


@pytest.mark.parametrize(
    ("layout", "method", "sort_columns"),
    [("LINEAR", "DIRECT", "qty,id"), ("ZORDER", "SAMPLE", "qty,price"), ("HILBERT", "DIRECT", "qty,price")],
)
def test_clustering_keeps_every_record_and_hudi_keeps_writing(
    history_many_commits: HudiHistory, spark: Any, layout: str, method: str, sort_columns: str
) -> None:
    base = history_many_commits.base_path
    before = _snapshots(spark, base)
    table = HudiTable.open(str(base))
    groups_before = len(table.load_view().live_file_groups)
    config = HoodieConfig.from_mapping(
        {
            "hoodie.layout.optimize.strategy": layout,
            "hoodie.layout.optimize.curve.build.method": method,
            "hoodie.clustering.plan.strategy.sort.columns": sort_columns,
        },
        table.name,
    )
    instant = _schedule(table, config)
    result = _execute(table, instant, config, spark)
    assert result.committed and not result.rolled_back

    view = HudiTable.open(str(base)).load_view()
    partitions = {fg.partition_path for fg in view.live_file_groups}
    assert len(view.live_file_groups) == len(partitions) < groups_before  # one output file per partition
    assert _snapshots(spark, base) == before
    assert not (base / ".hoodie" / ".temp" / instant).exists()
    for fg in view.live_file_groups:
        assert fg.latest_slice is not None and fg.latest_slice.base_file is not None
        path = base / fg.latest_slice.base_file.path
        # Not shuffled (`GroupJob.shuffled_schema`): every row names the file it is written to.
        assert set(pq.read_table(path, columns=["_hoodie_file_name"]).column(0).to_pylist()) == {path.name}
        data = pq.read_table(path, columns=["qty", "price", "id"]).to_pylist()
        if layout == "LINEAR":  # globally ordered by the sort columns
            keys = [(r["qty"], r["id"]) for r in data]
            assert keys == sorted(keys)
        else:  # curve order differs from plain sorting on the leading column
            assert [r["qty"] for r in data] != sorted(r["qty"] for r in data)
        if method == "DIRECT" and layout != "LINEAR":  # ordered by the curve value itself
            table_data = pq.read_table(base / fg.latest_slice.base_file.path, columns=["qty", "price"])
            batch = table_data.combine_chunks().to_batches()[0]
            keys = curve_sort_key(batch, ["qty", "price"], LayoutStrategy(layout), None).to_pylist()
            assert keys == sorted(keys)

    # Hudi's writer with the BLOOM index (reads our bloom filters and min/max footers) updates and
    # deletes keys that now live in our files: no duplicates, latest values, deleted keys gone.
    history_many_commits.write(spark, ht.generate(spark, range(0, 90), batch=99), "upsert", BLOOM)
    history_many_commits.write(spark, ht.generate(spark, range(90, 100), batch=99), "delete", BLOOM)
    rows = ht.read_snapshot(spark, base)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert not set(range(90, 100)) & set(ids)
    expected = {**history_many_commits.latest_batch, **dict.fromkeys(range(0, 90), 99)}
    for k in range(90, 100):
        expected.pop(k, None)
    assert ht.normalise_rows(rows) == sorted(
        (ht.expected_row(i, b) for i, b in expected.items()), key=lambda r: r["id"]
    )


def test_failed_group_leaves_table_unchanged_and_retry_completes(
    history_many_commits: HudiHistory, spark: Any
) -> None:
    base = history_many_commits.base_path
    before = _snapshots(spark, base)
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "id"}, table.name)
    instant = _schedule(table, config)
    executor = SparkExecutor(session=spark)

    def failing(job: GroupJob) -> list[BaseFileWriteResult]:
        executor.run_group(job)  # files and markers are on disk...
        raise RuntimeError("injected failure after writing")  # ...then the group fails

    with pytest.raises(RuntimeError, match="injected"):
        execute_clustering(table, instant, config, failing, InProcessTableLock(table.name), zone=UTC)
    # Readers unchanged, the attempt's files are gone, the plan is still pending for a retry.
    assert _snapshots(spark, base) == before
    assert not list(base.glob(f"*/*_{instant}.parquet"))
    timeline = table.load_timeline()
    assert timeline.find(instant, Action.REPLACE_COMMIT) == Instant(
        instant, Action.REPLACE_COMMIT, State.REQUESTED
    )
    assert any(i.action is Action.ROLLBACK and i.is_completed for i in timeline)

    assert _execute(table, instant, config, spark).committed
    assert _snapshots(spark, base) == before


def test_crash_between_data_files_and_commit_is_rolled_back_then_retried(
    history_many_commits: HudiHistory, spark: Any
) -> None:
    base = history_many_commits.base_path
    before = _snapshots(spark, base)
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({}, table.name)
    instant = _schedule(table, config)
    # What a killed process leaves: the inflight instant, data files and markers, no commit.
    timeline = table.load_timeline()
    plan = read_clustering_plan(table, timeline.find(instant, Action.REPLACE_COMMIT))  # type: ignore[arg-type]
    create_instant_file(table.storage, table.layout, Instant(instant, Action.REPLACE_COMMIT, State.INFLIGHT))
    written = run_groups(
        group_jobs(table, instant, plan, config, None), SparkExecutor(session=spark).run_group, 2
    )
    assert written and all((base / r.path).exists() for r in written)
    assert _rows(ht.read_snapshot(spark, base)) == before[0]  # Hudi hides files of the pending instant
    # The process died a while ago (no heartbeat, an inflight file older than the expiry window).
    inflight = base / ".hoodie" / f"{instant}.replacecommit.inflight"
    long_ago = time.time() - 600
    os.utime(inflight, (long_ago, long_ago))

    result = _execute(table, instant, config, spark)
    assert result.committed
    assert not any((base / r.path).exists() for r in written)  # the dead attempt's files were rolled back
    assert _snapshots(spark, base) == before


def test_commit_that_touched_an_input_rolls_the_clustering_back(
    history_many_commits: HudiHistory, spark: Any
) -> None:
    base = history_many_commits.base_path
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({}, table.name)
    instant = _schedule(table, config)
    # A writer allowed to update file groups under pending clustering commits after the plan.
    history_many_commits.write(spark, ht.generate(spark, range(0, 30), batch=50), "upsert", ALLOW_UPDATES)
    expected = _snapshots(spark, base)
    result = _execute(table, instant, config, spark)
    assert result.rolled_back and not result.committed
    assert "would drop that update" in result.reason
    assert _snapshots(spark, base) == expected  # the update survives
    timeline = table.load_timeline()
    assert timeline.find(instant, Action.REPLACE_COMMIT) is None
    assert not list(base.glob(f"*/*_{instant}.parquet"))


def test_plan_scheduled_by_hudi_is_executed_by_us(history_many_commits: HudiHistory, spark: Any) -> None:
    base = history_many_commits.base_path
    before = _snapshots(spark, base)
    opts = "hoodie.clustering.plan.strategy.sort.columns=qty"
    spark.sql(f"CALL run_clustering(path => '{base}', op => 'schedule', options => '{opts}')").collect()
    table = HudiTable.open(str(base))
    pending = [i for i in table.load_timeline().pending() if i.action is Action.REPLACE_COMMIT]
    assert len(pending) == 1
    result = _execute(table, pending[0].timestamp, HoodieConfig.from_mapping({}, table.name), spark)
    assert result.committed
    assert _snapshots(spark, base) == before
    # Hudi's own timeline accepts our completion: it schedules and runs its next clustering over it.
    spark.sql(f"CALL run_clustering(path => '{base}', op => 'scheduleAndExecute')").collect()
    assert _snapshots(spark, base) == before


def test_output_files_respect_the_target_size(spark: Any, tmp_path: Path) -> None:
    base = tmp_path / "sized"
    for batch in range(3):
        ids = range(batch * 40_000, (batch + 1) * 40_000)
        ht.write(
            spark, base, ht.generate(spark, ids, batch=batch), "insert", "sized", partition_fields=["region"]
        )
    before = _snapshots(spark, base)
    table = HudiTable.open(str(base))
    target = 256 * 1024
    config = HoodieConfig.from_mapping(
        {
            "hoodie.clustering.plan.strategy.target.file.max.bytes": target,
            "hoodie.clustering.plan.strategy.sort.columns": "price",
            "hoodie.bloom.index.filter.type": "SIMPLE",
            "hoodie.index.bloom.num_entries": 20_000,
        },
        table.name,
    )
    instant = _schedule(table, config)
    result = _execute(table, instant, config, spark)
    assert result.committed
    assert _snapshots(spark, base) == before
    # Every group's Spark jobs carry a job group naming table, instant and group (the Spark UI shows it).
    tracker = spark.sparkContext.statusTracker()
    assert all(tracker.getJobIdsForGroup(f"sized-{instant}-{g}") for g in range(result.groups))
    by_partition: dict[str, list[int]] = {}
    for r in result.written:
        by_partition.setdefault(r.partition_path, []).append(r.file_size_bytes)
    assert len(by_partition) == 3
    for partition, sizes in by_partition.items():
        assert len(sizes) >= 3, (partition, sizes)
        assert max(sizes) <= 1.05 * target, (partition, sizes)
        assert sum(size < 0.8 * target for size in sizes) <= 1, (partition, sizes)


def _sized_group(
    spark: Any, base: Path, rows_per_batch: int, files_worth: float
) -> tuple[HudiTable, HoodieConfig, int, Any]:
    """Two Hudi inserts, and a LINEAR (qty, id) clustering config whose target makes the table
    `files_worth` target files of column data; returns the table, config, target and snapshot."""
    for batch in range(2):
        ids = range(batch * rows_per_batch, (batch + 1) * rows_per_batch)
        ht.write(spark, base, ht.generate(spark, ids, batch=batch), "insert", base.name)
    before = _snapshots(spark, base)
    table = HudiTable.open(str(base))
    data_bytes = sum(compressed_data_bytes(pq.read_metadata(p)) for p in base.rglob("*.parquet"))
    target = int(data_bytes / files_worth)
    config = HoodieConfig.from_mapping(
        {
            "hoodie.clustering.plan.strategy.target.file.max.bytes": target,
            "hoodie.clustering.plan.strategy.sort.columns": "qty,id",
            "hoodie.bloom.index.filter.type": "SIMPLE",
            "hoodie.index.bloom.num_entries": 2_000,
        },
        table.name,
    )
    return table, config, target, before


def _assert_global_linear_order(base: Path, written: Sequence[BaseFileWriteResult]) -> None:
    """Each file sorted by (qty, id), the files' ranges not overlapping."""
    files = [
        [(x["qty"], x["id"]) for x in pq.read_table(base / r.path, columns=["qty", "id"]).to_pylist()]
        for r in written
    ]
    files.sort(key=lambda keys: keys[0])
    stitched = [k for keys in files for k in keys]
    assert stitched == sorted(stitched)


@pytest.mark.long(sorted_by="spark")  # the writer's own sort in CI; Spark's sort as a long variant
@pytest.mark.parametrize("sorted_by", ["writer", "spark"])
def test_several_writer_tasks_size_files_evenly_and_keep_a_global_linear_order(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sorted_by: str
) -> None:
    """Each writer task sorts its rows itself (`writer_sort`), or past `WRITER_SORT_MAX_ROWS` lets
    Spark sort them: either way the same order and even files."""
    if sorted_by == "spark":
        monkeypatch.setattr(writer_sort, "WRITER_SORT_MAX_ROWS", 0)
    base = tmp_path / "tasks"
    # 20 files' worth: two tasks of >= 8 (MIN_FILES_PER_WRITER_TASK)
    table, config, target, before = _sized_group(spark, base, 100_000, 20)
    instant = _schedule(table, config)

    def two_tasks(job: GroupJob) -> list[BaseFileWriteResult]:
        return run_group(spark, replace(job, writer_tasks=2))

    result = execute_clustering(table, instant, config, two_tasks, InProcessTableLock(table.name), zone=UTC)
    assert result.committed
    assert result.groups == 1
    assert _snapshots(spark, base) == before
    # Two writer tasks (the write token starts with the Spark partition id) ...
    assert len({r.file_name.split("_")[1].split("-")[0] for r in result.written}) == 2
    # ... every file within the target, all but at most one of the group's >= 0.8x of it ...
    sizes = sorted(r.file_size_bytes for r in result.written)
    assert len(sizes) >= 16, sizes
    assert sizes[-1] <= target, sizes
    assert sum(size < 0.8 * target for size in sizes) <= 1, sizes
    # ... and each file sorted, the files' ranges not overlapping.
    _assert_global_linear_order(base, result.written)


def test_a_group_of_a_few_files_in_one_task_is_encoded_by_several_threads_into_even_files(
    spark: Any, tmp_path: Path
) -> None:
    """A group of a few files that one writer task must write (`writer_tasks=1`): the task cuts its
    files up front and encodes them in threads at once. Cut up front, the files come out even,
    where cutting by actual size leaves a short last file."""
    base = tmp_path / "threads"
    table, config, target, before = _sized_group(spark, base, 60_000, 3.4)
    instant = _schedule(table, config)
    jobs: list[GroupJob] = []

    def recorded(job: GroupJob) -> list[BaseFileWriteResult]:
        jobs.append(job)
        return run_group(spark, replace(job, writer_tasks=1))

    result = execute_clustering(table, instant, config, recorded, InProcessTableLock(table.name), zone=UTC)
    assert result.committed and result.groups == 1
    assert _snapshots(spark, base) == before
    # One writer task (one Spark partition id in the write tokens) ...
    assert len({r.file_name.split("_")[1].split("-")[0] for r in result.written}) == 1
    # ... whose files are even, the last one included: within the target, within 5 % of each other
    # (cutting by actual size ends in a short last file).
    sizes = sorted(r.file_size_bytes for r in result.written)
    assert len(sizes) >= 3, sizes
    assert sizes[-1] <= target and sizes[0] >= 0.75 * target, (sizes, target)
    assert sizes[-1] <= 1.05 * sizes[0], sizes
    _assert_global_linear_order(base, result.written)


@pytest.mark.long(files_worth=1.7)  # CI: two files read by the writer tasks; the rest with HTS_LONG_TESTS
@pytest.mark.long(read_by="shuffle")
@pytest.mark.parametrize(
    ("files_worth", "files", "read_by"), [(1.1, 2, "writer"), (1.7, 4, "writer"), (1.1, 2, "shuffle")]
)
def test_a_group_of_a_few_files_is_written_by_every_core(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files_worth: float, files: int, read_by: str
) -> None:
    """Hudi's default sizes (1 GB files in 2 GB groups) give groups of a few files, too few for even
    cuts across tasks of 8. One task would sort the whole group on one core; instead the planned
    files (0.9 of the target) are spread over the two cores, and each task cuts its share evenly by
    its own size profile (here the output is ~11 % larger than the input's column bytes said, so at
    1.7 files' worth each task's share is just under the target and becomes two even files).

    Two writer tasks read the inputs themselves, each keeping its own key range (`direct_read`);
    through Spark's shuffle (`read_by` "shuffle") the same rows land in the same tasks."""
    decided: list[bool] = []

    def reads_inputs_in_writer(*args: Any) -> bool:
        decided.append(direct_read.reads_inputs_in_writer(*args) and read_by == "writer")
        return decided[-1]

    monkeypatch.setattr(clustering_job, "reads_inputs_in_writer", reads_inputs_in_writer)
    base = tmp_path / f"few-files-{files}"
    table, config, target, before = _sized_group(spark, base, 60_000, files_worth)
    instant = _schedule(table, config)
    result = execute_clustering(
        table, instant, config, lambda job: run_group(spark, job), InProcessTableLock(table.name), zone=UTC
    )
    assert decided == [read_by == "writer"]
    assert result.committed and result.groups == 1
    assert _snapshots(spark, base) == before
    # Two writer tasks (Spark partition ids in the write tokens); no file over the target, none short.
    assert len({r.file_name.split("_")[1].split("-")[0] for r in result.written}) == 2
    sizes = sorted(r.file_size_bytes for r in result.written)
    assert len(sizes) == files, (sizes, target)
    assert sizes[-1] <= target and sizes[0] >= 0.8 * sizes[-1], (sizes, target)
    _assert_global_linear_order(base, result.written)
