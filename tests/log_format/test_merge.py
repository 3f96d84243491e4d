"""Merge rules of a file slice on crafted blocks (pure logic). Agreement with real Hudi's snapshot read
is proven in test_merged_read_hudi.py; these pin each rule of `service.table.log_format.merge`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from service.errors import UnsupportedMergeError
from service.table.data_files import parse_log_file
from service.table.log_format.avro_arrow import avro_record_to_arrow_schema
from service.table.log_format.merge import (
    InstantFilter,
    MergeConfig,
    PayloadClass,
    merge_file_slice,
    valid_blocks,
)
from service.table.log_format.reader import read_log_blocks
from tests.log_format.encode import SCHEMA, avro_block, delete_block, rollback_block, row

ARROW_SCHEMA = avro_record_to_arrow_schema(SCHEMA)
OVERWRITE = MergeConfig(PayloadClass.OVERWRITE_WITH_LATEST, "ts")
DEFAULT = MergeConfig(PayloadClass.DEFAULT, "ts")


def _log(version: int, *blocks: bytes, token: str = "0-1-0") -> tuple[Any, list[Any]]:
    name = f".f1-0_001.log.{version}_{token}"
    log = parse_log_file("", name)
    assert log is not None
    return log, list(read_log_blocks(b"".join(blocks), name))


def _merge(
    logs: Sequence[tuple[Any, list[Any]]],
    completed: Sequence[str],
    base_rows: Sequence[dict[str, Any]] | None = None,
    config: MergeConfig = OVERWRITE,
    pending: Sequence[str] = (),
) -> dict[str, tuple[str | None, int]]:
    base = pa.Table.from_pylist(list(base_rows), schema=ARROW_SCHEMA) if base_rows is not None else None
    blocks = valid_blocks(list(logs), InstantFilter.of(completed, pending))
    out = merge_file_slice(base, blocks, config, ARROW_SCHEMA, "test slice")
    return {r["_hoodie_record_key"]: (r["name"], r["ts"]) for r in out.to_pylist()}


def test_merge_log_vs_log_keeps_greater_ordering_and_ties_go_to_the_later_record() -> None:
    logs = [
        _log(1, avro_block("002", [row("1", 5, "a"), row("2", 5, "a"), row("3", 5, "a")])),
        _log(2, avro_block("003", [row("1", 4, "b"), row("2", 5, "b"), row("3", 6, "b")])),
    ]
    assert _merge(logs, ["001", "002", "003"]) == {"1": ("a", 5), "2": ("b", 5), "3": ("b", 6)}


def test_merge_base_vs_log_follows_the_payload_class() -> None:
    base = [row("1", 9, "base"), row("2", 5, "base"), row("3", 1, "base")]
    logs = [_log(1, avro_block("002", [row("1", 4, "log"), row("2", 5, "log"), row("3", 6, "log")]))]
    # OverwriteWithLatestAvroPayload.combineAndGetUpdateValue: the log record, whatever its ordering.
    assert _merge(logs, ["001", "002"], base) == {"1": ("log", 4), "2": ("log", 5), "3": ("log", 6)}
    # DefaultHoodieRecordPayload: the base stays when its ordering value is strictly greater.
    assert _merge(logs, ["001", "002"], base, DEFAULT) == {"1": ("base", 9), "2": ("log", 5), "3": ("log", 6)}


def test_merge_orders_log_files_by_version_then_token() -> None:
    older = _log(2, avro_block("002", [row("1", 5, "older")]), token="10-0-1")
    newer = _log(2, avro_block("003", [row("1", 5, "newer")]), token="2-0-1")
    assert _merge([newer, older], ["002", "003"]) == {"1": ("newer", 5)}


def test_merge_delete_block_ordering_values() -> None:
    data = avro_block("002", [row("1", 5), row("2", 5), row("3", 5), row("4", 5)])
    deletes = delete_block(
        "003",
        [
            ("1", ("LongWrapper", 4)),  # older than the stored record: ignored
            ("2", ("LongWrapper", 5)),  # equal: the delete wins
            ("3", ("IntWrapper", 0)),  # natural order: always deletes
            ("4", ("StringWrapper", "1")),  # another Java class than the stored Long: deletes
        ],
    )
    assert _merge([_log(1, data, deletes)], ["002", "003"]) == {"1": (None, 5)}


def test_merge_delete_then_data_brings_the_record_back_and_is_deleted_drops_it() -> None:
    logs = [
        _log(
            1,
            avro_block("002", [row("1", 5), row("2", 5)]),
            delete_block("003", [("1", ("LongWrapper", 9))]),
            avro_block("004", [row("1", 1, "again"), row("2", 6, deleted=True)]),
        )
    ]
    base = [row("2", 1, "base")]
    assert _merge(logs, ["002", "003", "004"], base) == {"1": ("again", 1)}


def test_merge_skips_blocks_of_uncommitted_instants_and_honours_rollbacks() -> None:
    logs = [
        _log(1, avro_block("002", [row("1", 1, "committed")])),
        _log(2, avro_block("003", [row("1", 2, "rolled-back")])),
        _log(3, rollback_block("005", "003")),
        _log(4, avro_block("004", [row("1", 3, "pending")])),
        _log(5, avro_block("006", [row("2", 3, "failed, no timeline file")])),
    ]
    # 003 is "completed" here so only the command can void it; 004 is pending, 006 unknown.
    assert _merge(logs, ["002", "003", "005"], pending=["004"]) == {"1": ("committed", 1)}


def test_merge_rollback_voids_only_blocks_read_before_it() -> None:
    """`scanInternalV1` removes the target's blocks from the queue so far, not later ones."""
    logs = [_log(1, rollback_block("004", "003")), _log(2, avro_block("003", [row("1", 1, "after")]))]
    assert _merge(logs, ["003", "004"]) == {"1": ("after", 1)}


def test_merge_stops_at_blocks_after_the_read_instant() -> None:
    logs = [_log(1, avro_block("002", [row("1", 1, "a")])), _log(2, avro_block("003", [row("1", 2, "b")]))]
    blocks = valid_blocks(logs, InstantFilter(frozenset({"002", "003"}), latest_instant_time="002"))
    assert [b.instant_time for b in blocks] == ["002"]


def test_merge_config_refuses_other_payload_classes_and_mergers_by_name() -> None:
    raw = {"hoodie.table.precombine.field": "ts"}
    assert MergeConfig.from_table_properties(raw, "t") == OVERWRITE
    custom = {**raw, "hoodie.compaction.payload.class": "com.acme.MyPayload"}
    with pytest.raises(UnsupportedMergeError, match=r"'com\.acme\.MyPayload'"):
        MergeConfig.from_table_properties(custom, "t")
    merger = {**raw, "hoodie.compaction.record.merger.strategy": "00000000-0000-0000-0000-000000000000"}
    with pytest.raises(UnsupportedMergeError, match="record merger strategy"):
        MergeConfig.from_table_properties(merger, "t")


def test_merge_refuses_blocks_of_several_task_attempts_of_one_instant() -> None:
    one_attempt = [
        _log(1, avro_block("002", [row("1", 1, "a")], block_identifier="0,0")),
        _log(2, avro_block("002", [row("2", 1, "b")], block_identifier="0,1")),
    ]
    assert _merge(one_attempt, ["002"]) == {"1": ("a", 1), "2": ("b", 1)}
    retried = [
        _log(1, avro_block("002", [row("1", 1, "a")], block_identifier="0,0")),
        _log(2, avro_block("002", [row("1", 1, "a")], block_identifier="1,0")),
    ]
    with pytest.raises(UnsupportedMergeError, match=r"instant 002 has log blocks of 2 task attempts"):
        _merge(retried, ["002"])
