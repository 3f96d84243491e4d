"""Pure logic of the MDT `files` reader: HoodieMetadataPayload merging, rollback blocks, block filters."""

from __future__ import annotations

import pytest

from service.errors import CorruptTableError
from service.table.mdt.files_listing import _apply_rollback, _Scan
from service.table.mdt.log_blocks import BlockType, HeaderKey, LogBlock
from service.table.mdt.records import FileInfo, FilesRecord


def _rec(**entries: tuple[int, bool]) -> FilesRecord:
    return FilesRecord("p", 2, {name: FileInfo(size, deleted) for name, (size, deleted) in entries.items()})


def test_newer_tombstone_removes_an_older_live_file_and_is_dropped() -> None:
    merged = _rec(a=(10, False), b=(5, False)).merged_with(_rec(a=(0, True)), "t")
    assert dict(merged.entries) == {"b": FileInfo(5, False)}


def test_tombstone_without_an_older_entry_is_kept_for_the_base_file_merge() -> None:
    logs = _rec(b=(5, False)).merged_with(_rec(a=(0, True)), "t")
    assert logs.entries["a"] == FileInfo(0, True)
    assert logs.live() == {"b": 5}
    assert _rec(a=(10, False)).merged_with(logs, "t").live() == {"b": 5}


def test_tombstone_meeting_a_tombstone_stays_a_tombstone() -> None:
    merged = _rec(a=(0, True)).merged_with(_rec(a=(0, True)), "t")
    assert merged.entries["a"] == FileInfo(0, True)


def test_newer_add_wins_with_the_larger_size_and_revives_a_tombstone() -> None:
    assert _rec(a=(10, False)).merged_with(_rec(a=(7, False)), "t").live() == {"a": 10}
    assert _rec(a=(0, True)).merged_with(_rec(a=(7, False)), "t").live() == {"a": 7}


def test_records_of_different_types_under_one_key_are_corrupt() -> None:
    with pytest.raises(CorruptTableError, match="changes type"):
        _rec(a=(1, False)).merged_with(FilesRecord("p", 1, {}), "t")


def _block(instant: str, kind: BlockType = BlockType.HFILE_DATA_BLOCK) -> LogBlock:
    return LogBlock("f.log", 0, kind, {HeaderKey.INSTANT_TIME: instant})


def test_rollback_block_drops_the_latest_blocks_of_its_target_only() -> None:
    queued = [_block("1"), _block("2"), _block("3", BlockType.CORRUPT_BLOCK), _block("3")]
    _apply_rollback(queued, "3")
    assert [b.instant_time for b in queued] == ["1", "2"]
    _apply_rollback(queued, "1")  # not the latest instant: AbstractHoodieLogRecordReader stops
    assert [b.instant_time for b in queued] == ["1", "2"]


def test_block_filter_follows_the_log_record_reader() -> None:
    scan = _Scan(
        latest_instant="5",
        completed=frozenset({"2", "3", "5"}),
        inflight=frozenset({"4"}),
        timeline_start="2",
        valid=frozenset({"1", "2", "5"}),
    )
    assert scan.readable(_block("6")) is None  # newer than the latest completed MDT instant: stop
    assert scan.readable(_block("4")) is False  # MDT instant inflight
    assert scan.readable(_block("3")) is False  # MDT done, data instant not completed
    assert scan.readable(_block("5")) is True
    assert scan.readable(_block("1")) is True  # before the MDT's active timeline: archived, committed


def test_a_command_block_newer_than_the_latest_mdt_instant_stops_the_scan() -> None:
    scan = _Scan("5", frozenset({"5"}), frozenset(), "5", frozenset({"5"}))
    assert scan.readable(_block("7", BlockType.COMMAND_BLOCK)) is None
    assert scan.readable(_block("5", BlockType.COMMAND_BLOCK)) is True
    assert scan.readable(_block("9", BlockType.CORRUPT_BLOCK)) is True
