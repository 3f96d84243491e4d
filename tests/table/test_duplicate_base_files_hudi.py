"""Two base files of one committed instant in one file group, on tables Hudi 0.15 wrote.

A retried task can leave a second base file of its instant beside the committed one when the writer's
marker reconciliation does not remove it. Here the leftover is a copy of the group's older version
named `<fileId>_0-0-0_<instant>.parquet`, so it sorts before the committed file. The commit's write
stats say which file is the slice's: the view takes that one and sets the leftover apart, so
`status --json` reports the committed file and our clustering rewrites the latest rows (Hudi reads
every update after it), with the metadata table off (storage listing) and on.
hudi-rs refuses a table holding such a leftover; it is never read, and removing it is left to the
table's upkeep (a later clean or the orphan repair).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from service.cli import main
from service.errors import CorruptTableError
from service.table.fs_view import FileSystemView
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HistoryCache, HudiHistory
from tests.support.service_runs import execute_our_clustering, schedule_our_clustering

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def _plant_leftover(base: Path) -> tuple[str, str, str]:
    """Copy an older base file of a group with two committed versions beside its latest one, named as
    a retried task of the latest instant; (partition, committed file name, leftover file name)."""
    view = HudiTable.open(str(base)).load_view(from_storage=True)
    for group in view.live_file_groups:
        with_base = [s for s in group.slices if s.base_file is not None]
        if len(with_base) < 2:
            continue
        latest, older = with_base[0].base_file, with_base[1].base_file
        assert latest is not None and older is not None
        leftover = f"{group.file_id}_0-0-0_{latest.instant_time}.parquet"
        assert leftover < latest.file_name, "the leftover must sort first"
        shutil.copyfile(base / older.path, base / group.partition_path / leftover)
        return group.partition_path, latest.file_name, leftover
    raise AssertionError(f"{base}: no file group with two base files")


def _latest_base_files(view: FileSystemView) -> set[str]:
    return {s.base_file.file_name for s in view.latest_file_slices() if s.base_file is not None}


@pytest.mark.parametrize("metadata", [False, True], ids=["storage-listing", "metadata-table"])
def test_the_base_file_the_commit_names_is_the_slices_and_clustering_loses_no_update(
    spark: SparkSession,
    hudi_histories: HistoryCache,
    mdt_indexes_built: HudiHistory,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    metadata: bool,
) -> None:
    source = mdt_indexes_built if metadata else hudi_histories.get("many_commits")
    history = source.copy_to(tmp_path / "table")
    base = history.base_path
    partition, committed, leftover = _plant_leftover(base)
    expected = history.expected_rows()

    table = HudiTable.open(str(base))
    assert table.lists_through_mdt is metadata
    for view in (table.load_view(), table.load_view(from_storage=True)):
        assert committed in _latest_base_files(view) and leftover not in _latest_base_files(view)
    # Storage's listing shows the leftover; the view sets it apart with the uncommitted files.
    assert f"{partition}/{leftover}" in table.load_view(from_storage=True).uncommitted_files

    capsys.readouterr()
    assert main(["status", "--base-path", str(base), "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["file_groups"]
    [reported] = [g for g in groups if g["file_id"] == leftover.split("_")[0]]
    assert reported["base_file"] == committed

    instant = schedule_our_clustering(base)
    assert execute_our_clustering(spark, base, instant)
    for listing in ("true", "false"):
        read = spark.read.format("hudi").option("hoodie.metadata.enable", listing).load(str(base))
        assert ht.normalise_rows(row.asDict() for row in read.collect()) == expected, listing
    # hudi-rs 0.5.0 lists storage and refuses any table with such a leftover ("Timestamp ... is already
    # present in File Group"), Hudi's untouched copy as well; without the leftover it reads our output.
    with pytest.raises(Exception, match="is already present in File Group"):
        ht.hudi_rs_snapshot(base)
    (base / partition / leftover).unlink()
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == expected


def test_two_base_files_the_commit_cannot_tell_apart_are_refused_by_name(
    hudi_histories: HistoryCache, tmp_path: Path
) -> None:
    """When the commit's write stats name neither base file of the instant (here the committed one was
    renamed to another write token), the view is refused, naming both files: it cannot tell which
    one holds the committed records."""
    history = hudi_histories.get("many_commits").copy_to(tmp_path / "table")
    base = history.base_path
    partition, committed, leftover = _plant_leftover(base)
    file_id, _, instant_file = committed.split("_")
    (base / partition / committed).rename(base / partition / f"{file_id}_9-9-9_{instant_file}")
    with pytest.raises(CorruptTableError) as refused:
        HudiTable.open(str(base)).load_view()
    message = str(refused.value)
    assert leftover in message and "commit write stats name neither" in message
