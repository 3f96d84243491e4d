"""The real-Hudi harness itself: Hudi's Spark writer and reader, hudi-rs and the histories agree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from service.demo.hudi_writer import write_demo_batches
from tests.support import hudi_tables as ht
from tests.support.histories import HistoryCache, HudiHistory
from tests.support.paths import REPO_ROOT
from tests.support.spark import SparkStart

pytestmark = [pytest.mark.spark, pytest.mark.hudi]


def _assert_readers_agree(spark: SparkSession, history: HudiHistory) -> None:
    expected = history.expected_rows()
    assert ht.normalise_rows(ht.read_snapshot(spark, history.base_path)) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(history.base_path).to_pylist()) == expected
    assert ht.hudi_rs_file_slices(history.base_path) == ht.hudi_latest_file_slices(spark, history.base_path)


def test_spark_session_has_hudi_extensions(spark_start: SparkStart) -> None:
    print(f"spark session start: {spark_start.start_seconds:.1f} s")
    conf = spark_start.session.sparkContext.getConf()
    assert conf.get("spark.sql.extensions") == "org.apache.spark.sql.hudi.HoodieSparkSessionExtension"
    assert conf.get("spark.jars", "").endswith("hudi-spark3.5-bundle_2.12-0.15.0.jar")
    assert spark_start.start_seconds < 60


def test_a_child_spark_driver_maps_spark_from_the_class_data_archive(tmp_path: Path) -> None:
    """What a service, daemon or Hudi 1.x child starts inherits `tests.support.jvm_archive`'s archive:
    its driver loads Spark's classes from the archive ("top": the dynamic layer), not from the jars."""
    loaded = tmp_path / "class-load.log"
    env = {
        **os.environ,
        "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -Xlog:class+load=info:file={loaded}",
        "PYTHONPATH": str(REPO_ROOT),
    }
    script = "from pyspark.sql import SparkSession as S; S.builder.master('local[1]').getOrCreate().stop()"
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120, capture_output=True)
    lines = loaded.read_text(encoding="utf-8").splitlines()
    context = [line for line in lines if " org.apache.spark.SparkContext " in line]
    assert context and "shared objects file (top)" in context[0], context


def test_write_readers_see_same_rows(spark: SparkSession, tmp_path: Path) -> None:
    base = tmp_path / "t"
    parts = [ht.PARTITION_FIELD]
    first = ht.write(spark, base, ht.generate(spark, range(0, 30), batch=0), "insert", partition_fields=parts)
    second = ht.write(
        spark, base, ht.generate(spark, range(20, 40), batch=1), "upsert", partition_fields=parts
    )
    third = ht.write(spark, base, ht.generate(spark, range(0, 5), batch=1), "delete", partition_fields=parts)

    assert first < second < third
    assert ht.completed_instants(base) == [first, second, third]
    expected = [ht.expected_row(i, 0) for i in range(5, 20)] + [ht.expected_row(i, 1) for i in range(20, 40)]
    spark_rows = ht.read_snapshot(spark, base)
    assert ht.normalise_rows(spark_rows) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == expected
    assert {r["_hoodie_partition_path"] for r in spark_rows} == set(ht.PARTITIONS)


def test_write_bulk_insert_and_overwrite_table(spark: SparkSession, tmp_path: Path) -> None:
    base = tmp_path / "t"
    ht.write(
        spark, base, ht.generate(spark, range(0, 12), batch=0), "bulk_insert", partition_fields=["region"]
    )
    replace = ht.write(
        spark,
        base,
        ht.generate(spark, range(100, 103), batch=1),
        "insert_overwrite_table",
        partition_fields=["region"],
    )

    assert replace in ht.instants_with_action(base, "replacecommit")
    expected = [ht.expected_row(i, 1) for i in range(100, 103)]
    assert ht.normalise_rows(ht.read_snapshot(spark, base)) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == expected


def test_history_many_commits_has_small_file_groups(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    h = history_many_commits
    assert [a for _, a in h.instants] == ["commit"] * 6
    slices = ht.hudi_rs_file_slices(h.base_path)
    assert {s.partition for s in slices} == set(ht.PARTITIONS)
    # three inserts with the small-file limit at 0: three file groups per partition
    assert all(sum(s.partition == p for s in slices) == 3 for p in ht.PARTITIONS)
    _assert_readers_agree(spark, h)


def test_history_with_replace_hides_replaced_groups(
    spark: SparkSession, history_with_replace: HudiHistory
) -> None:
    h = history_with_replace
    assert [a for _, a in h.instants] == ["commit", "commit", "replacecommit", "commit"]
    replace_instant = next(t for t, a in h.instants if a == "replacecommit")
    asia = [s for s in ht.hudi_rs_file_slices(h.base_path) if s.partition == "asia"]
    # the overwrite's file group, plus one from the last upsert re-inserting ids the overwrite dropped
    assert [s.base_instant == replace_instant for s in asia].count(True) == 1
    assert all(s.base_instant >= replace_instant for s in asia)
    # the two replaced file groups' files are still on disk: only the timeline hides them
    on_disk = {p.name.split("_")[0] for p in (h.base_path / "asia").glob("*.parquet")}
    assert len(on_disk - {s.file_id for s in asia}) == 2
    _assert_readers_agree(spark, h)


def test_history_with_rollback_removed_failed_files(
    spark: SparkSession, history_with_rollback: HudiHistory
) -> None:
    h = history_with_rollback
    actions = [a for _, a in h.instants]
    assert actions.count("rollback") == 1
    assert actions.count("commit") == 3
    names = ht.timeline_files(h.base_path)
    rollback = next(t for t, a in h.instants if a == "rollback")
    assert f"{rollback}.rollback.requested" in names
    assert ht.pending_commit_instants(h.base_path) == []
    committed = set(ht.completed_instants(h.base_path))
    file_instants = {p.stem.rsplit("_", 1)[1] for p in h.base_path.rglob("*.parquet")}
    assert file_instants <= committed
    _assert_readers_agree(spark, h)


def test_history_with_clean_has_hudi_clean_metadata(
    spark: SparkSession, history_with_clean: HudiHistory
) -> None:
    h = history_with_clean
    cleans = [t for t, a in h.instants if a == "clean"]
    assert cleans
    names = ht.timeline_files(h.base_path)
    for t in cleans:
        assert {f"{t}.clean.requested", f"{t}.clean.inflight", f"{t}.clean"} <= set(names)
        assert (h.base_path / ".hoodie" / f"{t}.clean").stat().st_size > 0
    # KEEP_LATEST_COMMITS with 2 retained: older versions of rewritten file groups are gone
    versions_per_group: dict[str, int] = {}
    for p in h.base_path.rglob("*.parquet"):
        versions_per_group[p.name.split("_")[0]] = versions_per_group.get(p.name.split("_")[0], 0) + 1
    assert max(versions_per_group.values()) <= 3
    _assert_readers_agree(spark, h)


def test_history_nonpartitioned_has_one_partition(
    spark: SparkSession, history_nonpartitioned: HudiHistory
) -> None:
    h = history_nonpartitioned
    assert ht.partition_paths(h.base_path) == [""]
    assert {s.partition for s in ht.hudi_rs_file_slices(h.base_path)} == {""}
    _assert_readers_agree(spark, h)


def test_write_failing_leaves_inflight_then_rollback_removes_it(
    spark: SparkSession, history_nonpartitioned: HudiHistory
) -> None:
    h = history_nonpartitioned
    before = ht.completed_instants(h.base_path)
    failed = ht.write_failing(
        spark,
        h.base_path,
        ht.generate(spark, range(0, 10), batch=9),
        table_name=h.table_name,
        partition_fields=h.partition_fields,
    )

    names = ht.timeline_files(h.base_path)
    assert f"{failed}.commit.requested" in names and f"{failed}.inflight" in names
    assert f"{failed}.commit" not in names
    assert list(h.base_path.glob(f"*_{failed}.parquet"))
    assert (h.base_path / ".hoodie" / ".temp" / failed).is_dir()

    after = ht.rollback_failed_writes(
        spark, h.base_path, table_name=h.table_name, partition_fields=h.partition_fields
    )

    assert ht.instants_with_action(h.base_path, "rollback")
    assert ht.pending_commit_instants(h.base_path) == []
    assert not list(h.base_path.glob(f"*_{failed}.parquet"))
    assert ht.completed_instants(h.base_path) == [*before, after]
    _assert_readers_agree(spark, h)


def test_rollback_to_instant_restores_previous_snapshot(
    spark: SparkSession, history_nonpartitioned: HudiHistory
) -> None:
    h = history_nonpartitioned
    latest = ht.completed_instants(h.base_path)[-1]
    assert ht.rollback_to_instant(spark, h.base_path, latest)
    assert latest not in ht.completed_instants(h.base_path)
    expected = [ht.expected_row(i, 0 if i < 60 else 1) for i in range(0, 120)]
    assert ht.normalise_rows(ht.hudi_rs_snapshot(h.base_path).to_pylist()) == expected


def test_registered_table_leaves_properties_untouched(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    props = history_many_commits.base_path / ".hoodie" / "hoodie.properties"
    before = props.read_bytes()
    ht.hudi_latest_file_slices(spark, history_many_commits.base_path)
    assert props.read_bytes() == before
    assert b"hoodie.table.timeline.timezone" in before


def test_demo_writer_writes_partitioned_table(spark: SparkSession, tmp_path: Path) -> None:
    base = tmp_path / "demo"
    write_demo_batches(str(base), batches=3, rows_per_batch=20, spark=spark)
    table = ht.hudi_rs_snapshot(base)
    # batch k covers ids [10k, 10k+20), half of them batch k-1's: 40 distinct orders after 3 batches
    assert sorted(table.column("order_id").to_pylist()) == list(range(0, 40))
    assert len(ht.completed_instants(base)) == 3
    assert set(table.column("_hoodie_partition_path").to_pylist()) == {"amsterdam", "lisbon", "oslo"}


def test_histories_build_within_budget(hudi_histories: HistoryCache) -> None:
    for name in ("many_commits", "with_replace", "with_rollback", "with_clean", "nonpartitioned"):
        hudi_histories.get(name)
    times = hudi_histories.build_times()
    print("history build seconds:", {k: round(v, 1) for k, v in times.items()})
    assert sum(times.values()) < 180
