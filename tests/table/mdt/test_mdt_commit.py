"""The MDT deltacommit protocol on a small MDT (a real Hudi-written `files` log file as its slice):
what is written, retries, the removal of an uncompleted attempt, and the refusals and skips.
Interop with Hudi's readers and writers is proven in test_mdt_write_hudi.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from service.errors import MetadataTableBusyError, UnsupportedTableError
from service.table.instant import Action, Instant, State
from service.table.mdt.commit import clean_records, forget_rolled_back_instant, sync_files_partition
from service.table.mdt.log_blocks import read_log_blocks
from service.table.mdt.records import FileInfo, FilesRecord
from service.table.mdt.timeline import MDT_METAFOLDER
from service.table.properties import TableConfig, load_table_config, store_table_config
from service.table.storage import Storage
from service.table.timeline import Timeline
from tests.support.fixtures import FixtureTable

DATA = Path(__file__).parent / "data"
LOG_FILE = DATA / ".files-0000-0_00000000000000010.log.2_0-18-24"
INIT = "00000000000000010"
T = "20260101000000000"
MDT_PROPERTIES = {
    "hoodie.table.name": "fixture_metadata",
    "hoodie.table.type": "MERGE_ON_READ",
    "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
    "hoodie.table.base.file.format": "HFILE",
    "hoodie.table.recordkey.fields": "key",
    "hoodie.populate.meta.fields": "false",
    "hoodie.table.version": "6",
    "hoodie.timeline.layout.version": "1",
}
RECORDS = [FilesRecord("a", 2, {"f_0-1-1_20250101000000000.parquet": FileInfo(0, True)})]


def _mdt_table(tmp_path: Path, **mdt_updates: str) -> Storage:
    t = FixtureTable(tmp_path / "t")
    storage = t.storage
    config = load_table_config(storage)
    store_table_config(storage, config.with_updates({"hoodie.table.metadata.partitions": "files"}))
    mdt = tmp_path / "t" / ".hoodie" / "metadata"
    (mdt / ".hoodie").mkdir(parents=True)
    (mdt / "files").mkdir()
    props = TableConfig({**MDT_PROPERTIES, **mdt_updates}).to_text()
    (mdt / ".hoodie" / "hoodie.properties").write_text(props, encoding="latin-1")
    for ext in ("deltacommit.requested", "deltacommit.inflight", "deltacommit"):
        (mdt / ".hoodie" / f"{INIT}.{ext}").write_bytes(b"")
    shutil.copy(LOG_FILE, mdt / "files" / LOG_FILE.name)
    return storage


def _files(storage: Storage) -> list[str]:
    return sorted(storage.list_file_names(".hoodie/metadata/files"))


def _mdt_instants(storage: Storage) -> list[str]:
    return sorted(n for n in storage.list_file_names(MDT_METAFOLDER) if n.startswith(T))


def test_deltacommit_writes_requested_inflight_log_and_commit(tmp_path: Path) -> None:
    storage = _mdt_table(tmp_path)
    [append] = sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    assert append.log_file == f".files-0000-0_{INIT}.log.3_0-0-0"
    assert _mdt_instants(storage) == [
        f"{T}.deltacommit",
        f"{T}.deltacommit.inflight",
        f"{T}.deltacommit.requested",
    ]
    commit = json.loads(storage.read_bytes(f"{MDT_METAFOLDER}/{T}.deltacommit"))
    [stat] = commit["partitionToWriteStats"]["files"]
    assert (stat["fileId"], stat["path"], stat["prevCommit"]) == ("files-0000-0", append.path, INIT)
    assert stat["logFiles"] == [LOG_FILE.name, append.log_file] and stat["logVersion"] == 3
    assert commit["operationType"] == "UPSERT_PREPPED"
    assert json.loads(commit["extraMetadata"]["schema"])["name"] == "HoodieMetadataRecord"
    # A retry after a crash before the data commit writes nothing more.
    assert sync_files_partition(storage, Timeline.of([]), T, RECORDS) == []
    assert _files(storage) == [LOG_FILE.name, append.log_file]


def test_a_retry_with_other_records_replaces_the_completed_attempt(tmp_path: Path) -> None:
    storage = _mdt_table(tmp_path)
    sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    other = [FilesRecord("b", 2, {"g_0-1-1_20250101000000000.parquet": FileInfo(0, True)})]
    [second] = sync_files_partition(storage, Timeline.of([]), T, other)
    assert _files(storage) == [LOG_FILE.name, second.log_file]
    [block] = read_log_blocks(storage.read_bytes(f".hoodie/metadata/{second.path}"), "t")
    assert block.instant_time == T


def test_an_uncompleted_attempt_is_removed_before_writing(tmp_path: Path) -> None:
    """Blocks of an MDT T that never completed would become valid when T completes: removed first,
    also when Java's eager rollback already deleted T's instant files."""
    storage = _mdt_table(tmp_path)
    [first] = sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    for ext in ("deltacommit", "deltacommit.inflight", "deltacommit.requested"):
        storage.delete_file(f"{MDT_METAFOLDER}/{T}.{ext}")
    [second] = sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    assert second.version == first.version
    assert _files(storage) == [LOG_FILE.name, second.log_file]


def test_rolling_back_x_removes_its_mdt_deltacommit(tmp_path: Path) -> None:
    storage = _mdt_table(tmp_path)
    sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    forget_rolled_back_instant(storage, Timeline.of([]), T)
    assert _files(storage) == [LOG_FILE.name]
    assert _mdt_instants(storage) == []


def test_rolling_back_x_after_an_mdt_compaction_is_refused(tmp_path: Path) -> None:
    storage = _mdt_table(tmp_path)
    sync_files_partition(storage, Timeline.of([]), T, RECORDS)
    storage.write_bytes(f"{MDT_METAFOLDER}/{T}001.commit", b"")
    with pytest.raises(UnsupportedTableError, match="compacted"):
        forget_rolled_back_instant(storage, Timeline.of([]), T)


def test_clean_records_tombstone_delete_patterns_and_deleted_partitions() -> None:
    from service.table import codecs

    meta = codecs.CleanMetadata(
        start_clean_time=T,
        time_taken_in_millis=1,
        total_files_deleted=1,
        earliest_commit_to_retain=T,
        partition_metadata={
            "": codecs.CleanPartitionMetadata(
                partition_path="",
                policy="KEEP_LATEST_COMMITS",
                delete_path_patterns=("x.parquet",),
                success_delete_files=(),
                failed_delete_files=(),
                is_partition_deleted=True,
            )
        },
    )
    assert clean_records(meta) == [
        FilesRecord(".", 2, {"x.parquet": FileInfo(0, True)}),
        FilesRecord("__all_partitions__", 1, {".": FileInfo(0, True)}),
    ]


@pytest.mark.parametrize(
    ("setup", "error", "message"),
    [
        ("mdt_compaction", MetadataTableBusyError, "compaction 20250101000000000001 is pending"),
        ("data_indexing", MetadataTableBusyError, "indexing 20250101000000000 is pending"),
        ("mdt_layout", UnsupportedTableError, "populate meta fields 'true'"),
        ("partition_stats", UnsupportedTableError, r"partition\(s\) partition_stats "),
    ],
)
def test_refusals_and_skips_write_nothing(
    tmp_path: Path, setup: str, error: type[Exception], message: str
) -> None:
    storage = _mdt_table(
        tmp_path, **({"hoodie.populate.meta.fields": "true"} if setup == "mdt_layout" else {})
    )
    data_timeline = Timeline.of([])
    if setup == "mdt_compaction":
        storage.write_bytes(f"{MDT_METAFOLDER}/20250101000000000001.compaction.requested", b"")
    elif setup == "data_indexing":
        data_timeline = Timeline.of([Instant("20250101000000000", Action.INDEXING, State.REQUESTED)])
    elif setup == "partition_stats":  # Hudi 1.x's; a version-6 table cannot keep it
        config = load_table_config(storage)
        store_table_config(
            storage, config.with_updates({"hoodie.table.metadata.partitions": "files,partition_stats"})
        )
    with pytest.raises(error, match=message):
        sync_files_partition(storage, data_timeline, T, RECORDS)
    assert _files(storage) == [LOG_FILE.name] and _mdt_instants(storage) == []


def test_no_mdt_no_write(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t")
    assert sync_files_partition(t.storage, Timeline.of([]), T, RECORDS) == []
    assert not (tmp_path / "t" / ".hoodie" / "metadata").exists()
