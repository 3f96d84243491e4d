"""The merge-on-read table model against Hudi's own file-system view, on tables Hudi wrote.

For each MOR history (logs in Avro and Parquet blocks, a failed deltacommit rolled back with a command
block, Hudi compactions, a compaction scheduled by Hudi and left pending with a deltacommit appended
after it), `status --json` lists exactly the latest file slices Hudi's `HoodieTableFileSystemView`
returns (base file and log file names, logs in `HoodieLogFile.getLogFileComparator` order), and our
view's slices of every file group are the ones Hudi's cleaner iterates (`getAllFileSlices`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from service.table.table import HudiTable
from tests.interop.test_table_model_vs_hudi import status_json
from tests.support.mor_tables import HudiSlice, MorHistoryCache, hudi_view_slices, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

__all__ = ["mor_histories"]

MOR_HISTORIES = [
    "mor_partitioned_avro",
    "mor_nonpartitioned_parquet",
    "mor_default_payload",
    "mor_pending_compaction",
    "mor_compacted",
]


def _our_slices(base_path: Path) -> list[HudiSlice]:
    table = HudiTable.open(str(base_path))
    view = table.load_view(table.load_timeline())
    return sorted(
        HudiSlice(
            fs.partition_path,
            fs.file_id,
            fs.base_instant_time,
            fs.base_file.file_name if fs.base_file else "",
            tuple(lf.file_name for lf in fs.log_files),
        )
        for fg in view.file_groups.values()
        if not fg.is_replaced
        for fs in fg.slices
    )


@pytest.mark.parametrize("name", MOR_HISTORIES)
def test_mor_slices_equal_hudis_view(name: str, mor_histories: MorHistoryCache, spark: SparkSession) -> None:
    history = mor_histories.get(name)
    base = history.base_path
    status = status_json(base)
    assert status["table"]["type"] == "MERGE_ON_READ"
    latest = sorted(
        HudiSlice(
            g["partition_path"],
            g["file_id"],
            g["base_instant"],
            g["base_file"] or "",
            tuple(lf["name"] for lf in g["log_files"]),
        )
        for g in status["file_groups"]
    )
    hudi_latest, hudi_every = hudi_view_slices(spark, base)
    assert latest == hudi_latest
    assert _our_slices(base) == hudi_every
    assert any(s.log_files for s in latest), "Hudi's upserts wrote log files"
    for g in status["file_groups"]:
        partition = base / g["partition_path"]
        assert [lf["size_bytes"] for lf in g["log_files"]] == [
            (partition / lf["name"]).stat().st_size for lf in g["log_files"]
        ]


def test_pending_compaction_opens_a_new_slice(mor_histories: MorHistoryCache) -> None:
    """While Hudi's compaction `C` is pending, the latest slice of each group it compacts is `C`: the
    logs appended since it was scheduled, without a base file; the frozen input slice stays below it."""
    history = mor_histories.get("mor_pending_compaction")
    compaction = history.failed_instant
    groups = status_json(history.base_path)["file_groups"]
    in_plan = [g for g in groups if g["base_instant"] == compaction]
    assert in_plan and all(g["base_file"] is None for g in in_plan)
    assert any(g["log_files"] for g in in_plan), "the upsert after scheduling appended to slice C"
    assert any(not g["log_files"] for g in in_plan), "slice C exists before any file carries C"
    assert all(
        lf["name"].split(".log.")[0].endswith(f"_{compaction}") for g in in_plan for lf in g["log_files"]
    )
    slices = _our_slices(history.base_path)
    for g in in_plan:
        below = [s for s in slices if s.file_id == g["file_id"] and s.base_instant < compaction]
        assert below and below[-1].base_file, "the compaction's input slice keeps its base file"


def test_rolled_back_deltacommit_logs_stay_in_their_slice(mor_histories: MorHistoryCache) -> None:
    """Hudi 0.15 rolls a failed deltacommit back with a command block appended in a new log file
    (token `1-0-1`); the failed data blocks' log file stays, in the same slice (the scanner skips
    its blocks); both belong to the slice, as in Hudi's view (asserted above)."""
    history = mor_histories.get("mor_partitioned_avro")
    groups = status_json(history.base_path)["file_groups"]
    names = [lf["name"] for g in groups for lf in g["log_files"]]
    assert any(n.endswith("_1-0-1") for n in names), "no rollback command block log file"
    assert status_json(history.base_path)["uncommitted_files"] == 0
