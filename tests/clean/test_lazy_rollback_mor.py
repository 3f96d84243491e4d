"""LAZY rollback of a writer's failed deltacommit on a merge-on-read table, against real Hudi 0.15.

The history (`mor_tables.build_failed_pending`) ends with a deltacommit X that appended log blocks
and wrote a base file, then failed; it is left pending with no heartbeat (expired). On one copy
Hudi's own clean (`CALL run_clean` under LAZY) rolls X back, on an identical copy ours does: both
delete the same files, write the same rollback command-block log file, and record the same rollback
metadata essentials. Afterwards Hudi's snapshot read equals the read before X, our merged read and
hudi-rs agree, and Hudi's writer keeps committing on our copy.
"""

from __future__ import annotations

import posixpath
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cleaning import CleanOptions
from service.table import codecs
from service.table.data_files import parse_log_file, parse_log_file_name
from service.table.instant import Action
from service.table.log_format.blocks import CommandBlock, CommandBlockType, HeaderKey
from service.table.log_format.merge import MergeConfig
from service.table.log_format.slice_reader import instant_filter, read_file_slice, read_log_file
from service.table.table import HudiTable
from tests.clean.helpers import make_cleaner
from tests.clean.test_hudi_differential import _call, _data_files
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, MorHistoryCache, _MorBuilder, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

__all__ = ["mor_histories"]

LAZY = {"hoodie.cleaner.policy.failed.writes": "LAZY"}
COLUMNS = ("_hoodie_record_key", *ht.DATA_COLUMNS)


@pytest.fixture(scope="module")
def failed(mor_histories: MorHistoryCache) -> MorHistory:
    return mor_histories.get("mor_failed_pending")


def _read(spark: SparkSession, base: Path, mdt: bool = False) -> list[dict[str, Any]]:
    reader = spark.read.format("hudi").option("hoodie.metadata.enable", str(mdt).lower())
    return ht.normalise_rows(row.asDict() for row in reader.load(str(base)).collect())


def _rollback(base: Path, target: str) -> tuple[str, codecs.RollbackMetadata]:
    table = HudiTable.open(str(base), check_supported=False)
    timeline = table.load_timeline()
    assert not [i for i in timeline if i.timestamp == target], f"{target} is still on the timeline"
    for instant in timeline.by_actions([Action.ROLLBACK]).completed():
        metadata = table.facts_reader.metadata(instant, codecs.RollbackMetadata)
        if target in metadata.commits_rollback:
            return instant.timestamp, metadata
    raise AssertionError(f"no completed rollback of {target} in {base}")


def _essentials(metadata: codecs.RollbackMetadata) -> dict[str, Any]:
    """Per partition: deleted files, rollback log files, the failed commit's log files (by name)."""

    def names(paths: Any) -> list[str]:
        return sorted(posixpath.basename(p) for p in paths or ())

    def sizes(files: Any) -> dict[str, int]:
        return {posixpath.basename(p): size for p, size in (files or {}).items()}

    return {
        "commits": list(metadata.commits_rollback),
        "partitions": {
            p: (
                names(pm.success_delete_files),
                names(pm.failed_delete_files),
                sizes(pm.rollback_log_files),
                dict(pm.log_files_from_failed_commit or {}),  # Hudi keys them by name, size 1
            )
            for p, pm in metadata.partition_metadata.items()
            if pm.success_delete_files or pm.rollback_log_files or pm.log_files_from_failed_commit
        },
    }


def _our_merged_read(base: Path) -> dict[str, dict[str, Any]]:
    table = HudiTable.open(str(base), check_supported=False)
    timeline = table.load_timeline()
    view = table.load_view(timeline)
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    rows: list[dict[str, Any]] = []
    for group in view.live_file_groups:
        assert group.latest_slice is not None
        rows += read_file_slice(
            table.storage, group.latest_slice, instant_filter(timeline), config
        ).to_pylist()
    return {r["_hoodie_record_key"]: r for r in ht.normalise_rows(rows, COLUMNS)}


def test_lazy_clean_rolls_back_a_failed_deltacommit_as_hudi_does(
    spark: SparkSession, failed: MorHistory, tmp_path: Path
) -> None:
    hudi_copy = tmp_path / "hudi"
    our_copy = tmp_path / "ours"
    shutil.copytree(failed.base_path, hudi_copy, symlinks=True)
    shutil.copytree(failed.base_path, our_copy, symlinks=True)
    before = _data_files(failed.base_path)
    snapshot = _read(spark, failed.base_path)
    assert {r["id"] for r in snapshot}.isdisjoint({100, 101}), "the failed inserts are invisible"

    opts = ",".join(f"{k}={v}" for k, v in LAZY.items())
    _call(spark, hudi_copy, "run_clean", f"retain_commits => 10, options => '{opts}'")
    make_cleaner(our_copy, {"hoodie.cleaner.commits.retained": 10, **LAZY}, CleanOptions(), now=None).run()

    hudi_rollback, hudi_meta = _rollback(hudi_copy, failed.failed_instant)
    our_rollback, our_meta = _rollback(our_copy, failed.failed_instant)
    assert _essentials(our_meta) == _essentials(hudi_meta)
    assert any(pm.rollback_log_files for pm in our_meta.partition_metadata.values()), "a command block"
    assert any(pm.success_delete_files for pm in our_meta.partition_metadata.values()), "a base file"

    # The same files deleted and the same rollback log files created (names carry no rollback time).
    assert before - _data_files(our_copy) == before - _data_files(hudi_copy)
    added = _data_files(our_copy) - before
    assert added == _data_files(hudi_copy) - before
    assert added and all(parse_log_file_name(posixpath.basename(p)).write_token == "1-0-1" for p in added)  # type: ignore[union-attr]

    # Our command block is the block Hudi wrote, but for the rollback instant in INSTANT_TIME.
    table = HudiTable.open(str(our_copy), check_supported=False)
    for rel in added:
        partition, name = posixpath.split(rel)
        log_file = parse_log_file(partition, name)
        assert log_file is not None
        [ours] = read_log_file(table.storage, log_file)
        [theirs] = read_log_file(HudiTable.open(str(hudi_copy), check_supported=False).storage, log_file)
        assert isinstance(ours, CommandBlock) and isinstance(theirs, CommandBlock)
        assert ours.command is theirs.command is CommandBlockType.ROLLBACK_BLOCK
        assert ours.target_instant_time == theirs.target_instant_time == failed.failed_instant
        assert ours.instant_time == our_rollback and theirs.instant_time == hudi_rollback
        assert set(ours.header) == set(theirs.header) == {
            HeaderKey.INSTANT_TIME, HeaderKey.TARGET_INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE
        }  # fmt: skip

    # The metadata table lists the command-block files (the rollback went through the MDT hook).
    assert (our_copy / ".hoodie" / "metadata").is_dir()
    listed = {
        posixpath.join(p, f.name) if p else f.name
        for p, files in HudiTable.open(str(our_copy)).list_partitions().items()
        for f in files
    }
    assert added <= listed

    # Reads: Hudi's (through storage and through the metadata table) equals the read before X;
    # our merged read and hudi-rs agree with it.
    assert _read(spark, our_copy) == snapshot
    assert _read(spark, our_copy, mdt=True) == snapshot
    assert _read(spark, hudi_copy) == snapshot
    ours_merged = _our_merged_read(our_copy)
    rs = {
        r["_hoodie_record_key"]: r
        for r in ht.normalise_rows(ht.hudi_rs_snapshot(our_copy).to_pylist(), COLUMNS)
    }
    assert ours_merged == rs
    without_key = {
        k: {c: v for c, v in r.items() if c != "_hoodie_record_key"} for k, r in ours_merged.items()
    }
    assert without_key == {str(r["id"]): r for r in snapshot}

    # Hudi's writer keeps committing on our copy: its updates land, the rolled-back ones stay void.
    writer = _MorBuilder(spark, failed.name, our_copy, failed.partitioned, LAZY)
    writer.write("upsert", range(20, 24), tag=3, ts=50)
    after = {r["id"]: r for r in _read(spark, our_copy, mdt=True)}
    assert {i for i in after if i >= 100} == set()
    assert all(after[i]["name"].endswith("b3") for i in range(20, 24))
    assert {after[i]["name"].rsplit("-", 1)[-1] for i in range(12, 18)} == {"b0"}
    assert {after[i]["name"].rsplit("-", 1)[-1] for i in range(6, 12)} == {"b1"}


LISTING = {**LAZY, "hoodie.rollback.using.markers": "false"}


def _clean_with(spark: SparkSession, base: Path, props: dict[str, str]) -> None:
    opts = ",".join(f"{k}={v}" for k, v in props.items())
    _call(spark, base, "run_clean", f"retain_commits => 10, options => '{opts}'")


def rolled_back_without_markers(
    spark: SparkSession, source: Path, failed_instant: str, tmp_path: Path, copies: tuple[str, ...] = ()
) -> tuple[Path, Path, codecs.RollbackMetadata, set[str]]:
    """Copies of `source` with the failed deltacommit's markers removed, rolled back by Hudi's
    `ListingBasedRollbackStrategy` (`hoodie.rollback.using.markers=false`, LAZY `run_clean`) and by
    our LAZY clean: both delete the same files and write the same command-block files and rollback
    metadata essentials. Returns (ours, Hudi's, our rollback metadata, the files deleted);
    `copies` names further untouched copies (markers removed) under `tmp_path`."""
    for name in ("hudi", "ours", *copies):
        shutil.copytree(source, tmp_path / name, symlinks=True)
        markers = tmp_path / name / ".hoodie" / ".temp" / failed_instant
        assert markers.is_dir(), "Hudi's failed write left markers"
        shutil.rmtree(markers)
    hudi, ours = tmp_path / "hudi", tmp_path / "ours"
    before = _data_files(source)
    _clean_with(spark, hudi, LISTING)
    make_cleaner(ours, {"hoodie.cleaner.commits.retained": 10, **LAZY}, CleanOptions(), now=None).run()

    _, hudi_meta = _rollback(hudi, failed_instant)
    _, our_meta = _rollback(ours, failed_instant)
    hudi_essentials, our_essentials = _essentials(hudi_meta), _essentials(our_meta)
    for essentials in (hudi_essentials, our_essentials):
        for partition, (deleted, not_deleted, appended, _) in essentials["partitions"].items():
            # Java keys logFilesFromFailedCommit by the workload profile's empty stat path (the
            # base path); ours names the slice's newest log file: not compared.
            essentials["partitions"][partition] = (deleted, not_deleted, appended)
    assert our_essentials == hudi_essentials
    assert any(pm.rollback_log_files for pm in our_meta.partition_metadata.values()), "a command block"
    deleted = before - _data_files(ours)
    assert deleted == before - _data_files(hudi) != set()
    added = _data_files(ours) - before
    assert added == _data_files(hudi) - before != set()
    return ours, hudi, our_meta, deleted


def test_a_failed_deltacommit_without_markers_is_rolled_back_as_hudis_listing_rollback(
    spark: SparkSession, failed: MorHistory, tmp_path: Path
) -> None:
    """The failed deltacommit's markers are gone (its writer crashed before Hudi's timeline server
    flushed them, or they were deleted). Hudi's `ListingBasedRollbackStrategy`
    (`hoodie.rollback.using.markers=false`) rolls it back from a listing and the inflight workload
    profile; ours, with no markers to read, does the same: the same files deleted, the same command
    block files, the same reads afterwards, and Hudi's writer goes on."""
    before = _data_files(failed.base_path)
    snapshot = _read(spark, failed.base_path)
    ours, hudi, our_meta, _ = rolled_back_without_markers(
        spark, failed.base_path, failed.failed_instant, tmp_path, ("hudi_markers",)
    )
    assert any(pm.success_delete_files for pm in our_meta.partition_metadata.values()), "a base file"

    # Reads afterwards: as before the failed write, for Hudi (storage and MDT listings), us, hudi-rs.
    assert _read(spark, ours) == _read(spark, ours, mdt=True) == _read(spark, hudi) == snapshot
    assert {r["id"] for r in ht.normalise_rows(ht.hudi_rs_snapshot(ours).to_pylist())} == {
        r["id"] for r in snapshot
    }
    assert {
        k: {c: v for c, v in r.items() if c != "_hoodie_record_key"}
        for k, r in _our_merged_read(ours).items()
    } == {str(r["id"]): r for r in snapshot}

    # Hudi's writer goes on over our rollback.
    writer = _MorBuilder(spark, failed.name, ours, failed.partitioned, LAZY)
    writer.write("upsert", range(100, 104), tag=4, ts=60)
    after = {r["id"]: r for r in _read(spark, ours, mdt=True)}
    assert {i for i in after if i >= 100} == set(range(100, 104))
    assert {after[i]["name"].rsplit("-", 1)[-1] for i in range(6, 12)} == {"b1"}

    # For the record: Hudi's default marker-based rollback finds no markers and deletes nothing; the
    # failed write's base file stays behind as an orphan.
    _clean_with(spark, tmp_path / "hudi_markers", LAZY)
    _, marker_meta = _rollback(tmp_path / "hudi_markers", failed.failed_instant)
    assert not any(
        pm.success_delete_files or pm.rollback_log_files for pm in marker_meta.partition_metadata.values()
    )
    assert _data_files(tmp_path / "hudi_markers") == before
