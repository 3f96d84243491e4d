"""Our merged read of every latest MOR file slice against Hudi 0.15's own snapshot read (the oracle)
and hudi-rs (a second opinion), on tables real Hudi wrote: Avro and Parquet log blocks, partitioned
and not, deletes, `_hoodie_is_deleted`, equal and lower ordering values, a rolled-back deltacommit."""

from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table.data_files import parse_log_file, parse_log_file_name
from service.table.log_format import avro_columnar, content
from service.table.log_format.blocks import CommandBlock, CorruptBlock, DataBlock, DeleteBlock, LogBlockType
from service.table.log_format.merge import MergeConfig
from service.table.log_format.slice_reader import instant_filter, read_file_slice, read_log_file
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistory, MorHistoryCache

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

COLUMNS = (
    "_hoodie_record_key",
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_partition_path",
    *ht.DATA_COLUMNS,
)
HISTORIES = ["mor_partitioned_avro", "mor_nonpartitioned_parquet"]


def _by_key(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["_hoodie_record_key"]: r for r in ht.normalise_rows(rows, COLUMNS)}


def _our_read(history: MorHistory) -> dict[str, dict[str, dict[str, Any]]]:
    """File id -> record key -> row, merged by our reader from every live file group's latest slice."""
    table = HudiTable.open(str(history.base_path), check_supported=False)
    timeline = table.load_timeline()
    view = table.load_view(timeline)
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for group in view.live_file_groups:
        file_slice = group.latest_slice
        assert file_slice is not None
        merged = read_file_slice(table.storage, file_slice, instant_filter(timeline), config)
        out[group.file_id] = _by_key(merged.to_pylist())
    return out


def _hudi_read(spark: SparkSession, base_path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Hudi's snapshot read, grouped by file id (`_hoodie_file_name` is the base file name for base
    rows and the file id for log rows)."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in ht.read_snapshot(spark, base_path):
        grouped[row["_hoodie_file_name"].split("_")[0]].append(row)
    return {file_id: _by_key(rows) for file_id, rows in grouped.items()}


@pytest.fixture(scope="module", params=HISTORIES)
def mor_history(request: pytest.FixtureRequest, mor_histories: MorHistoryCache) -> MorHistory:
    return mor_histories.get(request.param)


def test_merged_read_of_every_latest_slice_equals_hudi_snapshot(
    spark: SparkSession, mor_history: MorHistory
) -> None:
    ours = _our_read(mor_history)
    hudi = _hudi_read(spark, mor_history.base_path)
    assert {f: g for f, g in ours.items() if g} == hudi


def test_merged_read_cases_resolve_as_hudi_resolves_them(
    spark: SparkSession, mor_history: MorHistory
) -> None:
    """Which write Hudi keeps in each case (asserted on Hudi's read: the rules our merge follows)."""
    hudi = {k: r for group in _hudi_read(spark, mor_history.base_path).values() for k, r in group.items()}
    name = {k: r["name"].rsplit("-", 1)[-1] for k, r in hudi.items()}
    cases = mor_history.cases
    # log vs log, lower ordering value: the earlier log record (tag 2, ts 20) stays over tag 3 (ts 15)
    assert {name[k] for k in cases["log_lower_ordering"]} == {"b2"}
    # log vs log, equal ordering value (apache/hudi#9774's case): the later write wins
    assert {name[k] for k in cases["log_equal_ordering"]} == {"b2"}
    # base (ts 10) vs log (ts 5) under OverwriteWithLatestAvroPayload: the log record wins
    assert {name[k] for k in cases["base_higher_ordering"]} == {"b4"}
    assert not set(cases["deleted"]) & set(hudi)
    assert not set(cases["is_deleted"]) & set(hudi)
    # the failed, rolled-back deltacommit (tag 7) is invisible: the keys keep tag 1
    assert {name[k] for k in cases["failed_write"]} == {"b1"}
    # The write that rolled it back (tag 8) appended its blocks after the rollback command, whose
    # INSTANT_TIME (the rollback instant) is later than the read instant (the last completed
    # deltacommit): `scanInternalV1` stops at that block, so Hudi's snapshot still shows tag 0
    # until a later commit moves the read instant past the rollback.
    assert {name[k] for k in cases["after_rollback"]} == {"b0"}


def test_hudi_written_logs_hold_the_blocks_we_expect(mor_history: MorHistory) -> None:
    """The history exercises what it claims: data blocks of the configured format, delete blocks,
    a rollback command targeting the failed deltacommit; every log name round-trips."""
    table = HudiTable.open(str(mor_history.base_path), check_supported=False)
    kinds: set[Any] = set()
    rollback_targets = set()
    for partition, statuses in table.list_partitions().items():
        for status in statuses:
            parsed = parse_log_file_name(status.name)
            if parsed is None:
                continue
            assert parsed.format() == status.name
            log = parse_log_file(partition, status.name, status.size)
            assert log is not None
            for block in read_log_file(table.storage, log):
                if isinstance(block, DataBlock):
                    kinds.add(block.block_type)
                elif isinstance(block, CommandBlock):
                    rollback_targets.add(block.target_instant_time)
                else:
                    kinds.add(type(block))
    expected = LogBlockType.AVRO_DATA_BLOCK if "avro" in mor_history.name else LogBlockType.PARQUET_DATA_BLOCK
    assert kinds == {expected, DeleteBlock}
    assert rollback_targets == {mor_history.failed_instant}


def test_hudi_written_avro_blocks_decode_as_columns_as_record_by_record(
    mor_history: MorHistory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Avro data block Hudi 0.15 wrote is decoded as columns (`avro_columnar`), to the same
    table the per-record decode gives (the merged reads above equal Hudi's with the columnar one)."""
    table = HudiTable.open(str(mor_history.base_path), check_supported=False)
    logs = [
        log
        for partition, statuses in table.list_partitions().items()
        for status in statuses
        if (log := parse_log_file(partition, status.name, status.size)) is not None
    ]
    taken: list[bool] = []

    def spy(*args: Any) -> Any:
        result = avro_columnar.decode_columnar(*args)
        taken.append(result is not None)
        return result

    def data_blocks() -> list[DataBlock]:
        return [b for log in logs for b in read_log_file(table.storage, log) if isinstance(b, DataBlock)]

    monkeypatch.setattr(content, "decode_columnar", spy)
    columnar = data_blocks()
    monkeypatch.setattr(content, "decode_columnar", lambda *args: None)
    per_record = data_blocks()
    avro = [b for b in columnar if b.block_type is LogBlockType.AVRO_DATA_BLOCK]
    assert bool(avro) == ("avro" in mor_history.name) and taken == [True] * len(avro)
    assert len(columnar) == len(per_record)
    for ours, theirs in zip(columnar, per_record, strict=True):
        assert ours.records.equals(theirs.records), ours.location.describe()


def test_merged_read_agrees_with_hudi_rs(mor_history: MorHistory) -> None:
    """hudi-rs 0.5.0 as a second opinion: it agrees with Java (and us) everywhere except where it
    differs from Java by design. Between log records the later write wins whatever the ordering
    value (Java keeps the greater), and it does not stop its scan at a block (the rollback command)
    newer than the read instant, so it shows the write after the rollback."""
    ours = {k: r for group in _our_read(mor_history).values() for k, r in group.items()}
    rs = _by_key(ht.hudi_rs_snapshot(mor_history.base_path).to_pylist())
    differing = {k for k in set(ours) | set(rs) if ours.get(k) != rs.get(k)}
    cases = mor_history.cases
    assert differing == {*cases["log_lower_ordering"], *cases["after_rollback"]}
    assert {rs[k]["name"].rsplit("-", 1)[-1] for k in cases["log_lower_ordering"]} == {"b3"}
    assert {rs[k]["name"].rsplit("-", 1)[-1] for k in cases["after_rollback"]} == {"b8"}


def test_merged_read_with_default_payload_equals_hudi_snapshot(
    spark: SparkSession, mor_histories: MorHistoryCache
) -> None:
    """`DefaultHoodieRecordPayload`: a base record with a greater ordering value than its log update
    stays; equal values go to the log record; between logs, ties go to the later write."""
    history = mor_histories.get("mor_default_payload")
    raw = HudiTable.open(str(history.base_path), check_supported=False).config.raw
    assert raw["hoodie.compaction.payload.class"].endswith(".DefaultHoodieRecordPayload")
    ours = _our_read(history)
    hudi = _hudi_read(spark, history.base_path)
    assert {f: g for f, g in ours.items() if g} == hudi
    name = {k: r["name"].rsplit("-", 1)[-1] for g in hudi.values() for k, r in g.items()}
    assert {name[k] for k in history.cases["base_higher_ordering"]} == {"b0"}
    assert {name[k] for k in history.cases["base_equal_ordering"]} == {"b2"}
    assert {name[k] for k in history.cases["log_equal_ordering"]} == {"b4"}


def test_merged_read_skips_torn_blocks_as_hudi_does(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path
) -> None:
    """Torn writes in Hudi-written logs: one log file gets half a block in front of its real block
    (a CORRUPT block up to the next magic), another a half block at its end (a CORRUPT block to the
    end of the file). Hudi's reader and ours skip both the same way, and the records stay."""
    history = mor_histories.get("mor_partitioned_avro")
    copy = tmp_path / "torn"
    shutil.copytree(history.base_path, copy, symlinks=True)
    before = _hudi_read(spark, copy)
    logs = sorted(p for p in copy.glob("*/.*.log.*") if not p.name.endswith(".crc"))
    front, tail = logs[0], logs[-1]
    for path, torn in ((front, "front"), (tail, "tail")):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] + data if torn == "front" else data + data[: len(data) // 2])
        # Hadoop's local file system checks `.<name>.crc` when present; the torn file has none.
        (path.parent / f".{path.name}.crc").unlink()
    table = HudiTable.open(str(copy), check_supported=False)
    for path in (front, tail):
        log = parse_log_file(path.parent.name, path.name, path.stat().st_size)
        assert log is not None
        assert any(isinstance(b, CorruptBlock) for b in read_log_file(table.storage, log))
    hudi = _hudi_read(spark, copy)
    assert hudi == before
    ours = _our_read(replace(history, base_path=copy))
    assert {f: g for f, g in ours.items() if g} == hudi
