"""The services list through the metadata table, and stop a table whose MDT and storage disagree.

`HudiTable.list_partitions` serves the MDT's listing when the `files` partition is served; on every
MDT history Hudi 0.15.0 wrote (`tests/support/mdt_histories.py`) it equals the storage listing. A
clean or clustering plan is written, and a clean executed, only once the storage listing of the
partitions it touches agrees with the MDT's (`service.table.listing_check`): a file deleted behind
the MDT's back, or a committed file the MDT lacks, stops the table with an error naming both sides.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.cleaning.orchestrator import Cleaner, CleanOptions
from service.clustering import schedule_clustering
from service.config.hoodie import HoodieConfig
from service.errors import MetadataListingMismatchError
from service.lock.in_process import InProcessTableLock
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.mdt.timeline import MDT_BASE
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.table.mdt.test_mdt_listing_hudi import (
    storage_listing,
)

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def _names_and_sizes(listing: dict[str, list[Any]]) -> dict[str, dict[str, int]]:
    return {p: {f.name: f.size for f in sorted(files, key=lambda f: f.name)} for p, files in listing.items()}


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True)
    return dest


@pytest.mark.parametrize("variant", ["latest", "after_replace", "indexes"])
def test_list_partitions_through_the_mdt_equals_storage(
    variant: str,
    mdt_history_built: Any,
    mdt_indexes_built: HudiHistory,
    tmp_path: Path,
) -> None:
    source = {
        "latest": mdt_history_built.history.base_path,
        "after_replace": mdt_history_built.after_replace,
        "indexes": mdt_indexes_built.base_path,
    }[variant]
    base = _copy(source, tmp_path / "t")
    on_disk = storage_listing(base)
    # A stray non-Hudi file: storage lists it, the MDT does not. It proves where the listing came from.
    partition = sorted(on_disk)[0]
    (base / partition / "notes.txt").write_text("not a data file")
    table = HudiTable.open(str(base), check_supported=False)
    assert table.lists_through_mdt
    ours = _names_and_sizes(table.list_partitions())
    assert ours == on_disk
    assert all(
        "/" not in f.path[len(p) + 1 :] and f.path.startswith(p)
        for p, fs in table.list_partitions().items()
        for f in fs
    )
    stored = _names_and_sizes(table.list_storage_partitions())
    assert "notes.txt" in stored[partition]
    assert {p: {n: s for n, s in fs.items() if n.endswith(".parquet")} for p, fs in stored.items()} == ours
    assert not any(n.startswith(PARTITION_METAFILE_PREFIX) for fs in ours.values() for n in fs)
    only = [*sorted(on_disk)[-1:], "no/such/partition"]
    assert _names_and_sizes(table.list_partitions(only)) == {only[0]: on_disk[only[0]]}
    timeline = table.load_timeline()
    via_mdt, via_storage = table.load_view(timeline), table.load_view(timeline, from_storage=True)
    assert via_mdt.file_groups == via_storage.file_groups


def _cleaner(table: HudiTable, **options: Any) -> Cleaner:
    config = HoodieConfig.from_mapping({"hoodie.cleaner.commits.retained": "1"}, table.name)
    return Cleaner(table, config, InProcessTableLock(table.name), UTC, CleanOptions(force=True, **options))


def _clean_partitions(base: Path) -> set[str]:
    preview = _cleaner(HudiTable.open(str(base)), dry_run=True).run()
    partitions = {f.partition_path for c in preview.cleans for f in c.files}
    assert partitions, "the clean would delete nothing; the test proves nothing"
    return partitions


def _timeline_files(base: Path) -> set[str]:
    return {p.name for p in (base / ".hoodie").iterdir() if p.is_file()}


def test_clean_stops_when_a_file_was_deleted_behind_the_mdts_back(
    mdt_history_built: Any,
    tmp_path: Path,
) -> None:
    base = _copy(mdt_history_built.history.base_path, tmp_path / "t")
    partition = sorted(_clean_partitions(base))[0]
    # A file of the latest snapshot (never one the clean deletes) vanishes from storage only.
    view = HudiTable.open(str(base)).load_view()
    victim = next(
        g.latest_slice.base_file
        for g in view.live_file_groups
        if g.partition_path == partition and g.latest_slice is not None and g.latest_slice.base_file
    )
    assert victim is not None
    (base / victim.path).unlink()
    before, timeline_before = storage_listing(base), _timeline_files(base)
    with pytest.raises(MetadataListingMismatchError) as raised:
        _cleaner(HudiTable.open(str(base))).run()
    message = str(raised.value)
    assert f"partition {partition!r} file {victim.file_name!r}" in message
    assert (
        f"the metadata table says {victim.size_bytes} bytes, storage says no such committed file" in message
    )
    assert raised.value.table == HudiTable.open(str(base)).name
    assert storage_listing(base) == before, "nothing may be deleted"
    assert _timeline_files(base) == timeline_before, "no clean plan may be written"


def test_clean_stops_on_a_committed_file_the_mdt_lacks(mdt_history_built: Any, tmp_path: Path) -> None:
    """The MDT deltacommit of the last data commit is taken away (left uncommitted in the MDT): storage
    holds that commit's files, the MDT does not list them."""
    base = _copy(mdt_history_built.history.base_path, tmp_path / "t")
    partitions = _clean_partitions(base)
    last = ht.completed_instants(base)[-1]
    added = {
        (p, n) for p, files in storage_listing(base).items() for n in files if n.endswith(f"_{last}.parquet")
    }
    assert {p for p, _ in added} & partitions, "the clean must touch a partition of the last commit"
    (base / MDT_BASE / ".hoodie" / f"{last}.deltacommit").unlink()
    (base / MDT_BASE / ".hoodie" / f".{last}.deltacommit.crc").unlink(missing_ok=True)
    before, timeline_before = storage_listing(base), _timeline_files(base)
    with pytest.raises(
        MetadataListingMismatchError,
        match=r"the metadata table says no such committed file, storage says [0-9]+ bytes",
    ) as raised:
        _cleaner(HudiTable.open(str(base))).run()
    assert (raised.value.partition, raised.value.file_name) in added
    assert storage_listing(base) == before
    assert _timeline_files(base) == timeline_before


def test_pending_clean_of_a_table_that_later_disagrees_is_not_executed(
    mdt_history_built: Any,
    tmp_path: Path,
) -> None:
    """A clean plan written while both agreed; a file goes behind the MDT's back before it runs."""
    base = _copy(mdt_history_built.history.base_path, tmp_path / "t")
    table = HudiTable.open(str(base))
    cleaner = _cleaner(table)
    skipped, scheduled = cleaner._schedule()
    assert scheduled is not None, skipped
    instant, plan = scheduled.instant, scheduled.plan
    planned = {t.path for t in plan.all_targets}
    view = table.load_view()
    victim = next(
        g.latest_slice.base_file
        for g in view.live_file_groups
        if g.partition_path in plan.targets and g.latest_slice is not None and g.latest_slice.base_file
    )
    assert victim is not None and victim.path not in planned
    (base / victim.path).unlink()
    before = storage_listing(base)
    with pytest.raises(MetadataListingMismatchError, match=victim.file_name):
        _cleaner(HudiTable.open(str(base))).run()
    assert storage_listing(base) == before
    assert not (base / ".hoodie" / f"{instant.timestamp}.clean").exists()


def test_clustering_plan_is_not_written_when_the_mdt_and_storage_disagree(
    mdt_history_built: Any,
    tmp_path: Path,
) -> None:
    base = _copy(mdt_history_built.history.base_path, tmp_path / "t")
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "id"}, table.name)
    lock = InProcessTableLock(table.name)
    dry = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC, dry_run=True)
    assert dry.plan is not None, dry.reason
    first = dry.plan.groups[0].slices[0]
    assert first.base_file_path
    (base / first.base_file_path).unlink()
    timeline_before = _timeline_files(base)
    with pytest.raises(MetadataListingMismatchError, match="storage says no such committed file"):
        schedule_clustering(HudiTable.open(str(base)), config, lock, now=datetime.now(UTC), zone=UTC)
    assert _timeline_files(base) == timeline_before


def test_a_clean_deleting_its_files_is_not_a_disagreement(mdt_history_built: Any, tmp_path: Path) -> None:
    """Hudi's cleaner deletes a plan's files before it writes the clean to the MDT: while it runs, the
    MDT lists files storage no longer has. Files a pending clean names are not a disagreement."""
    base = _copy(mdt_history_built.history.base_path, tmp_path / "t")
    table = HudiTable.open(str(base))
    skipped, scheduled = _cleaner(table)._schedule()  # T.clean.requested, as any cleaner writes it
    assert scheduled is not None, skipped
    clean_plan = scheduled.plan
    for target in clean_plan.all_targets:  # the cleaner's deletes, its MDT deltacommit not written yet
        (base / target.path).unlink()
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "id"}, table.name)
    lock = InProcessTableLock(table.name)
    outcome = schedule_clustering(
        HudiTable.open(str(base)), config, lock, now=datetime.now(UTC), zone=UTC, dry_run=True
    )
    assert outcome.plan is not None, outcome.reason
    touched = {g.partition_path for g in outcome.plan.groups}
    assert touched & set(clean_plan.targets), "the clustering must list a partition the clean deletes in"
