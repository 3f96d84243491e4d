"""Log-only file slices written by real Hudi 0.15 (issue 14): file groups with log files and no base
file, as an index that can index log files makes them.

Hudi's Spark writer with `hoodie.index.type=INMEMORY` (`HoodieInMemoryHashIndex.canIndexLogFiles`)
writes inserts as log blocks of new file groups (`BaseSparkDeltaCommitActionExecutor.handleInsert`
uses an append handle), updates and deletes into those groups' logs. On such a table our merged read
of every latest slice equals Hudi's snapshot read, our clustering plans the log-only slices and keeps
the exact record set (meta fields included), and Hudi's upserts afterwards land once.

The in-memory index is a JVM-wide static map of record locations shared by every table the session
writes: this table's keys (`KEYS`) are used by no other test. After our clustering that map still
points at the replaced file groups (Hudi's own clustering would update it, `HoodieIndex.updateLocation`),
so the upserts afterwards use Hudi's default index, which finds the records in our base files.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.table import HudiTable
from tests.clean.test_lazy_rollback_mor import _our_merged_read, rolled_back_without_markers
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, _MorBuilder, hudi_view_slices

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

KEYS = range(7000, 7030)  # unique to this module: the in-memory index is shared by the whole JVM
INMEMORY = {"hoodie.index.type": "INMEMORY"}
COLUMNS = (
    "_hoodie_record_key",
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_partition_path",
    *ht.DATA_COLUMNS,
)


@pytest.fixture(scope="module")
def log_only(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> MorHistory:
    base = tmp_path_factory.mktemp("log-only") / "mor_log_only"
    b = _MorBuilder(spark, "mor_log_only", base, True, INMEMORY)
    b.write("insert", KEYS[:20], tag=0, ts=10)
    b.write("upsert", [*KEYS[0:8], *KEYS[20:30]], tag=1, ts=20)  # updates, and inserts of new groups
    b.write("upsert", KEYS[4:6], tag=2, ts=15)  # a lower ordering value: log vs log keeps ts=20
    b.write("delete", KEYS[10:13], tag=3, ts=30)
    return b.finish("")


def _snapshot(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base), COLUMNS)


def test_hudi_wrote_log_only_slices_and_we_read_them_as_hudi_does(
    spark: SparkSession, log_only: MorHistory
) -> None:
    latest, _ = hudi_view_slices(spark, log_only.base_path)
    assert latest and all(not s.base_file and s.log_files for s in latest), latest
    ours = HudiTable.open(str(log_only.base_path)).load_view().latest_file_slices()
    assert sorted((s.partition_path, s.file_id, s.base_file is None) for s in ours) == sorted(
        (s.partition, s.file_id, True) for s in latest
    )
    snapshot = {r["_hoodie_record_key"]: r for r in _snapshot(spark, log_only.base_path)}
    assert set(snapshot) == {str(k) for k in KEYS} - {str(k) for k in KEYS[10:13]}
    assert {snapshot[str(k)]["ts"] for k in KEYS[4:6]} == {20}
    merged = _our_merged_read(log_only.base_path)
    without_meta = {k: {c: r[c] for c in ht.DATA_COLUMNS} for k, r in snapshot.items()}
    assert {k: {c: r[c] for c in ht.DATA_COLUMNS} for k, r in merged.items()} == without_meta


def test_clustering_log_only_slices_keeps_the_record_set_and_hudi_upserts_land_once(
    spark: SparkSession, log_only: MorHistory, tmp_path: Path
) -> None:
    base = tmp_path / "clustered"
    shutil.copytree(log_only.base_path, base, symlinks=True)
    before = _snapshot(spark, base)
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({}, table.name)
    lock = InProcessTableLock(table.name, key=table.base_uri)
    outcome = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC)
    assert outcome.instant_time is not None and outcome.plan is not None, outcome.reason
    slices = [s for g in outcome.plan.groups for s in g.slices]
    assert slices and all(s.log_file_paths and not s.base_file_path for s in slices)
    run_group = SparkExecutor(session=spark).run_group
    result = execute_clustering(table, outcome.instant_time, config, run_group, lock, zone=UTC)
    assert result.committed, result.reason

    assert _snapshot(spark, base) == before
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist(), COLUMNS) == before
    view = HudiTable.open(str(base)).load_view()
    assert all(fg.latest_slice and fg.latest_slice.base_file for fg in view.live_file_groups)

    # Hudi's upserts afterwards (default index: it reads our base files) land once.
    writer = _MorBuilder(spark, log_only.name, base, True, {})
    updated = [*KEYS[0:30:3]]
    writer.write("upsert", updated, tag=40, ts=100)
    rows = ht.read_snapshot(spark, base)
    keys = [r["_hoodie_record_key"] for r in rows]
    assert len(keys) == len(set(keys))
    expected = {r["id"]: {c: r[c] for c in ht.DATA_COLUMNS} for r in before}
    for i in updated:
        expected[i] = {**ht.expected_row(i, 40), "ts": 100}
    assert {r["id"]: r for r in ht.normalise_rows(rows)} == expected


def test_a_failed_deltacommit_creating_log_only_groups_is_rolled_back_without_markers(
    spark: SparkSession, log_only: MorHistory, tmp_path: Path
) -> None:
    """A failed deltacommit X that inserted into new log-only file groups (log files whose base
    instant is X) and appended to existing ones, its markers gone: Hudi's listing rollback deletes
    X's new log files and voids its appends with command blocks; ours does the same, and Hudi reads
    the table as before X."""
    source = tmp_path / "failed"
    shutil.copytree(log_only.base_path, source, symlinks=True)
    before = _snapshot(spark, source)
    writer = _MorBuilder(spark, log_only.name, source, True, INMEMORY)
    failed = writer.write_failing([*KEYS[0:4], *range(7030, 7036)], tag=5, ts=99)
    ours, hudi, _, deleted = rolled_back_without_markers(spark, source, failed, tmp_path)
    assert any(f"_{failed}.log." in name for name in deleted), deleted
    assert _snapshot(spark, ours) == _snapshot(spark, hudi) == before
