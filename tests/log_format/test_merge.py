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
from service.table.log_format.blocks import HeaderKey
from service.table.log_format.merge import (
    InstantFilter,
    MergeConfig,
    MergeMode,
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
    refusal = r"record merger strategy.*\(set in \.hoodie/hoodie\.properties\)"
    with pytest.raises(UnsupportedMergeError, match=refusal):
        MergeConfig.from_table_properties(merger, "t")


def test_merge_config_reads_hudi_1x_merge_modes() -> None:
    v9 = {"hoodie.table.ordering.fields": "ts", "hoodie.table.precombine.field": "other"}
    event = MergeConfig.from_table_properties({**v9, "hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}, "t")
    assert (event.mode, event.ordering_field) == (MergeMode.EVENT_TIME_ORDERING, "ts")
    commit = MergeConfig.from_table_properties(
        {**v9, "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, "t"
    )
    assert commit.mode is MergeMode.COMMIT_TIME_ORDERING
    # Hudi 1.1: event time without an ordering field falls back to commit time.
    fallback = MergeConfig.from_table_properties({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING"}, "t")
    assert fallback.mode is MergeMode.COMMIT_TIME_ORDERING
    payload = {
        "hoodie.record.merge.mode": "CUSTOM",
        "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        "hoodie.table.legacy.payload.class": PayloadClass.DEFAULT.value,
    }
    assert MergeConfig.from_table_properties(payload, "t").mode is MergeMode.PAYLOAD
    with pytest.raises(UnsupportedMergeError, match="CUSTOM"):
        MergeConfig.from_table_properties({**payload, "hoodie.table.legacy.payload.class": "com.acme.P"}, "t")
    with pytest.raises(UnsupportedMergeError, match="field by field"):
        MergeConfig.from_table_properties({"hoodie.table.ordering.fields": "ts,seq"}, "t")


EVENT = MergeConfig(PayloadClass.DEFAULT, "ts", MergeMode.EVENT_TIME_ORDERING)
COMMIT = MergeConfig(PayloadClass.OVERWRITE_WITH_LATEST, "ts", MergeMode.COMMIT_TIME_ORDERING)
PARTIAL = {HeaderKey.IS_PARTIAL: "true"}


def _partial_block(instant: str, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    """A partial update holding the meta fields and `columns`, as Spark SQL's MERGE INTO writes it."""
    keep = {
        f"_hoodie_{m}" for m in ("commit_time", "commit_seqno", "record_key", "partition_path", "file_name")
    }
    schema = {**SCHEMA, "fields": [f for f in SCHEMA["fields"] if f["name"] in keep | set(columns)]}
    names = [f["name"] for f in schema["fields"]]
    return avro_block(instant, [{n: r[n] for n in names} for r in rows], schema, extra_header=PARTIAL)


def test_partial_updates_lay_their_columns_over_the_older_record() -> None:
    base = [row("1", 10, "a"), row("2", 10, "b")]
    logs = [
        _log(1, _partial_block("002", [row("1", 20), row("2", 5)], ["ts"])),  # name left out
        _log(2, _partial_block("003", [row("1", 15, "c")], ["name", "ts"])),  # older than the log's
    ]
    # Event time: the older partial update still fills the column the newer one leaves out (Hudi 1.x's
    # log records merge among themselves first); one older than the base record is lost.
    assert _merge(logs, ["001", "002", "003"], base, EVENT) == {"1": ("c", 20), "2": ("b", 10)}
    assert _merge(logs, ["001", "002", "003"], base, COMMIT) == {"1": ("c", 15), "2": ("b", 5)}
    whole_after = [*logs, _log(3, avro_block("004", [row("1", 30, "d")]))]
    assert _merge(whole_after, ["001", "002", "003", "004"], base, EVENT)["1"] == ("d", 30)
    commit_delete = [*logs, _log(3, delete_block("004", [("2", None)]))]
    assert _merge(commit_delete, ["001", "002", "003", "004"], base, EVENT) == {"1": ("c", 20)}


def test_partial_updates_are_refused_where_hudi_would_fill_columns_from_nothing() -> None:
    partial = _log(2, _partial_block("003", [row("1", 20)], ["ts"]))
    with pytest.raises(UnsupportedMergeError, match=r"record '1' with no whole version"):
        _merge([partial], ["002", "003"], None, COMMIT)
    deleted = [_log(1, delete_block("002", [("1", None)])), partial]
    with pytest.raises(UnsupportedMergeError, match=r"\.log\.2_0-1-0.*record '1' follows its delete"):
        _merge(deleted, ["001", "002", "003"], [row("1", 10, "a")], COMMIT)
    by_ordering = [_log(1, delete_block("002", [("2", ("LongWrapper", 5))])), partial]
    with pytest.raises(UnsupportedMergeError, match=r"delete of record '2' by ordering value"):
        _merge(by_ordering, ["001", "002", "003"], [row("1", 10, "a"), row("2", 10, "b")], EVENT)
    no_ordering = _log(2, _partial_block("003", [row("1", 20, "x")], ["name"]))
    with pytest.raises(UnsupportedMergeError, match=r"without the ordering field 'ts'"):
        _merge([no_ordering], ["001", "003"], [row("1", 10, "a")], EVENT)
    # Hudi 0.x payload merges take whole records: a partial update would null out the others.
    with pytest.raises(UnsupportedMergeError, match=r"\.log\.2_0-1-0.*partial update \(IS_PARTIAL\)"):
        _merge([partial], ["001", "003"], [row("1", 10, "a")], DEFAULT)
    whole = avro_block("003", [row("1", 20, "b")], extra_header={HeaderKey.IS_PARTIAL: "false"})
    assert _merge([_log(1, whole)], ["001", "003"], [row("1", 10, "a")], DEFAULT) == {"1": ("b", 20)}


def test_merge_config_refuses_legacy_payload_merges_it_does_not_reproduce() -> None:
    v9 = {"hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts"}
    assert MergeConfig.from_table_properties({**v9, "hoodie.table.partial.update.mode": "NONE"}, "t")
    with pytest.raises(UnsupportedMergeError, match=r"'t'.*partial.update.mode=IGNORE_DEFAULTS"):
        MergeConfig.from_table_properties({**v9, "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS"}, "t")
    markers = {**v9, "hoodie.table.merge.properties": "hoodie.payload.delete.field=Op"}
    with pytest.raises(UnsupportedMergeError, match=r"merge.properties='hoodie.payload.delete.field=Op'"):
        MergeConfig.from_table_properties(markers, "t")


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


# --- the sort-based merge against a record-by-record model of the rules -------------------------

_LONG_CLASS = "LongWrapper"  # the Java class of `ts` values (a long)


def _model(
    base_rows: Sequence[dict[str, Any]] | None, blocks: Sequence[Any], payload: PayloadClass
) -> dict[str, tuple[str | None, int]]:
    """Steps 2-4 of `merge`'s module doc, one record at a time (no Arrow)."""
    from service.table.log_format.blocks import DeleteBlock

    log: dict[str, tuple[str, Any, str | None, dict[str, Any] | None]] = {}  # kind, ordering, class, row
    for block in blocks:
        if isinstance(block, DeleteBlock):
            for rec in block.records:
                stored = log.get(rec.record_key)
                natural = rec.ordering_value is None or (
                    rec.ordering_type == "IntWrapper" and rec.ordering_value == 0
                )
                if (
                    stored is not None
                    and not natural
                    and stored[2] == rec.ordering_type
                    and stored[1] > rec.ordering_value
                ):
                    continue
                wrapper = rec.ordering_type if rec.ordering_type in ("IntWrapper", _LONG_CLASS) else None
                log[rec.record_key] = ("delete", rec.ordering_value, wrapper, None)
            continue
        for r in block.records.to_pylist():
            stored = log.get(r["_hoodie_record_key"])
            if stored is None or stored[0] == "delete" or not stored[1] > r["ts"]:
                log[r["_hoodie_record_key"]] = ("data", r["ts"], _LONG_CLASS, r)
    out: dict[str, dict[str, Any]] = {}
    for r in base_rows or ():
        entry = log.pop(r["_hoodie_record_key"], None)
        if entry is None:
            out[r["_hoodie_record_key"]] = r
        elif entry[0] == "delete":
            continue
        elif payload.base_keeps_greater_ordering and r["ts"] > entry[1]:
            out[r["_hoodie_record_key"]] = r
        elif not entry[3]["_hoodie_is_deleted"]:
            out[r["_hoodie_record_key"]] = entry[3]
    for key, entry in log.items():
        if entry[0] == "data" and not entry[3]["_hoodie_is_deleted"]:
            out[key] = entry[3]
    return {k: (r["name"], r["ts"]) for k, r in out.items()}


def _random_slice(rng: Any) -> tuple[list[dict[str, Any]] | None, list[bytes], list[str]]:
    keys = [str(k) for k in range(rng.randint(1, 12))]
    base = (
        [row(k, rng.randint(0, 4), f"base-{k}") for k in rng.sample(keys, rng.randint(0, len(keys)))]
        if rng.random() < 0.7
        else None
    )
    blocks: list[bytes] = []
    instants: list[str] = []
    for n in range(rng.randint(0, 5)):
        instant = f"{n + 2:03d}"
        instants.append(instant)
        if rng.random() < 0.3:
            wrappers = [None, ("IntWrapper", 0), (_LONG_CLASS, rng.randint(0, 4)), ("StringWrapper", "9")]
            blocks.append(
                delete_block(
                    instant, [(k, rng.choice(wrappers)) for k in rng.sample(keys, min(2, len(keys)))]
                )
            )
        else:
            rows = [
                row(rng.choice(keys), rng.randint(0, 4), f"{instant}-{i}", deleted=rng.random() < 0.1)
                for i in range(rng.randint(1, 6))
            ]
            blocks.append(avro_block(instant, rows))
    return base, blocks, ["001", *instants]


@pytest.mark.parametrize("seed", range(300))
def test_merge_by_sort_and_by_fold_both_follow_the_record_by_record_rules(seed: int) -> None:
    """Keys of delete blocks take the fold, the others the Arrow sort: on random slices (repeated
    keys, tied orderings, deletes of every wrapper, `_hoodie_is_deleted`) both paths, and the fold
    alone, give what the rules give one record at a time."""
    import random

    rng = random.Random(seed)
    base_rows, blocks, completed = _random_slice(rng)
    logs = [_log(1, *blocks)] if blocks else []
    valid = valid_blocks(logs, InstantFilter.of(completed))
    base = pa.Table.from_pylist(base_rows, schema=ARROW_SCHEMA) if base_rows is not None else None
    for config in (OVERWRITE, DEFAULT):
        expected = _model(base_rows, valid, config.payload_class)
        for fold in (False, True):
            out = merge_file_slice(base, valid, config, ARROW_SCHEMA, "test slice", fold_every_key=fold)
            got = [(r["_hoodie_record_key"], (r["name"], r["ts"])) for r in out.to_pylist()]
            assert len(got) == len(dict(got)), f"a key twice (seed {seed}, fold {fold}): {got}"
            assert dict(got) == expected, f"seed {seed}, {config.payload_class.name}, fold {fold}"


def test_merge_keeps_the_base_file_order_with_updates_in_place_and_inserts_last() -> None:
    """As `HoodieMergeHandle` writes a compacted file: a clustered base file keeps its layout (and
    its compression) through compaction."""
    base_rows = [row(k, 1, "base") for k in ("5", "1", "4", "2", "3")]
    logs = [
        _log(
            1,
            avro_block("002", [row("7", 2, "new"), row("2", 2, "upd"), row("5", 2, "upd")]),
            delete_block("003", [("4", None)]),
            avro_block("004", [row("6", 2, "new"), row("1", 2, "upd")]),
        )
    ]
    base = pa.Table.from_pylist(base_rows, schema=ARROW_SCHEMA)
    blocks = valid_blocks(logs, InstantFilter.of(["001", "002", "003", "004"]))
    for fold in (False, True):
        out = merge_file_slice(base, blocks, OVERWRITE, ARROW_SCHEMA, "test slice", fold_every_key=fold)
        assert [(r["_hoodie_record_key"], r["name"]) for r in out.to_pylist()] == [
            ("5", "upd"),
            ("1", "upd"),
            ("2", "upd"),
            ("3", "base"),
            ("7", "new"),
            ("6", "new"),
        ]
