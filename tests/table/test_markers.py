"""Write markers: DIRECT markers written and listed; Java's timeline-server markers read."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.markers import (
    IOType,
    Marker,
    MarkerType,
    create_marker,
    delete_marker_dir,
    list_direct_markers,
    list_markers,
    marker_dir_exists,
    marker_path,
    read_marker_type,
    read_timeline_server_markers,
)
from service.table.paths import PathGuard
from service.table.storage import Storage

T = "20240101000100000"
FILE_A = "2024/01/01/a-0_0-1-2_20240101000100000.parquet"
FILE_B = "americas/b-0_1-1-3_20240101000100000.parquet"


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return Storage.for_base_uri(str(tmp_path))


def test_create_marker_writes_empty_direct_marker_file(storage: Storage, tmp_path: Path) -> None:
    marker = create_marker(storage, T, FILE_A)
    path = tmp_path / ".hoodie/.temp" / T / "2024/01/01/a-0_0-1-2_20240101000100000.parquet.marker.CREATE"
    assert path.is_file() and path.stat().st_size == 0
    assert marker == Marker(FILE_A, IOType.CREATE)
    assert marker_path(T, FILE_A) == f".hoodie/.temp/{T}/{FILE_A}.marker.CREATE"
    assert (marker.partition_path, marker.file_name) == ("2024/01/01", "a-0_0-1-2_20240101000100000.parquet")


def test_create_marker_twice_keeps_one(storage: Storage) -> None:
    create_marker(storage, T, FILE_A)
    create_marker(storage, T, FILE_A)
    assert list_markers(storage, T) == [Marker(FILE_A, IOType.CREATE)]


def test_list_markers_direct_all_io_types_and_nonpartitioned(storage: Storage) -> None:
    create_marker(storage, T, FILE_B, IOType.MERGE)
    create_marker(storage, T, FILE_A)
    create_marker(storage, T, "c-0_0-1-4_20240101000100000.parquet")
    create_marker(storage, T, "americas/.b-0_20240101000000000.log.1_0-1-5", IOType.APPEND)
    assert list_markers(storage, T) == [
        Marker(FILE_A, IOType.CREATE),
        Marker("americas/.b-0_20240101000000000.log.1_0-1-5", IOType.APPEND),
        Marker(FILE_B, IOType.MERGE),
        Marker("c-0_0-1-4_20240101000100000.parquet", IOType.CREATE),
    ]
    assert Marker("c-0_0-1-4_20240101000100000.parquet", IOType.CREATE).partition_path == ""


def test_list_markers_of_other_instant_are_separate(storage: Storage) -> None:
    create_marker(storage, T, FILE_A)
    create_marker(storage, "20240101000200000", FILE_B)
    assert list_markers(storage, T) == [Marker(FILE_A, IOType.CREATE)]


def test_list_markers_without_marker_dir_is_empty(storage: Storage) -> None:
    assert list_markers(storage, T) == []
    assert not marker_dir_exists(storage, T)


def test_delete_marker_dir_removes_all_markers(storage: Storage) -> None:
    create_marker(storage, T, FILE_A)
    create_marker(storage, T, FILE_B)
    assert marker_dir_exists(storage, T)
    delete_marker_dir(storage, T)
    assert not marker_dir_exists(storage, T)
    assert list_markers(storage, T) == []
    delete_marker_dir(storage, T)  # absent is fine


def _timeline_server_markers(tmp_path: Path, with_type_file: bool = True) -> None:
    folder = tmp_path / ".hoodie/.temp" / T
    folder.mkdir(parents=True)
    if with_type_file:
        (folder / "MARKERS.type").write_text("TIMELINE_SERVER_BASED")
    (folder / "MARKERS0").write_text(f"{FILE_A}.marker.CREATE\n{FILE_B}.marker.MERGE\n")
    (folder / "MARKERS1").write_text(f"{FILE_A}.marker.CREATE\n\n")
    (folder / "MARKERS2").write_text("")


def test_list_markers_reads_timeline_server_markers(storage: Storage, tmp_path: Path) -> None:
    _timeline_server_markers(tmp_path)
    assert read_marker_type(storage, T) is MarkerType.TIMELINE_SERVER_BASED
    expected = [Marker(FILE_A, IOType.CREATE), Marker(FILE_B, IOType.MERGE)]
    assert read_timeline_server_markers(storage, T) == expected
    assert list_markers(storage, T) == expected
    assert list_direct_markers(storage, T) == []


def test_list_markers_falls_back_to_markers_files_without_type_file(storage: Storage, tmp_path: Path) -> None:
    _timeline_server_markers(tmp_path, with_type_file=False)
    assert read_marker_type(storage, T) is None
    assert list_markers(storage, T) == [Marker(FILE_A, IOType.CREATE), Marker(FILE_B, IOType.MERGE)]


def test_list_markers_direct_type_file_uses_direct_listing(storage: Storage, tmp_path: Path) -> None:
    create_marker(storage, T, FILE_B)
    (tmp_path / ".hoodie/.temp" / T / "MARKERS.type").write_text("DIRECT")
    assert list_markers(storage, T) == [Marker(FILE_B, IOType.CREATE)]


def test_marker_parse_refuses_malformed_names(storage: Storage, tmp_path: Path) -> None:
    guard = PathGuard(storage.location, "t", partitioned=True, source="MARKERS0")
    with pytest.raises(CorruptTableError, match="not a marker name"):
        Marker.parse(f"{FILE_A}.marker.DELETE", guard, "MARKERS0 line")
    with pytest.raises(CorruptTableError, match="not a marker name"):
        Marker.parse(FILE_A, guard, "MARKERS0 line")
    _timeline_server_markers(tmp_path)
    (tmp_path / ".hoodie/.temp" / T / "MARKERS3").write_text("garbage\n")
    with pytest.raises(CorruptTableError, match="MARKERS3"):
        list_markers(storage, T)


def test_read_marker_type_refuses_unknown_type(storage: Storage, tmp_path: Path) -> None:
    folder = tmp_path / ".hoodie/.temp" / T
    folder.mkdir(parents=True)
    (folder / "MARKERS.type").write_text("SOMETHING")
    with pytest.raises(CorruptTableError, match="unknown marker type 'SOMETHING'"):
        read_marker_type(storage, T)
