"""Deletes that fail fail the clean: the plan stays inflight, nothing claims the file, a retry completes it.

Faults are injected in the file system below `Storage` (tests/support/faulty_storage.py), so the
real `Storage.delete_file` and the real `Cleaner` decide what a failed delete means.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from service.cleaning import Cleaner, CleanOptions
from service.errors import DeleteFailedError, InstantOwnedError
from service.table import codecs
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.clean.helpers import fid, make_cleaner
from tests.support import hudi_tables as ht
from tests.support.faulty_storage import Fault, FaultyStorage, each_delete_leaving_the_file
from tests.support.fixtures import FileSpec, FixtureTable, ts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.histories import HudiHistory

COMMITS = "hoodie.cleaner.commits.retained"


def _history(t: FixtureTable) -> set[str]:
    """Partitions a and b, three versions of one group each; returns the four files a clean keeping
    one commit deletes (ts(1) and ts(2) of both groups)."""
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    t.commit(ts(4), [FileSpec("a", fid(3))])
    return {f"{p}/{t.file_name(p, fid(n), ts(i))}" for p, n in (("a", 1), ("b", 2)) for i in (1, 2)}


# A retry runs once the failed attempt's inflight file is past the heartbeat expiry window (2 min
# by default): a young inflight clean without a heartbeat may be another cleaner at work.
LATER_SECONDS = 3600.0


def _cleaner(table: HudiTable, options: CleanOptions | None = None, later: float = 0.0) -> Cleaner:
    return make_cleaner(table, {COMMITS: 1}, options, wall_clock=lambda: time.time() + later)


def _clean_files(base: Path) -> list[str]:
    return sorted(p.name for p in (base / ".hoodie").iterdir() if ".clean" in p.name)


def _metadata_names(storage: Storage, instant_time: str) -> tuple[set[str], set[str]]:
    meta = codecs.decode(codecs.CleanMetadata, storage.read_bytes(f".hoodie/{instant_time}.clean"), "meta")
    parts = meta.partition_metadata.values()
    success = {n for pm in parts for n in pm.success_delete_files}
    failed = {n for pm in parts for n in pm.failed_delete_files}
    return success, failed


# ---------------------------------------------------------------------------------------- Storage


@pytest.mark.parametrize(
    ("fault", "local", "error"),
    [
        (Fault.PERMISSION, True, PermissionError),
        (Fault.IO_ERROR, False, OSError),
        (Fault.REPORTS_GONE, True, DeleteFailedError),  # "already gone" while it is there
        (Fault.REPORTS_GONE, False, DeleteFailedError),
        (Fault.SILENT, False, DeleteFailedError),  # an object store's delete that did not happen
    ],
)
def test_storage_delete_that_leaves_the_file_raises(
    tmp_path: Path, fault: Fault, local: bool, error: type[Exception]
) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "f.parquet").write_bytes(b"x")
    storage = FaultyStorage.failing(tmp_path, "p/f.parquet", fault, local=local)
    with pytest.raises(error) as raised:
        storage.delete_file("p/f.parquet")
    assert (tmp_path / "p" / "f.parquet").exists()
    if error is DeleteFailedError:
        assert storage.qualify("p/f.parquet") in str(raised.value) and "still on storage" in str(raised.value)


@pytest.mark.parametrize("local", [True, False])
def test_storage_delete_of_a_file_really_gone_is_false_and_a_real_delete_true(
    tmp_path: Path, local: bool
) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "f.parquet").write_bytes(b"x")
    storage = FaultyStorage(tmp_path, local=local)
    assert storage.delete_file("p/f.parquet") is True
    assert storage.delete_file("p/f.parquet") is False
    assert not (tmp_path / "p" / "f.parquet").exists()


# ---------------------------------------------------------------------------------------- Cleaner


@each_delete_leaving_the_file
def test_failed_delete_leaves_clean_inflight_and_retry_completes_same_instant(
    tmp_path: Path, fault: Fault, local: bool
) -> None:
    t = FixtureTable(tmp_path)
    planned = _history(t)
    stuck = sorted(planned)[0]
    storage = FaultyStorage.failing(tmp_path, stuck, fault, local=local)
    table = storage.open_table()

    with pytest.raises(DeleteFailedError) as raised:
        _cleaner(table).run()
    [inflight, requested] = _clean_files(tmp_path)
    instant_time = requested.split(".")[0]
    message = str(raised.value)
    assert "'fixture'" in message and f"clean {instant_time}" in message and storage.qualify(stuck) in message
    assert "stays inflight" in message
    assert (inflight, requested) == (f"{instant_time}.clean.inflight", f"{instant_time}.clean.requested")
    assert (tmp_path / stuck).exists()
    assert not any((tmp_path / p).exists() for p in planned - {stuck})  # the others were deleted

    storage.heal()
    with pytest.raises(InstantOwnedError, match="inflight file"):  # at once: it may be another cleaner's
        _cleaner(storage.open_table()).run()
    [resumed] = _cleaner(storage.open_table(), later=LATER_SECONDS).run().cleans
    assert resumed.resumed and resumed.instant_time == instant_time
    assert (resumed.files_deleted, resumed.files_already_gone) == (1, 3)
    assert _clean_files(tmp_path) == [f"{instant_time}.clean{s}" for s in ("", ".inflight", ".requested")]
    assert not any((tmp_path / p).exists() for p in planned)
    # The stuck file is recorded once it really went; the files deleted by the failed attempt were
    # already gone on the retry and are recorded as Java 0.15 records them: failedDeleteFiles.
    success, failed = _metadata_names(storage, instant_time)
    assert success == {stuck.rsplit("/", 1)[1]}
    assert failed == {p.rsplit("/", 1)[1] for p in planned - {stuck}}


def test_every_file_is_attempted_and_every_failure_named(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    planned = sorted(_history(t))
    storage = FaultyStorage(tmp_path)
    storage.fail(planned[0], Fault.PERMISSION)
    storage.fail(planned[-1], Fault.REPORTS_GONE)
    with pytest.raises(DeleteFailedError, match="could not delete 2 file") as raised:
        _cleaner(storage.open_table()).run()
    assert all(storage.qualify(p) in str(raised.value) for p in (planned[0], planned[-1]))
    assert all(storage.attempted(p) for p in planned)
    assert [p for p in planned if (tmp_path / p).exists()] == [planned[0], planned[-1]]
    assert not any(n.endswith(".clean") for n in _clean_files(tmp_path))


# ---------------------------------------------------------------------------------------- real Hudi


@pytest.mark.spark
@pytest.mark.hudi
@pytest.mark.slow
def test_hudi_table_reads_unchanged_while_a_clean_is_stuck_and_after_its_retry(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    h = history_many_commits
    expected = h.expected_rows()
    before = _data_files(h.base_path)
    storage = FaultyStorage(h.base_path)
    for path in before:  # every delete "succeeds" as already gone while the file stays
        storage.fail(path, Fault.REPORTS_GONE)
    with pytest.raises(DeleteFailedError, match="stays inflight"):
        _cleaner(storage.open_table()).run()
    [inflight, requested] = [n for n in _clean_files(h.base_path) if not n.endswith(".clean")][-2:]
    instant_time = requested.split(".")[0]
    assert inflight == f"{instant_time}.clean.inflight" and requested == f"{instant_time}.clean.requested"
    assert not (h.base_path / ".hoodie" / f"{instant_time}.clean").exists()
    assert _data_files(h.base_path) == before
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == expected

    storage.heal()
    [done] = _cleaner(storage.open_table(), later=LATER_SECONDS).run().cleans
    assert done.resumed and done.instant_time == instant_time
    assert done.files_deleted == done.files_planned > 0 and done.files_already_gone == 0
    assert len(before - _data_files(h.base_path)) == done.files_planned
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == expected


def _data_files(base: Path) -> set[str]:
    return {
        p.relative_to(base).as_posix()
        for p in base.rglob("*.parquet")
        if ".hoodie" not in p.relative_to(base).parts and "partition_metadata" not in p.name
    }
