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

import numpy as np
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
    DeleteRecord,
    HeaderKey,
    LogBlock,
)
from service.table.properties import PROPERTIES_FILE, TableConfig

IS_DELETED_FIELD = "_hoodie_is_deleted"  # `HoodieRecord.HOODIE_IS_DELETED_FIELD`
DEFAULT_MERGER_STRATEGY = (
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"  # `HoodieRecordMerger.DEFAULT_MERGER_STRATEGY_UUID`
)
# `HoodieRecordMerger.PAYLOAD_BASED_MERGE_STRATEGY_UUID`: CUSTOM merge through a payload class (1.x).
PAYLOAD_BASED_MERGE_STRATEGY = "00000000-0000-0000-0000-000000000000"
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


class MergeMode(StrEnum):
    """How records of one key merge: 0.x's payload class rules, or Hudi 1.x's `RecordMergeMode`."""

    PAYLOAD = "PAYLOAD"  # Hudi 0.x: `payload_class`'s preCombine / combineAndGetUpdateValue
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"


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
    mode: MergeMode = MergeMode.PAYLOAD

    @classmethod
    def from_table_properties(cls, raw: Mapping[str, str], table: str) -> MergeConfig:
        """The merge a table's `hoodie.properties` names, or UnsupportedMergeError naming what is not
        reproduced.

        Hudi 1.x (`hoodie.record.merge.mode`, `HoodieTableConfig.inferMergingConfigsForWrites`):
        COMMIT_TIME_ORDERING is the latest write winning (`OverwriteWithLatestAvroPayload`'s merge);
        EVENT_TIME_ORDERING compares the ordering field (`DefaultHoodieRecordPayload`'s merge; commit
        time when the table has no ordering field); CUSTOM only with a payload class reproduced here
        and Hudi's payload-based merger. Ordering fields: `hoodie.table.ordering.fields`, falling back
        to `hoodie.table.precombine.field`; several are refused (compared field by field in 1.x).
        Hudi 0.x (no merge mode): `hoodie.compaction.payload.class` (default
        `OverwriteWithLatestAvroPayload`, as `HoodieTableConfig.PAYLOAD_CLASS_NAME`) and the default
        record-merger strategy. Every refusal names the file the settings come from."""
        try:
            return cls._from_table_properties(raw, table)
        except UnsupportedMergeError as exc:
            raise UnsupportedMergeError(f"{exc} (set in {PROPERTIES_FILE})") from None

    @classmethod
    def _from_table_properties(cls, raw: Mapping[str, str], table: str) -> MergeConfig:
        _refuse_merge_properties(raw, table)
        fields = TableConfig(raw).ordering_fields
        if len(fields) > 1:
            raise UnsupportedMergeError(
                f"table {table!r}: ordering fields {', '.join(fields)} (hoodie.table.ordering.fields) are "
                "compared field by field by Hudi 1.x; the service reproduces a single ordering field"
            )
        field = fields[0] if fields else None
        mode = (raw.get("hoodie.record.merge.mode") or "").strip().upper()
        if mode == "COMMIT_TIME_ORDERING" or (mode == "EVENT_TIME_ORDERING" and field is None):
            return cls(PayloadClass.OVERWRITE_WITH_LATEST, field, MergeMode.COMMIT_TIME_ORDERING)
        if mode == "EVENT_TIME_ORDERING":
            return cls(PayloadClass.DEFAULT, field, MergeMode.EVENT_TIME_ORDERING)
        if mode == "CUSTOM":
            name = (
                raw.get("hoodie.compaction.payload.class")
                or raw.get("hoodie.table.legacy.payload.class")
                or ""
            )
            strategy = raw.get("hoodie.record.merge.strategy.id") or ""
            if strategy != PAYLOAD_BASED_MERGE_STRATEGY or name not in set(PayloadClass):
                raise UnsupportedMergeError(
                    f"table {table!r}: hoodie.record.merge.mode=CUSTOM with merger strategy {strategy!r} and "
                    f"payload class {name!r}: a merge the service does not reproduce"
                )
            return cls(PayloadClass(name), field)
        if mode:
            raise UnsupportedMergeError(f"table {table!r}: hoodie.record.merge.mode={mode} is none of Hudi's")
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
        return cls(payload, field)


def _refuse_merge_properties(raw: Mapping[str, str], table: str) -> None:
    """Hudi 1.1 moves the merges of its legacy payloads (`PartialUpdateAvroPayload`, the Debezium and
    DMS payloads, ...) into a table-wide partial-update mode and merge properties such as a delete
    marker field (`HoodieTableConfig.PARTIAL_UPDATE_MODE`, `MERGE_PROPERTIES`); neither is reproduced,
    and merging without them would keep values those tables replace or drop."""
    mode = (raw.get("hoodie.table.partial.update.mode") or "").strip()
    if mode and mode.upper() != "NONE":
        raise UnsupportedMergeError(
            f"table {table!r}: hoodie.table.partial.update.mode={mode} (a legacy payload's partial-update "
            "merge) is not reproduced by the service"
        )
    properties = (raw.get("hoodie.table.merge.properties") or "").strip()
    if properties:
        raise UnsupportedMergeError(
            f"table {table!r}: hoodie.table.merge.properties={properties!r} (a legacy payload's merge "
            "settings) are not reproduced by the service"
        )


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


@dataclass(frozen=True)
class _RowRange:
    """A data block's rows in the concatenated log rows; for a partial update, the block's own
    columns (the others were filled with nulls by `_conform` and are not its values)."""

    start: int
    stop: int
    columns: frozenset[str] | None
    where: str


@dataclass(frozen=True)
class _LogRows:
    """The rows of every data block, conformed to the slice schema and concatenated in block order,
    with the block walk as events: a delete block, or a data block's range of rows."""

    table: pa.Table
    keys: pa.Array
    orderings: pa.Array | None  # None without an ordering field (every ordering value is 0)
    events: tuple[DeleteBlock | _RowRange, ...]
    delete_keys: frozenset[str]

    def first_partial(self) -> _RowRange | None:
        return next((e for e in self.events if isinstance(e, _RowRange) and e.columns is not None), None)


def merge_file_slice(
    base: pa.Table | None,
    blocks: Sequence[DataBlock | DeleteBlock],
    config: MergeConfig,
    schema: pa.Schema,
    where: str = "",
    *,
    fold_every_key: bool = False,
) -> pa.Table:
    """Latest records of a slice as `schema` (the table schema with meta fields).

    A key that only data blocks touch merges by Arrow sort: the log-vs-log rule (the older record
    stays only when its ordering value is strictly greater) leaves the latest record of the greatest
    ordering value. Keys of delete blocks, and every key when the ordering values do not sort as
    Python compares them (NaN, nested types) or the base file repeats a key, take the record-by-record
    fold of `processNextRecord`/`processNextDeletedRecord`; `fold_every_key` forces the fold (the
    reference the sort is tested against)."""
    if RECORD_KEY_FIELD not in schema.names:
        raise UnsupportedMergeError(f"{where}: merged reads need the {RECORD_KEY_FIELD} meta field")
    if config.mode is not MergeMode.PAYLOAD:
        return _merge_in_order(base, blocks, config, schema, where)
    ordering_type = (
        schema.field(config.ordering_field).type if config.ordering_field in schema.names else None
    )
    field = config.ordering_field if ordering_type is not None else None
    log = _collect_log_rows(blocks, schema, field)
    partial = log.first_partial()
    if partial is not None:
        # Hudi 1.x writes partial updates; 0.x's payload merge of whole records would null out every
        # column the block left out.
        raise UnsupportedMergeError(
            f"{partial.where}: a partial update (IS_PARTIAL) on a table merged by payload class "
            f"{config.payload_class.value}, which the service merges only as whole records"
        )
    base_keys: pa.Array | None = None
    base_orderings: pa.Array | None = None
    if base is not None:
        base = _conform(base, schema, f"{where} base file")
        base_keys = _combined(base.column(RECORD_KEY_FIELD))
        base_orderings = _ordering_array(base, field, f"{where} base file")
        fold_every_key = fold_every_key or _has_repeated_keys(base_keys)
    fold_every_key = fold_every_key or not _sorts_as_python(log.orderings)
    is_deleted = _is_deleted_mask(log.table)

    positions = np.arange(log.table.num_rows, dtype=np.int64)
    if fold_every_key:
        folded = positions
        sorted_rows = positions[:0]
    elif log.delete_keys:
        in_deletes = _is_in(log.keys, log.delete_keys)
        folded, sorted_rows = positions[in_deletes], positions[~in_deletes]
    else:
        folded, sorted_rows = positions[:0], positions
    entries = _fold(log, folded, _java_class(ordering_type))
    winners = _latest_by_sort(log, sorted_rows)

    # Output order as `HoodieMergeHandle` writes it: the base file's rows in its order, each kept,
    # replaced by its log record or dropped; then the inserts in log order. Rows index
    # [base rows..., log rows...]; -1 drops.
    n_base = base.num_rows if base is not None else 0
    choice = np.arange(n_base, dtype=np.int64)
    if base is not None and base_keys is not None:
        winners.choose_against_base(choice, base_keys, base_orderings, config.payload_class, is_deleted)
        if entries:
            _choose_against_fold(choice, base_keys, base_orderings, entries, config.payload_class, is_deleted)
    inserts = np.concatenate(
        [
            winners.unmatched(base_keys, is_deleted),
            np.array(
                [e.source for e in entries.values() if e.source is not None and not is_deleted[e.source]],
                np.int64,
            ),
        ]
    )
    rows = np.concatenate([choice[choice >= 0], np.sort(inserts) + n_base])
    if not len(rows):
        return schema.empty_table()
    both = pa.concat_tables([base, log.table]) if base is not None else log.table
    return both.take(pa.array(rows))


_DELETED = -1  # a key's state after a delete


def _merge_in_order(
    base: pa.Table | None,
    blocks: Sequence[DataBlock | DeleteBlock],
    config: MergeConfig,
    schema: pa.Schema,
    where: str,
) -> pa.Table:
    """Hudi 1.x's merge (`BufferedRecordMergerFactory`): records of a key in processing order (the
    base file, then the log blocks in order, each block's records in order), each newer one replacing
    the current value of its key:

    - COMMIT_TIME_ORDERING: always, deletes included;
    - EVENT_TIME_ORDERING: when its ordering value is at least the current one's (ties go to the
      newer). A delete without an ordering value, or with the default Integer 0, is a commit-time
      delete and always replaces; one with a value competes like a record. A row with
      `_hoodie_is_deleted = true` competes with its ordering value and, when it wins, deletes.

    A current value set by a commit-time delete is replaced by any later record. Keys with partial
    updates merge as `_PartialMerge` says. Output as `HoodieMergeHandle` writes it: the base rows in
    order (kept, replaced or dropped), then the inserts in log order."""
    field = config.ordering_field if config.ordering_field in schema.names else None
    event_time = config.mode is MergeMode.EVENT_TIME_ORDERING and field is not None
    log = _collect_log_rows(blocks, schema, field if event_time else None)
    is_deleted = _is_deleted_mask(log.table)
    log_keys = log.keys.to_pylist()
    log_orderings = log.orderings.to_pylist() if log.orderings is not None else None
    partial = _PartialMerge.of(log, log_keys, is_deleted, event_time)
    n_base = 0
    # key -> (ordering or None for a commit-time delete, row: base row i, log row n_base + j, or _DELETED)
    state: dict[str, tuple[Any, int]] = {}
    base_keys: list[str] = []
    base_orderings: list[Any] = []
    if base is not None:
        base = _conform(base, schema, f"{where} base file")
        base_keys = _combined(base.column(RECORD_KEY_FIELD)).to_pylist()
        if len(set(base_keys)) != len(base_keys):
            raise UnsupportedMergeError(f"{where}: the base file repeats a record key")
        orderings = _ordering_array(base, field, f"{where} base file") if event_time else None
        base_orderings = orderings.to_pylist() if orderings is not None else [None] * len(base_keys)
        n_base = len(base_keys)
        state = {k: (o, i) for i, (k, o) in enumerate(zip(base_keys, base_orderings, strict=True))}

    def wins(key: str, ordering: Any) -> bool:
        if not event_time or key not in state:
            return True
        return _newer_wins(state[key][0], ordering, key, where)

    for event in log.events:
        if isinstance(event, DeleteBlock):
            for rec in event.records:
                if rec.record_key is None:
                    continue
                commit_time = _is_commit_time_delete(rec)
                ordering = None if commit_time else rec.ordering_value
                if rec.record_key in partial.keys:
                    partial.delete(rec.record_key)
                elif commit_time or wins(rec.record_key, ordering):
                    state[rec.record_key] = (ordering, _DELETED)
            continue
        for j in range(event.start, event.stop):
            key = log_keys[j]
            ordering = log_orderings[j] if log_orderings is not None else None
            if key in partial.keys:
                partial.update(key, ordering, n_base + j, event, bool(is_deleted[j]), where)
            elif wins(key, ordering):
                state[key] = (ordering, _DELETED if is_deleted[j] else n_base + j)
    # key -> the rows its value is laid from, a whole record first, then partial updates (row, their
    # columns) in order; only keys whose value partial updates changed.
    layers: dict[str, list[tuple[int, frozenset[str] | None]]] = {}
    base_index = {k: i for i, k in enumerate(base_keys)} if partial.keys else {}
    for key in partial.keys:
        i = base_index.get(key)
        stack = partial.final(key, None if i is None else (base_orderings[i], i), where)
        state[key] = (None, _DELETED if stack is None else stack[-1][0])
        if stack is not None and len(stack) > 1:
            layers[key] = stack
    chosen_keys = [k for k in base_keys if state[k][1] >= 0]
    in_base = set(base_keys)
    chosen_keys += sorted(
        (key for key, (_, row) in state.items() if key not in in_base and row >= 0), key=lambda k: state[k][1]
    )
    if not chosen_keys:
        return schema.empty_table()
    chosen = np.array([state[k][1] for k in chosen_keys], np.int64)
    both = pa.concat_tables([base, log.table]) if base is not None else log.table
    laid = [(position, layers[k]) for position, k in enumerate(chosen_keys) if k in layers]
    if not laid:
        return both.take(pa.array(chosen))
    columns = []
    for name in schema.names:
        rows = chosen.copy()
        for position, stack in laid:
            rows[position] = next(row for row, cols in reversed(stack) if cols is None or name in cols)
        columns.append(both.column(name).take(pa.array(rows)))
    return pa.Table.from_arrays(columns, schema=schema)


def _newer_wins(current: Any, ordering: Any, key: str, where: str) -> bool:
    """EVENT_TIME_ORDERING: a newer value replaces the current one when its ordering value is at
    least the current one's; a commit-time delete (None) on either side lets the newer one through."""
    if current is None or ordering is None:
        return True
    try:
        return bool(ordering >= current)
    except TypeError:
        raise UnsupportedMergeError(
            f"{where}: record {key!r}: ordering values {current!r} and {ordering!r} do not compare"
        ) from None


_Layers = list[tuple[int, frozenset[str] | None]]


@dataclass
class _PartialMerge:
    """The keys partial updates (IS_PARTIAL blocks) touch, merged as Hudi 1.x's file group reader does
    once a slice holds partial updates (`PartialUpdateBufferedRecordMerger`,
    `SparkRecordMergingUtils.mergePartialRecords`; both 1.0.2 and 1.1.1, checked against their reads):

    - the log records of a key merge among themselves first, in order: the winner (by ordering value
      under EVENT_TIME_ORDERING, the newer one under COMMIT_TIME_ORDERING) is laid over the loser, its
      columns over the loser's, so a losing partial update still fills the columns a winning partial
      one leaves out; a whole winner replaces everything;
    - then that value meets the base record the same way (ties to the log value): a winning partial
      value is laid over the base record, a losing one leaves the base record whole.

    Refused: a partial update following its record's delete, a partial value with no whole record
    under it (no base record), and on EVENT_TIME_ORDERING any delete that competes by ordering value
    in such a slice (Hudi's partial merger drops those without comparing)."""

    keys: frozenset[str]
    event_time: bool
    # key -> (ordering, layers), or None once deleted
    values: dict[str, tuple[Any, _Layers] | None]

    @classmethod
    def of(
        cls, log: _LogRows, log_keys: list[str], is_deleted: np.ndarray, event_time: bool
    ) -> _PartialMerge:
        keys: set[str] = set()
        for event in log.events:
            if isinstance(event, _RowRange) and event.columns is not None:
                keys.update(log_keys[event.start : event.stop])
        if keys and event_time:
            for event in log.events:
                if isinstance(event, DeleteBlock):
                    competing = [r.record_key for r in event.records if not _is_commit_time_delete(r)]
                else:
                    rows = np.flatnonzero(is_deleted[event.start : event.stop]) + event.start
                    competing = [log_keys[j] for j in rows]
                if competing:
                    where = event.location.describe() if isinstance(event, DeleteBlock) else event.where
                    raise UnsupportedMergeError(
                        f"{where}: delete of record {competing[0]!r} by ordering value in a file slice "
                        "with partial updates (IS_PARTIAL), which Hudi 1.x merges without comparing them"
                    )
        return cls(frozenset(keys), event_time, {})

    def delete(self, key: str) -> None:
        self.values[key] = None

    def update(self, key: str, ordering: Any, row: int, event: _RowRange, deleted: bool, where: str) -> None:
        """Row `row` of `event`; `deleted`: its `_hoodie_is_deleted` (only on COMMIT_TIME_ORDERING, where
        it wins like any newer record)."""
        if deleted:
            self.delete(key)
            return
        layer = (row, event.columns)
        if key not in self.values:
            self.values[key] = (ordering, [layer])
            return
        current = self.values[key]
        if current is None:
            if event.columns is not None:
                raise UnsupportedMergeError(
                    f"{event.where}: partial update of record {key!r} follows its delete; Hudi 1.x would lay "
                    "it over the deleted record's older values"
                )
            self.values[key] = (ordering, [layer])
            return
        current_ordering, stack = current
        if not self.event_time or _newer_wins(current_ordering, ordering, key, where):
            self.values[key] = (ordering, _whole_from([*stack, layer]))
        else:
            self.values[key] = (current_ordering, _whole_from([layer, *stack]))

    def final(self, key: str, base: tuple[Any, int] | None, where: str) -> _Layers | None:
        """The rows `key`'s merged value is laid from, or None for a delete; `base` its base record's
        (ordering, row)."""
        value = self.values.get(key)
        if value is None:
            return None if key in self.values or base is None else [(base[1], None)]
        ordering, stack = value
        if base is not None:
            if self.event_time and not _newer_wins(base[0], ordering, key, where):
                return [(base[1], None)]
            return _whole_from([(base[1], None), *stack])
        if stack[0][1] is not None:
            raise UnsupportedMergeError(
                f"{where}: partial update of record {key!r} with no whole version of it in the file slice"
            )
        return stack


def _whole_from(stack: _Layers) -> _Layers:
    """`stack` from its last whole record up: the layers under a whole record are hidden."""
    whole = [i for i, (_, columns) in enumerate(stack) if columns is None]
    return stack[whole[-1] :] if whole else stack


def _is_commit_time_delete(rec: DeleteRecord) -> bool:
    """A delete without an ordering value or with the default Integer 0 (`DeleteRecord` from SQL
    DELETE): it always wins, on 1.x (`BufferedRecord.isCommitTimeOrderingDelete`) as on 0.x (the
    natural-order 0 of `HoodieMergedLogRecordScanner.processNextDeletedRecord`)."""
    return rec.ordering_value is None or (rec.ordering_type == "IntWrapper" and rec.ordering_value == 0)


def _collect_log_rows(
    blocks: Sequence[DataBlock | DeleteBlock], schema: pa.Schema, field: str | None
) -> _LogRows:
    tables: list[pa.Table] = []
    orderings: list[pa.Array] = []
    events: list[DeleteBlock | _RowRange] = []
    delete_keys: set[str] = set()
    offset = 0
    for block in blocks:
        if isinstance(block, DeleteBlock):
            events.append(block)
            delete_keys.update(r.record_key for r in block.records if r.record_key is not None)
            continue
        where = block.location.describe()
        columns = None
        if block.is_partial:
            columns = frozenset(block.records.column_names) & frozenset(schema.names)
            if field is not None and field not in columns:
                raise UnsupportedMergeError(
                    f"{where}: a partial update (IS_PARTIAL) without the ordering field {field!r}"
                )
        table = _conform(block.records, schema, where)
        keys = table.column(RECORD_KEY_FIELD)
        if keys.null_count:
            row = _first_null(keys)
            raise UnsupportedMergeError(f"{where}: record {row} has no record key")
        ordering = _ordering_array(table, field, where)  # refuses a null value, naming its block
        if ordering is not None:
            orderings.append(ordering)
        tables.append(table)
        events.append(_RowRange(offset, offset + table.num_rows, columns, where))
        offset += table.num_rows
    logs = pa.concat_tables(tables) if tables else schema.empty_table()
    if field is None:
        all_orderings = None
    elif orderings:
        all_orderings = pa.concat_arrays(orderings)
    else:
        all_orderings = _ordering_array(logs, field, "log blocks")
    return _LogRows(
        logs, _combined(logs.column(RECORD_KEY_FIELD)), all_orderings, tuple(events), frozenset(delete_keys)
    )


def _fold(log: _LogRows, rows: np.ndarray, ordering_class: str | None) -> dict[str, _Entry]:
    """Steps 2 and the delete rule, record by record in block order, over the data rows `rows`
    (ascending positions) and every delete record."""
    entries: dict[str, _Entry] = {}
    if not len(rows) and not log.delete_keys:
        return entries
    taken = pa.array(rows)
    keys = log.keys.take(taken).to_pylist()
    orderings = log.orderings.take(taken).to_pylist() if log.orderings is not None else [0] * len(rows)
    for event in log.events:
        if isinstance(event, DeleteBlock):
            for rec in event.records:
                if rec.record_key is None:
                    continue
                stored = entries.get(rec.record_key)
                if (
                    stored is not None
                    and not _is_commit_time_delete(rec)
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
        for i in range(int(np.searchsorted(rows, event.start)), int(np.searchsorted(rows, event.stop))):
            key = keys[i]
            stored = entries.get(key)
            new = _Entry(orderings[i], ordering_class, int(rows[i]))
            if stored is None or stored.source is None or not stored.ordering > new.ordering:
                entries[key] = new
    return entries


@dataclass(frozen=True)
class _SortedWinners:
    """The latest record of each key merged by sort: its key, log row and ordering value."""

    keys: pa.Array
    rows: np.ndarray
    orderings: pa.Array | None

    def unmatched(self, base_keys: pa.Array | None, is_deleted: np.ndarray) -> np.ndarray:
        """Log rows of keys the base file does not hold (inserts), deletes dropped."""
        rows = self.rows
        if base_keys is not None and len(rows):
            rows = rows[~_is_in(self.keys, base_keys)]
        return rows[~is_deleted[rows]]

    def choose_against_base(
        self,
        choice: np.ndarray,
        base_keys: pa.Array,
        base_orderings: pa.Array | None,
        payload: PayloadClass,
        is_deleted: np.ndarray,
    ) -> None:
        """Step 3 for base rows whose key has a winner here: `choice` (base row -> row of
        [base, log], -1 to drop) set to the winner's log row, unless the base record stays."""
        if not len(self.rows):
            return
        match = pc.index_in(base_keys, value_set=self.keys)
        matched = match.is_valid().to_numpy(zero_copy_only=False)
        winner = match.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        replaced = matched
        if payload.base_keeps_greater_ordering and base_orderings is not None and self.orderings is not None:
            # Unmatched rows compare with winner 0, a placeholder the mask discards.
            greater = pc.greater(base_orderings, self.orderings.take(pa.array(winner)))
            replaced = matched & ~greater.to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(replaced)
        log_rows = self.rows[winner[rows]]
        choice[rows] = np.where(is_deleted[log_rows], -1, log_rows + len(choice))


def _latest_by_sort(log: _LogRows, rows: np.ndarray) -> _SortedWinners:
    """Per key among `rows`, the record the log-vs-log fold keeps: the latest of the greatest
    ordering value (`preCombine` keeps the older record only when strictly greater)."""
    if not len(rows):
        empty = log.keys.slice(0, 0)
        return _SortedWinners(empty, rows, log.orderings.slice(0, 0) if log.orderings is not None else None)
    taken = pa.array(rows)
    columns = {"k": log.keys.take(taken), "i": taken}
    sort_keys = [("k", "ascending")]
    if log.orderings is not None:
        columns["o"] = log.orderings.take(taken)
        sort_keys.append(("o", "ascending"))
    sort_keys.append(("i", "ascending"))
    table = pa.table(columns)
    order = pc.sort_indices(table, sort_keys=sort_keys)
    keys = table.column("k").take(order).combine_chunks()
    last = np.ones(len(keys), dtype=bool)
    if len(keys) > 1:
        last[:-1] = pc.not_equal(keys.slice(0, len(keys) - 1), keys.slice(1)).to_numpy(zero_copy_only=False)
    picked = order.to_numpy()[last]
    orderings = None
    if log.orderings is not None:
        orderings = table.column("o").take(pa.array(picked)).combine_chunks()
    return _SortedWinners(keys.filter(pa.array(last)), rows[picked], orderings)


def _choose_against_fold(
    choice: np.ndarray,
    base_keys: pa.Array,
    base_orderings: pa.Array | None,
    entries: dict[str, _Entry],
    payload: PayloadClass,
    is_deleted: np.ndarray,
) -> None:
    """Step 3 for base rows whose key the fold merged: `choice` set for them, and their entries
    popped (what is left are inserts)."""
    rows = np.flatnonzero(_is_in(base_keys, frozenset(entries)))
    keys = base_keys.take(pa.array(rows)).to_pylist()
    orderings = (
        base_orderings.take(pa.array(rows)).to_pylist() if base_orderings is not None else [0] * len(rows)
    )
    for row, key, ordering in zip(rows.tolist(), keys, orderings, strict=True):
        entry = entries.pop(key, None)
        if entry is None:
            continue  # a repeated base key: only its first row meets the log value
        if entry.source is None:
            choice[row] = -1  # a delete payload: `combineAndGetUpdateValue` returns empty, no ordering check
        elif payload.base_keeps_greater_ordering and ordering > entry.ordering:
            continue  # `DefaultHoodieRecordPayload.needUpdatingPersistedRecord` is false
        else:
            choice[row] = -1 if is_deleted[entry.source] else entry.source + len(choice)


def _java_class(dtype: pa.DataType | None) -> str | None:
    if dtype is None:
        return "int32"  # no ordering field: every record's ordering value is the Integer 0
    if pa.types.is_timestamp(dtype):
        return "int64"  # a timestamp-micros long, read without logical-type conversion
    if pa.types.is_date32(dtype):
        return None  # `DateWrapper` unwraps to a LocalDate, never the stored Integer's class
    return str(dtype) if str(dtype) in _SAME_CLASS_WRAPPER else None


def _ordering_array(table: pa.Table, field: str | None, where: str) -> pa.Array | None:
    """The ordering value of each row (`HoodieRecord.getOrderingValue`), timestamps as their long
    and dates as their int; None without an ordering field (every value is 0)."""
    if field is None:
        return None
    column = table.column(field)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.int64())
    elif pa.types.is_date32(column.type):
        column = column.cast(pa.int32())
    if column.null_count:
        key = table.column(RECORD_KEY_FIELD)[_first_null(column)].as_py()
        # `OverwriteWithLatestAvroPayload` requires an ordering value ("Ordering value is null").
        raise UnsupportedMergeError(f"{where}: record {key!r} has a null ordering value in {field!r}")
    return _combined(column)


def _sorts_as_python(orderings: pa.Array | None) -> bool:
    """Whether Arrow's sort orders these values as Python's `>` does: numbers without NaN, strings
    and bytes (UTF-8 byte order is code point order), booleans, decimals."""
    if orderings is None:
        return True
    dtype = orderings.type
    if pa.types.is_floating(dtype):
        return not pc.any(pc.is_nan(orderings)).as_py()
    return (
        pa.types.is_integer(dtype)
        or pa.types.is_boolean(dtype)
        or pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_decimal(dtype)
    )


def _has_repeated_keys(keys: pa.Array) -> bool:
    return bool(pc.count_distinct(keys, mode="all").as_py() != len(keys))


def _is_in(values: pa.Array, value_set: pa.Array | frozenset[str]) -> np.ndarray:
    if isinstance(value_set, frozenset):
        value_set = pa.array(sorted(value_set), values.type)
    return pc.is_in(values, value_set=value_set).fill_null(False).to_numpy(zero_copy_only=False)


def _first_null(column: pa.ChunkedArray | pa.Array) -> int:
    return int(np.flatnonzero(pc.is_null(column).to_numpy(zero_copy_only=False))[0])


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _is_deleted_mask(table: pa.Table) -> np.ndarray:
    """Per log row: `_hoodie_is_deleted` is true (step 4)."""
    if IS_DELETED_FIELD not in table.column_names:
        return np.zeros(table.num_rows, dtype=bool)
    column = table.column(IS_DELETED_FIELD)
    if not pa.types.is_boolean(column.type):
        return np.zeros(table.num_rows, dtype=bool)
    return np.asarray(pc.fill_null(column, False).to_numpy(zero_copy_only=False), dtype=bool)


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
