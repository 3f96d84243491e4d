"""Cleaning merge-on-read tables against real Hudi 0.15: the same MOR history cleaned by Hudi's
cleaner (`CALL run_clean`) on one copy and by ours on an identical copy deletes the same files.

The history (`mor_tables.build_compacted`) has file slices of base and log files left behind by two
Hudi compactions, log files of deltacommits appended after them, new file groups, and a compaction
Hudi scheduled and left pending with a deltacommit appended after it (its slices must survive). A
file version is a file slice: its log files go with it (`CleanPlanner.getCleanFileInfoForSlice`).
Hudi's snapshot read is the same before and after either clean, and Hudi still executes its pending
compaction on our cleaned copy.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table.table import HudiTable
from tests.clean.test_hudi_differential import _data_files, _hudi_clean, _our_clean
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, MorHistoryCache, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

__all__ = ["mor_histories"]

CONFIGS = [
    ("KEEP_LATEST_COMMITS", 1),  # the ECTR is held back by the pending compaction
    ("KEEP_LATEST_COMMITS", 3),
    ("KEEP_LATEST_FILE_VERSIONS", 1),
    ("KEEP_LATEST_FILE_VERSIONS", 2),
]


def _read(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    reader = spark.read.format("hudi").option("hoodie.metadata.enable", "false")
    return ht.normalise_rows(row.asDict() for row in reader.load(str(base)).collect())


def _compaction_inputs(base: Path) -> set[str]:
    """Files of every slice a pending compaction needs (its input slice and the slices after it)."""
    table = HudiTable.open(str(base))
    view = table.load_view(table.load_timeline())
    needed = set()
    for fg_id, (_, input_instant) in view.facts.pending_compaction.items():
        for fs in view.file_groups[fg_id].slices:
            if fs.base_instant_time >= input_instant:
                needed.update(fs.paths)
    return needed


@pytest.fixture(scope="module")
def compacted(mor_histories: MorHistoryCache) -> MorHistory:
    return mor_histories.get("mor_compacted")


@pytest.mark.parametrize(("policy", "retained"), CONFIGS)
def test_mor_clean_deletes_what_hudi_deletes(
    spark: SparkSession, compacted: MorHistory, tmp_path: Path, policy: str, retained: int
) -> None:
    hudi_copy = tmp_path / "hudi"
    our_copy = tmp_path / "ours"
    shutil.copytree(compacted.base_path, hudi_copy, symlinks=True)
    shutil.copytree(compacted.base_path, our_copy, symlinks=True)
    before = _data_files(compacted.base_path)
    needed = _compaction_inputs(compacted.base_path)
    assert needed, "the history has a pending compaction"
    snapshot = _read(spark, compacted.base_path)

    hudi_row = _hudi_clean(spark, hudi_copy, policy, retained)
    [ours] = _our_clean(our_copy, policy, retained).cleans

    hudi_deleted = before - _data_files(hudi_copy)
    our_deleted = before - _data_files(our_copy)
    assert our_deleted == hudi_deleted
    assert any(".log." in p for p in our_deleted), "log files are deleted with their slice"
    assert any(p.endswith(".parquet") for p in our_deleted)
    assert not our_deleted & needed, "a slice the pending compaction needs was deleted"
    assert ours.files_deleted == hudi_row["total_files_deleted"] == len(hudi_deleted)
    assert ours.earliest_commit_to_retain == hudi_row["earliest_commit_to_retain"]
    assert _read(spark, our_copy) == snapshot
    assert _read(spark, hudi_copy) == snapshot


def test_hudi_runs_its_pending_compaction_after_our_clean(
    spark: SparkSession, compacted: MorHistory, tmp_path: Path
) -> None:
    """Our most aggressive clean leaves the pending compaction's input intact: Hudi executes it, and
    the snapshot is unchanged."""
    base = tmp_path / "ours"
    shutil.copytree(compacted.base_path, base, symlinks=True)
    snapshot = _read(spark, base)
    assert _our_clean(base, "KEEP_LATEST_FILE_VERSIONS", 1).files_deleted > 0
    compaction = compacted.failed_instant  # build_compacted keeps the pending compaction here
    call = f"CALL run_compaction(op => 'run', path => '{base}', timestamp => {compaction})"
    spark.sql(call).collect()
    assert (base / ".hoodie" / f"{compaction}.commit").exists()
    assert _read(spark, base) == snapshot
