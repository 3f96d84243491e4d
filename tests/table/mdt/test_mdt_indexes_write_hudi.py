"""Our clustering and clean on a table whose MDT has `column_stats` and `bloom_filters`, beside Hudi's writer.

The history is `build_mdt_indexes_history` (Hudi 0.15's Spark writer with both index partitions on,
MDT compacted every 3 deltacommits). After each of our instants, Hudi's own MDT reader
(`HoodieBackedTableMetadata.getColumnStats` / `getBloomFilter` through the JVM) returns, for every
base file of the latest file slices, exactly the ranges and the bloom filter of the file's Parquet
footer; a cleaned file's bloom filter is gone; Hudi's reads with the MDT on and off and hudi-rs
agree; a read with data skipping returns the same rows while reading fewer files; and Hudi's writer
goes on committing across the MDT's compaction of our blocks, after which all of this still holds.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from service.cli import main
from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.mdt.column_ranges import column_ranges
from service.table.mdt.index_records import ColumnStats, WrappedValue
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.mdt_records import hudi_metadata_reader
from tests.table.mdt.test_mdt_write_hudi import (
    _our_mdt_deltacommit,
    _rows,
    assert_mdt_agrees,
    hudi_keeps_writing,
    our_clean,
)

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

COLUMNS = (*HOODIE_META_FIELDS, *ht.DATA_COLUMNS)
NEW_IDS = range(5000, 5030)  # above every id of the history: files holding only these skip the rest
SKIPPING = {
    "hoodie.metadata.enable": "true",
    "hoodie.enable.data.skipping": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
}


@pytest.fixture
def history(mdt_indexes_built: HudiHistory, tmp_path: Path) -> HudiHistory:
    return mdt_indexes_built.copy_to(tmp_path / "mdt_indexes")


def _hudi_metadata(spark: Any, base: Path) -> Any:
    return hudi_metadata_reader(
        spark, base, withMetadataIndexColumnStats=True, withMetadataIndexBloomFilter=True
    )


def _java_stats(stats: Any) -> ColumnStats:
    """A `HoodieMetadataColumnStats` as Hudi read it, in our model (wrapper names from the classes)."""
    raw = json.loads(str(stats.toString()))

    def wrapped(java: Any, value: Any) -> Any:
        if java is None:
            return None
        return WrappedValue(str(java.getClass().getSimpleName()), value["value"])

    return ColumnStats(
        raw["fileName"], raw["columnName"],
        wrapped(stats.getMinValue(), raw["minValue"]), wrapped(stats.getMaxValue(), raw["maxValue"]),
        raw["nullCount"], raw["valueCount"], raw["totalSize"], raw["totalUncompressedSize"], raw["isDeleted"],
    )  # fmt: skip


def live_base_files(base: Path) -> list[tuple[str, str]]:
    return sorted((s.partition, s.base_file) for s in ht.hudi_rs_file_slices(base))


def assert_hudi_reads_footer_stats(spark: Any, base: Path, deleted: Sequence[tuple[str, str]] = ()) -> None:
    """Hudi's MDT reader returns each live base file's footer ranges and bloom filter; none of a
    deleted file's bloom filter."""
    jvm: Any = spark._jvm
    files = live_base_files(base)
    metadata = _hudi_metadata(spark, base)
    try:
        pairs = jvm.java.util.ArrayList()
        for partition, name in files:
            pairs.add(jvm.org.apache.hudi.common.util.collection.Pair.of(partition, name))
        for column in COLUMNS:
            found = metadata.getColumnStats(pairs, column)
            got = {(str(k.getLeft()), str(k.getRight())): _java_stats(found.get(k)) for k in found.keySet()}
            assert set(got) == set(files), column
            for partition, name in files:
                footer = pq.read_metadata(base / partition / name)
                [expected] = column_ranges(footer, name, [column])
                assert got[partition, name] == expected, (partition, name, column)
        for partition, name in files:
            bloom = metadata.getBloomFilter(partition, name)
            assert bloom.isPresent(), (partition, name)
            footer_kv = pq.read_metadata(base / partition / name).metadata
            assert str(bloom.get().serializeToString()) == footer_kv[b"org.apache.hudi.bloomfilter"].decode()
        for partition, name in deleted:
            assert not metadata.getBloomFilter(partition, name).isPresent(), (partition, name)
    finally:
        metadata.close()


def assert_readers_agree(spark: Any, base: Path) -> None:
    """Hudi with the MDT on and off, and hudi-rs, read the same rows (listings equal storage too)."""
    assert_mdt_agrees(spark, base)
    spark_rows = ht.normalise_rows(ht.read_snapshot(spark, base))
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == spark_rows


def _files_read(spark: Any, base: Path, condition: str, options: dict[str, str]) -> tuple[list[Any], int]:
    """Rows of a filtered Hudi read and the number of files its scan read (`FileSourceScanExec`'s
    `numFiles` metric: the files Hudi's file index handed to Spark after pruning and skipping)."""
    df = spark.read.format("hudi").options(**options).load(str(base)).where(condition)
    collected = df.collect()  # this Dataset's plan, whose metrics are read below
    rows = sorted(tuple(str(v) for k, v in r.asDict().items() if k != "_hoodie_file_name") for r in collected)
    plan = df._jdf.queryExecution().executedPlan()
    if plan.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    files = 0
    for i in range(leaves.size()):
        metrics = leaves.apply(i).metrics()
        if metrics.contains("numFiles"):
            files += int(metrics.apply("numFiles").value())
    return rows, files


def assert_data_skipping_reads_less(spark: Any, base: Path) -> None:
    """Reads with data skipping on return the rows of reads without it, from fewer files: our
    clustered files (ids below NEW_IDS) skipped for `id >= 5000`, Hudi's new ones for `id < 5000`."""
    for condition in (f"id >= {NEW_IDS.start}", f"id < {NEW_IDS.start}"):
        plain, all_files = _files_read(spark, base, condition, {"hoodie.metadata.enable": "true"})
        skipped, fewer = _files_read(spark, base, condition, SKIPPING)
        assert plain and skipped == plain, condition
        assert 0 < fewer < all_files, (condition, fewer, all_files)


def test_our_clustering_and_clean_keep_hudis_column_stats_and_bloom_filters(
    spark: Any, history: HudiHistory
) -> None:
    base = history.base_path
    rows = _rows(spark, base, mdt=False)
    table = HudiTable.open(str(base))  # no longer refused for its column_stats and bloom_filters
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "id"}, table.name)
    outcome = schedule_clustering(
        table, config, InProcessTableLock(table.name), now=datetime.now(UTC), zone=UTC
    )
    assert outcome.instant_time is not None, outcome.reason
    result = execute_clustering(
        table, outcome.instant_time, config, SparkExecutor(session=spark).run_group,
        InProcessTableLock(table.name), zone=UTC,
    )  # fmt: skip
    assert result.committed
    deltacommit = json.loads(_our_mdt_deltacommit(base, outcome.instant_time).read_text())
    assert set(deltacommit["partitionToWriteStats"]) == {"files", "column_stats", "bloom_filters"}
    ours = {(p, n) for p, n in live_base_files(base) if n.endswith(f"_{outcome.instant_time}.parquet")}
    assert ours, "the clustering wrote no base file"
    assert_hudi_reads_footer_stats(spark, base)
    assert_readers_agree(spark, base)
    assert _rows(spark, base, mdt=True) == rows

    # Hudi's writer adds new file groups (no small-file packing into ours), then data skipping.
    history.write(
        spark,
        ht.generate(spark, NEW_IDS, batch=30),
        "insert",
        extra_opts={"hoodie.parquet.small.file.limit": "0"},
    )
    assert_data_skipping_reads_less(spark, base)

    clean, deleted = our_clean(base)
    clean_commit = json.loads(_our_mdt_deltacommit(base, clean).read_text())
    assert {"column_stats", "bloom_filters"} <= set(clean_commit["partitionToWriteStats"])
    assert_hudi_reads_footer_stats(spark, base, deleted)
    assert_readers_agree(spark, base)
    assert_data_skipping_reads_less(spark, base)

    # Hudi's writer goes on across the MDT compaction of our blocks; its reads still agree.
    hudi_keeps_writing(spark, history)
    assert_hudi_reads_footer_stats(spark, base, deleted)
    assert_readers_agree(spark, base)
    assert_data_skipping_reads_less(spark, base)


def test_a_clean_whose_table_schema_cannot_be_read_names_its_commit(
    history: HudiHistory, caplog: pytest.LogCaptureFixture
) -> None:
    """A 0.x clean's `column_stats` tombstones are keyed by the writer schema's columns: when that
    schema cannot be read, the clean's error names the commit file it came from, not the table only."""
    base = history.base_path
    garbled = ht.garble_table_schemas(base, "commit")
    argv = [
        "clean", "--base-path", str(base), "--timezone", "UTC", "--force",
        "--hoodie-conf", "hoodie.cleaner.commits.retained=1",
    ]  # fmt: skip
    with caplog.at_level(logging.ERROR):
        assert main(argv) == 1
    assert re.search(rf"\S*/\.hoodie/{garbled[-1].name}: writer schema is not an Avro record", caplog.text)
