"""The LSM history writer's pieces (pure); Hudi 1.x reading what it writes is in
tests/interop/test_hudi1_archival_window.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from service.table.lsm_history import LsmDataFile, read_archived_instants, read_latest_manifest
from service.table.lsm_writer import (
    AVRO_SCHEMA,
    ArchivedAction,
    compact_and_clean,
    manifest_json,
    write_archived_actions,
)
from service.table.storage import Storage

HISTORY = ".hoodie/timeline/history"


def test_the_manifest_is_jacksons_pretty_print() -> None:
    """As `HoodieLSMTimelineManifest.toJsonString` prints it (Jackson's default pretty printer)."""
    files = [
        LsmDataFile(
            "20240101000000000_20240101000000001_0.parquet",
            12345,
            "20240101000000000",
            "20240101000000001",
            0,
        ),
        LsmDataFile(
            "20240101000000002_20240101000000003_0.parquet", 678, "20240101000000002", "20240101000000003", 0
        ),
    ]
    assert manifest_json(files) == (
        "{\n"
        '  "files" : [ {\n'
        '    "fileName" : "20240101000000000_20240101000000001_0.parquet",\n'
        '    "fileLen" : 12345\n'
        "  }, {\n"
        '    "fileName" : "20240101000000002_20240101000000003_0.parquet",\n'
        '    "fileLen" : 678\n'
        "  } ]\n"
        "}"
    )
    assert manifest_json([]) == '{\n  "files" : [ ]\n}'


def _action(n: int) -> ArchivedAction:
    return ArchivedAction(f"2026010100{n:02d}00000", f"2026010100{n:02d}00500", "commit", b"{}", None)


def test_runs_append_snapshots_and_a_retried_run_is_not_written_twice(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path))
    first = write_archived_actions(storage, HISTORY, [_action(1), _action(2)])
    assert first == "20260101000100000_20260101000200000_0.parquet"
    second = write_archived_actions(storage, HISTORY, [_action(3)])
    manifest = read_latest_manifest(storage, HISTORY)
    assert manifest.version == 2 and [f.file_name for f in manifest.files] == [first, second]
    assert (tmp_path / HISTORY / "_version_").read_bytes() == b"2"
    assert write_archived_actions(storage, HISTORY, [_action(3)]) == second  # retried: no snapshot 3
    assert read_latest_manifest(storage, HISTORY).version == 2
    found = read_archived_instants(storage, HISTORY, [_action(n).instant_time for n in (1, 2, 3)])
    assert {t: a.completion_time for t, a in found.items()} == {
        _action(n).instant_time: _action(n).completion_time for n in (1, 2, 3)
    }
    footer = pq.ParquetFile(tmp_path / HISTORY / first).schema_arrow.metadata
    assert footer[b"parquet.avro.schema"].decode() == AVRO_SCHEMA


def test_a_run_stopped_after_its_manifest_before_the_version_file_is_redone(tmp_path: Path) -> None:
    """`_version_` still names snapshot 1 and `manifest_2` is there: readers trust snapshot 1, and the
    next run replaces the leftover manifest (creating it anew failed on the existing file)."""
    storage = Storage.for_base_uri(str(tmp_path))
    first = write_archived_actions(storage, HISTORY, [_action(1)])
    second = write_archived_actions(storage, HISTORY, [_action(2)])
    (tmp_path / HISTORY / "_version_").write_bytes(b"1")  # as if stopped before `_version_` moved on
    assert [f.file_name for f in read_latest_manifest(storage, HISTORY).files] == [first]
    assert write_archived_actions(storage, HISTORY, [_action(2)]) == second
    manifest = read_latest_manifest(storage, HISTORY)
    assert manifest.version == 2 and [f.file_name for f in manifest.files] == [first, second]
    assert (tmp_path / HISTORY / "_version_").read_bytes() == b"2"


def test_ten_layer_zero_files_merge_into_layer_one_and_what_they_replaced_goes(tmp_path: Path) -> None:
    """Twelve runs: the ten oldest layer-0 files become one layer-1 file holding their records in
    order; the newest 3 + 1 snapshots stay (they still list the merged files, which stay too), older
    manifests go. Three runs later, with no merge, three snapshots stay and the merged layer-0 files
    go. Every archived instant is found once throughout."""
    storage = Storage.for_base_uri(str(tmp_path))

    def on_disk() -> list[str]:
        return sorted(p.name for p in (tmp_path / HISTORY).iterdir() if not p.name.startswith("."))

    names = [write_archived_actions(storage, HISTORY, [_action(n)]) for n in range(1, 13)]
    merged = f"{_action(1).instant_time}_{_action(10).instant_time}_1.parquet"
    assert compact_and_clean(storage, HISTORY) == [merged]
    manifest = read_latest_manifest(storage, HISTORY)
    assert [f.file_name for f in manifest.files] == [names[10], names[11], merged]
    assert pq.read_table(tmp_path / HISTORY / merged).column("instantTime").to_pylist() == [
        _action(n).instant_time for n in range(1, 11)
    ]
    assert on_disk() == sorted([*names, merged, "_version_", *(f"manifest_{v}" for v in range(10, 14))])
    names += [write_archived_actions(storage, HISTORY, [_action(n)]) for n in range(13, 16)]
    assert compact_and_clean(storage, HISTORY) == []  # five layer-0 files, one layer-1 file
    assert on_disk() == sorted([*names[10:], merged, "_version_", *(f"manifest_{v}" for v in range(14, 17))])
    found = read_archived_instants(storage, HISTORY, [_action(n).instant_time for n in range(1, 16)])
    assert len(found) == 15


def test_the_writers_batch_and_manifest_retention_settings_are_honoured(tmp_path: Path) -> None:
    """`hoodie.timeline.compaction.batch.size=2` merges two files of a layer at a time, one batch per
    layer per run as Java's `compactAndClean` does, the cascade going up;
    `hoodie.timeline.manifest.retained.versions=1` keeps one snapshot besides those compactions add."""
    storage = Storage.for_base_uri(str(tmp_path))

    def merged(a: int, b: int, layer: int) -> str:
        return f"{_action(a).instant_time}_{_action(b).instant_time}_{layer}.parquet"

    def manifests() -> int:
        return sum(1 for p in (tmp_path / HISTORY).iterdir() if p.name.startswith("manifest_"))

    names = [write_archived_actions(storage, HISTORY, [_action(n)]) for n in range(1, 5)]
    assert compact_and_clean(storage, HISTORY, batch=2, retained=1) == [merged(1, 2, 1)]
    assert [f.file_name for f in read_latest_manifest(storage, HISTORY).files] == [
        *names[2:],
        merged(1, 2, 1),
    ]
    assert manifests() == 2
    assert compact_and_clean(storage, HISTORY, batch=2, retained=1) == [merged(3, 4, 1), merged(1, 4, 2)]
    assert [f.file_name for f in read_latest_manifest(storage, HISTORY).files] == [merged(1, 4, 2)]
    assert manifests() == 3
    assert len(read_archived_instants(storage, HISTORY, [_action(n).instant_time for n in range(1, 5)])) == 4
