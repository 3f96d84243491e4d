"""Our clean, clustering and rollback on tables whose metadata table Hudi 0.15.0 keeps (its default).

After each of our instants: Hudi's own MDT reader (`HoodieBackedTableMetadata` through the JVM) and
`show_metadata_table_files` list exactly the files on storage, names and sizes; Hudi's snapshot read
with `hoodie.metadata.enable=true` equals the one with it off; and Hudi's writer goes on committing
across the MDT's own compaction (every 3 deltacommits in these histories), after which the listings
still agree. The history is `tests/support/mdt_histories.build_mdt_history`, built once per session.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.rollback import rollback_instant
from service.table.instant import Action
from service.table.mdt.files_listing import list_partitions_via_mdt
from service.table.mdt.timeline import MDT_BASE, load_mdt_timeline
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.table.mdt.test_mdt_listing_hudi import (
    hudi_mdt_listing,
    hudi_procedure_listing,
    storage_listing,
)

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


@pytest.fixture
def mdt_table(mdt_history_built: Any, tmp_path: Path) -> HudiHistory:
    history: HudiHistory = mdt_history_built.history.copy_to(tmp_path / "mdt_files")
    return history


def _rows(spark: Any, base: Path, mdt: bool) -> list[tuple[str, ...]]:
    """Snapshot rows, `_hoodie_file_name` aside (clustering moves records to new files)."""
    df = spark.read.format("hudi").option("hoodie.metadata.enable", str(mdt).lower()).load(str(base))
    df = df.drop("_hoodie_file_name")
    return sorted(tuple(str(v) for v in row) for row in df.collect())


def assert_mdt_agrees(spark: Any, base: Path) -> None:
    """Hudi's MDT listing, its procedures and ours equal storage; MDT-on reads equal MDT-off reads."""
    on_disk = storage_listing(base)
    assert hudi_mdt_listing(spark, base) == on_disk
    assert hudi_procedure_listing(spark, base) == {p: set(f) for p, f in on_disk.items()}
    assert list_partitions_via_mdt(Storage.for_base_uri(str(base))) == on_disk
    assert _rows(spark, base, mdt=True) == _rows(spark, base, mdt=False)


def hudi_keeps_writing(spark: Any, history: HudiHistory, batches: int = 4) -> None:
    """Upserts through Hudi's writer (MDT on, compacted every 3 deltacommits), listings checked after."""
    storage = Storage.for_base_uri(str(history.base_path))
    compactions = len(load_mdt_timeline(storage).by_actions((Action.COMMIT,)))
    for k in range(batches):
        df = ht.generate(spark, range(100 * k, 100 * k + 20), batch=20 + k)
        history.write(spark, df, "upsert")
    timeline = load_mdt_timeline(storage)
    assert len(timeline.by_actions((Action.COMMIT,)).completed()) > compactions, "no MDT compaction crossed"
    assert_mdt_agrees(spark, history.base_path)


def _our_mdt_deltacommit(base: Path, instant: str) -> Path:
    return base / MDT_BASE / ".hoodie" / f"{instant}.deltacommit"


def our_clean(base: Path) -> tuple[str, list[tuple[str, str]]]:
    """Our clean through the CLI, keeping 1 commit: its instant and the (partition, file) it deleted."""
    before = storage_listing(base)
    argv = [
        "clean", "--base-path", str(base), "--timezone", "UTC", "--force",
        "--hoodie-conf", "hoodie.cleaner.commits.retained=1",
    ]  # fmt: skip
    assert main(argv) == 0
    after = storage_listing(base)
    deleted = sorted((p, n) for p, files in before.items() for n in files if n not in after.get(p, {}))
    assert deleted, "the clean deleted nothing; the test proves nothing"
    return ht.instants_with_action(base, "clean")[-1], deleted


def test_our_clean_tombstones_reach_hudis_mdt(spark: Any, mdt_table: HudiHistory) -> None:
    base = mdt_table.base_path
    ours, _ = our_clean(base)
    assert_mdt_agrees(spark, base)
    assert _our_mdt_deltacommit(base, ours).exists()
    hudi_keeps_writing(spark, mdt_table)


def test_our_clustering_adds_reach_hudis_mdt(spark: Any, mdt_table: HudiHistory) -> None:
    base = mdt_table.base_path
    rows = _rows(spark, base, mdt=False)
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "id"}, table.name)
    lock = InProcessTableLock(table.name)
    outcome = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC)
    assert outcome.instant_time is not None, outcome.reason
    result = execute_clustering(
        table,
        outcome.instant_time,
        config,
        SparkExecutor(session=spark).run_group,
        InProcessTableLock(table.name),
        zone=UTC,
    )
    assert result.committed
    assert_mdt_agrees(spark, base)
    assert _our_mdt_deltacommit(base, outcome.instant_time).exists()
    assert _rows(spark, base, mdt=True) == rows
    hudi_keeps_writing(spark, mdt_table)


def test_rollback_of_an_instant_whose_mdt_deltacommit_completed(spark: Any, mdt_table: HudiHistory) -> None:
    """The trap of a data rollback: a writer crashed after completing MDT deltacommit X but before
    X's data commit (simulated: X.commit taken off the data timeline). Our rollback of X deletes X's
    files; once it completes, Hudi's readers trust X's MDT blocks again (getValidInstantTimestamps
    adds rolled-back instants), so X must leave the MDT first, or X's deleted files are listed."""
    base = mdt_table.base_path
    x = ht.completed_instants(base)[-1]
    assert _our_mdt_deltacommit(base, x).exists()
    (base / ".hoodie" / f"{x}.commit").unlink()
    (base / ".hoodie" / f".{x}.commit.crc").unlink(missing_ok=True)
    table = HudiTable.open(str(base))
    outcome = rollback_instant(table, x, InProcessTableLock(table.name), now=datetime.now(UTC), tz=UTC)
    assert outcome.metadata is not None and outcome.rollback_time is not None
    assert outcome.metadata.total_files_deleted > 0
    assert_mdt_agrees(spark, base)
    assert _our_mdt_deltacommit(base, outcome.rollback_time).exists()  # the (empty) MDT deltacommit R
    hudi_keeps_writing(spark, mdt_table)
