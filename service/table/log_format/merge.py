"""Merged read of one MOR file slice: base file + log blocks of completed instants, combined by record key.

Pure: takes the base file's records, each log file's blocks (the slice's log files in any order;
they are sorted by `HoodieLogFile.LogFileComparator` here) and what the timeline says, and returns
the slice's latest records as Arrow. Reading the files is `service.table.log_format.slice_reader`'s.

Hudi 0.14/0.15 semantics, for the payload classes Hudi's Spark writers use by default:

1. Block walk, as `AbstractHoodieLogRecordReader.scanInternalV1`: a block whose INSTANT_TIME is after
   the latest instant ends the scan; data and delete blocks of instants not completed (neither on
   the completed commits timeline nor before its start) are skipped; a rollback command voids every
   block of its TARGET_INSTANT_TIME read before it, and every corrupt block read before it; corrupt
   blocks left over are ignored. Blocks of one instant from several task attempts (BLOCK_IDENTIFIER) are
   refused rather than reconciled.
2. Log vs log, in block order (`HoodieMergedLogRecordScanner.processNextRecord` with
   `HoodiePreCombineAvroRecordMerger`, i.e. `newer.preCombine(older)`): the older record stays only
   when its ordering value is strictly greater; equal values go to the later record. A delete
   (`processNextDeletedRecord`) is ignored only when its ordering value is not the natural-order
   Integer 0, is of the stored value's Java class, and is smaller than the stored value.
3. Base vs log (`HoodieAvroRecordMerger.merge` → `payload.combineAndGetUpdateValue(base)`):
   `OverwriteWithLatestAvroPayload` (the default) takes the log record whatever the ordering;
   `DefaultHoodieRecordPayload` / `EventTimeAvroPayload` keep the base record when its ordering value
   is strictly greater (`needUpdatingPersistedRecord`).
4. A record whose final value is a delete, or has `_hoodie_is_deleted = true`, is dropped
   (`OverwriteWithLatestAvroPayload.getInsertValue`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from service.errors import UnsupportedMergeError
from service.table.avro_schema import RECORD_KEY_FIELD
from service.table.data_files import LogFile
from service.table.log_format.blocks import (
    CommandBlock,
    CorruptBlock,
    DataBlock,
    DeleteBlock,
    HeaderKey,
    LogBlock,
)

IS_DELETED_FIELD = "_hoodie_is_deleted"  # `HoodieRecord.HOODIE_IS_DELETED_FIELD`
DEFAULT_MERGER_STRATEGY = (
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"  # `HoodieRecordMerger.DEFAULT_MERGER_STRATEGY_UUID`
)
_PAYLOAD_PACKAGE = "org.apache.hudi.common.model."
# `ReflectionUtils.isSameClass(stored, deleteOrderingVal)`: the Java class an Avro value has when read
# without logical-type conversions, and the wrapper whose unwrapped value has that class.
_SAME_CLASS_WRAPPER = {
    "int32": "IntWrapper",
    "int64": "LongWrapper",
    "float": "FloatWrapper",
    "double": "DoubleWrapper",
    "bool": "BooleanWrapper",
}


class PayloadClass(StrEnum):
    """Payload classes whose merge the reader reproduces (`hoodie.compaction.payload.class`)."""

    OVERWRITE_WITH_LATEST = _PAYLOAD_PACKAGE + "OverwriteWithLatestAvroPayload"
    DEFAULT = _PAYLOAD_PACKAGE + "DefaultHoodieRecordPayload"
    EVENT_TIME = _PAYLOAD_PACKAGE + "EventTimeAvroPayload"

    @property
    def base_keeps_greater_ordering(self) -> bool:
        return self is not PayloadClass.OVERWRITE_WITH_LATEST


@dataclass(frozen=True)
class MergeConfig:
    """The table's merge settings, from `hoodie.properties` (`HoodieTableConfig`)."""

    payload_class: PayloadClass
    ordering_field: str | None

    @classmethod
    def from_table_properties(cls, raw: Mapping[str, str], table: str) -> MergeConfig:
        """`hoodie.compaction.payload.class` (default `OverwriteWithLatestAvroPayload`, as
        `HoodieTableConfig.PAYLOAD_CLASS_NAME`), `hoodie.table.precombine.field`; any other payload
        class or record-merger strategy is refused by name."""
        name = raw.get("hoodie.compaction.payload.class") or PayloadClass.OVERWRITE_WITH_LATEST.value
        try:
            payload = PayloadClass(name)
        except ValueError:
            raise UnsupportedMergeError(
                f"table {table!r}: payload class {name!r} (hoodie.compaction.payload.class) is not one "
                f"whose merge the service reproduces ({', '.join(p.value for p in PayloadClass)})"
            ) from None
        strategy = raw.get("hoodie.compaction.record.merger.strategy") or DEFAULT_MERGER_STRATEGY
        if strategy != DEFAULT_MERGER_STRATEGY:
            raise UnsupportedMergeError(
                f"table {table!r}: record merger strategy {strategy!r} "
                "(hoodie.compaction.record.merger.strategy) is not Hudi's default Avro merger"
            )
        return cls(payload, raw.get("hoodie.table.precombine.field") or None)


@dataclass(frozen=True)
class InstantFilter:
    """What the timeline says about block instants (`AbstractHoodieLogRecordReader` inputs).

    `completed`: completed instants of the commits timeline (commit, deltacommit, replacecommit);
    `pending`: its inflight/requested instants; `timeline_start`: the first completed non-savepoint
    instant (older instants were archived, so their blocks count as committed:
    `HoodieDefaultTimeline.isBeforeTimelineStarts`); `latest_instant_time`: the read's instant
    (blocks after it end the scan), by default the last completed instant.
    """

    completed: frozenset[str]
    pending: frozenset[str] = frozenset()
    timeline_start: str | None = None
    latest_instant_time: str | None = None

    @classmethod
    def of(cls, completed: Collection[str], pending: Collection[str] = ()) -> InstantFilter:
        done = frozenset(completed)
        return cls(done, frozenset(pending), min(done, default=None), max(done, default=None))

    def is_committed(self, instant: str) -> bool:
        if instant in self.pending:
            return False
        return instant in self.completed or (
            self.timeline_start is not None and instant < self.timeline_start
        )

    def is_after_read(self, instant: str) -> bool:
        return self.latest_instant_time is not None and instant > self.latest_instant_time


def valid_blocks(
    log_files: Sequence[tuple[LogFile, Sequence[LogBlock]]], instants: InstantFilter
) -> list[DataBlock | DeleteBlock]:
    """The data and delete blocks a Java scan would process, oldest first (step 1 of the module doc)."""
    queued: list[DataBlock | DeleteBlock | CorruptBlock] = []
    for log_file, blocks in sorted(log_files, key=lambda item: item[0].order_key):
        if log_file.is_cdc:
            continue  # `HoodieMergedLogRecordScanner.Builder.withLogFilePaths` drops CDC logs
        for block in blocks:
            if not isinstance(block, CorruptBlock) and instants.is_after_read(block.instant_time):
                return [b for b in queued if not isinstance(b, CorruptBlock)]
            if isinstance(block, CommandBlock):
                target = block.target_instant_time
                queued = [b for b in queued if not isinstance(b, CorruptBlock) and b.instant_time != target]
            elif isinstance(block, CorruptBlock) or instants.is_committed(block.instant_time):
                queued.append(block)
    return _refuse_retried_attempts([b for b in queued if not isinstance(b, CorruptBlock)])


def _refuse_retried_attempts(blocks: list[DataBlock | DeleteBlock]) -> list[DataBlock | DeleteBlock]:
    """Blocks of one instant from several task attempts (BLOCK_IDENTIFIER `<attempt>,<sequence>`)
    are spurious retries that `AbstractHoodieLogRecordReader.reconcileSpuriousBlocksAndGetValidOnes`
    reconciles by an attempt-size rule; the service does not reproduce it and refuses such slices.
    Hudi 0.15's Spark writer writes no BLOCK_IDENTIFIER (checked on the tables of the tests)."""
    attempts: dict[str, set[str]] = {}
    for block in blocks:
        identifier = block.header.get(HeaderKey.BLOCK_IDENTIFIER)
        if identifier is not None:
            attempts.setdefault(block.instant_time, set()).add(identifier.split(",", 1)[0])
    for instant, seen in sorted(attempts.items()):
        if len(seen) > 1:
            where = next(b.location.describe() for b in blocks if b.instant_time == instant)
            raise UnsupportedMergeError(
                f"{where}: instant {instant} has log blocks of {len(seen)} task attempts "
                f"({', '.join(sorted(seen))}); reconciling spurious retried blocks is not supported"
            )
    return blocks


@dataclass
class _Entry:
    """The current log value of one key: a row of a data block, or a delete."""

    ordering: Any
    ordering_class: str | None  # Java-class tag of `ordering` (see `_SAME_CLASS_WRAPPER`)
    source: int | None  # index of the row in the concatenated log rows; None for a delete


def merge_file_slice(
    base: pa.Table | None,
    blocks: Sequence[DataBlock | DeleteBlock],
    config: MergeConfig,
    schema: pa.Schema,
    where: str = "",
) -> pa.Table:
    """Latest records of a slice as `schema` (the table schema with meta fields)."""
    if RECORD_KEY_FIELD not in schema.names:
        raise UnsupportedMergeError(f"{where}: merged reads need the {RECORD_KEY_FIELD} meta field")
    ordering_type = (
        schema.field(config.ordering_field).type if config.ordering_field in schema.names else None
    )
    ordering_class = _java_class(ordering_type)
    log_tables: list[pa.Table] = []
    entries: dict[str, _Entry] = {}
    offset = 0
    for block in blocks:
        if isinstance(block, DeleteBlock):
            for rec in block.records:
                if rec.record_key is None:
                    continue
                stored = entries.get(rec.record_key)
                natural = rec.ordering_value is None or (
                    rec.ordering_type == "IntWrapper" and rec.ordering_value == 0
                )
                if (
                    stored is not None
                    and not natural
                    and stored.ordering_class is not None
                    and _SAME_CLASS_WRAPPER.get(stored.ordering_class) == rec.ordering_type
                    and stored.ordering > rec.ordering_value
                ):
                    continue  # the delete is older than the stored record
                wrapper_class = next(
                    (k for k, v in _SAME_CLASS_WRAPPER.items() if v == rec.ordering_type), None
                )
                entries[rec.record_key] = _Entry(rec.ordering_value, wrapper_class, None)
            continue
        table = _conform(block.records, schema, block.location.describe())
        keys = table.column(RECORD_KEY_FIELD).to_pylist()
        orderings = _ordering_values(
            table, config.ordering_field, ordering_type, keys, block.location.describe()
        )
        for row, key in enumerate(keys):
            if key is None:
                raise UnsupportedMergeError(f"{block.location.describe()}: record {row} has no record key")
            stored = entries.get(key)
            new = _Entry(orderings[row], ordering_class, offset + row)
            if stored is None or stored.source is None or not stored.ordering > new.ordering:
                entries[key] = new
        log_tables.append(table)
        offset += table.num_rows
    logs = pa.concat_tables(log_tables) if log_tables else schema.empty_table()
    is_deleted = _is_deleted_mask(logs)

    base_rows: list[int] = []
    log_rows: list[int] = []
    if base is not None:
        base = _conform(base, schema, f"{where} base file")
        base_keys = base.column(RECORD_KEY_FIELD).to_pylist()
        base_orderings = _ordering_values(
            base, config.ordering_field, ordering_type, base_keys, f"{where} base file"
        )
        for row, key in enumerate(base_keys):
            entry = entries.pop(key, None)
            if entry is None:
                base_rows.append(row)
            elif entry.source is None:
                continue  # a delete payload: `combineAndGetUpdateValue` returns empty, no ordering check
            elif config.payload_class.base_keeps_greater_ordering and base_orderings[row] > entry.ordering:
                base_rows.append(row)  # `DefaultHoodieRecordPayload.needUpdatingPersistedRecord` is false
            elif not is_deleted[entry.source]:
                log_rows.append(entry.source)
    log_rows.extend(e.source for e in entries.values() if e.source is not None and not is_deleted[e.source])
    parts = []
    if base is not None and base_rows:
        parts.append(base.take(pa.array(base_rows, pa.int64())))
    if log_rows:
        parts.append(logs.take(pa.array(log_rows, pa.int64())))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def _java_class(dtype: pa.DataType | None) -> str | None:
    if dtype is None:
        return "int32"  # no ordering field: every record's ordering value is the Integer 0
    if pa.types.is_timestamp(dtype):
        return "int64"  # a timestamp-micros long, read without logical-type conversion
    if pa.types.is_date32(dtype):
        return None  # `DateWrapper` unwraps to a LocalDate, never the stored Integer's class
    return str(dtype) if str(dtype) in _SAME_CLASS_WRAPPER else None


def _ordering_values(
    table: pa.Table, field: str | None, dtype: pa.DataType | None, keys: list[Any], where: str
) -> list[Any]:
    """The ordering value of each row (`HoodieRecord.getOrderingValue`); 0 without an ordering field."""
    if field is None or dtype is None:
        return [0] * table.num_rows
    column = table.column(field)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    elif pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    values = column.to_pylist()
    for row, value in enumerate(values):
        if value is None:
            # `OverwriteWithLatestAvroPayload` requires an ordering value ("Ordering value is null").
            raise UnsupportedMergeError(
                f"{where}: record {keys[row]!r} has a null ordering value in {field!r}"
            )
    return values


def _is_deleted_mask(table: pa.Table) -> list[bool]:
    if IS_DELETED_FIELD not in table.column_names:
        return [False] * table.num_rows
    column = table.column(IS_DELETED_FIELD)
    if not pa.types.is_boolean(column.type):
        return [False] * table.num_rows
    return [bool(v) for v in pc.fill_null(column, False).to_pylist()]


def _conform(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """`table` with `schema`'s columns, in order: missing columns null, others cast (schema evolution
    adds nullable columns; Java reads older blocks with the table schema as Avro reader schema)."""
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            if column.type != field.type:
                try:
                    column = column.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                    raise UnsupportedMergeError(
                        f"{where}: column {field.name!r} of type {column.type} does not read as {field.type}"
                    ) from err
            columns.append(column)
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
