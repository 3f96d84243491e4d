"""Hudi base files written from Arrow data: Hudi's meta columns, footers and size roll-over.

A base file is a Parquet file whose first five columns are the meta columns and whose footer holds
what Hudi's Avro write path (`HoodieAvroWriteSupport`; docs/format.md, "Base files") puts there:
`parquet.avro.schema`, `writer.model.name=avro`, the record-key bloom filter
(`org.apache.hudi.bloomfilter`, plus `hoodie_bloom_filter_type_code` for dynamic filters) and
`hoodie_min_record_key` / `hoodie_max_record_key` in Java `String` order. Rows keep their meta
values (clustering preserves them) except `_hoodie_file_name`, which is set to the name of the file
they land in.

Tables with `hoodie.populate.meta.fields=false` (virtual record keys) keep the five meta columns,
null except `_hoodie_file_name`, and their files carry no bloom filter and no min/max record keys:
that is what Hudi writes for them (`HoodieFileWriterFactory.enableBloomFilter` is false without
meta fields, and `HoodieAvroWriteSupport` writes the min/max keys only beside a bloom filter).

Physical conventions follow parquet-avro where pyarrow can: GZIP by default (at zlib's default
level, as Java), byte/short as plain INT32, timestamps INT64 in micros (or millis) adjusted to
UTC when tz-aware, decimals FIXED_LEN_BYTE_ARRAY, no `ARROW:schema` key. Lists are the standard
3-level `list`/`element` layout: pyarrow cannot write parquet-avro's 2-level `array` layout at all
(`use_compliant_nested_type=False` only renames `element` to `item`), and `list`/`element` is
what Spark's own writer, hence Hudi's row-writer bulk insert, produces, so every Hudi reader
handles it; parquet-avro reads it as well (tested with Hudi's merge-path reader,
`HoodieAvroParquetReader`, given the table schema). `use_compliant_nested_type=False` would only
carry the Arrow element name (`item`, or `array` for data read from parquet-avro files) into the
same 3-level layout, so the compliant names are kept.

`RollingBaseFileWriter` splits a stream of rows into files near a target size. Parquet sizes are
only known once a row group is flushed, so rows are buffered and written as row groups sized
from the compressed-bytes-per-Arrow-byte ratio of the row groups already written, checked
against a compressed sample of the candidate rows, aiming below the space left (footer
included, up to half the target: `RollOverPolicy.max_footer_fraction`); a file is closed once less
than a small margin remains.
"""

from __future__ import annotations

import contextlib
import posixpath
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from service.config.parquet import BloomFilterType, ParquetWriteConfig
from service.errors import HudiTableServiceError
from service.table.avro_schema import (
    FILE_NAME_FIELD,
    HOODIE_META_FIELDS,
    RECORD_KEY_FIELD,
    arrow_to_avro_schema,
    avro_schema_to_json,
    normalize_arrow_schema,
    parse_avro_schema,
    top_level_nullability,
    with_meta_fields,
)
from service.table.bloom import BloomFilterConfig, HoodieBloomFilter, serialized_length
from service.table.java_string_order import java_min_max, merge_min_max
from service.table.parquet_dictionary import dictionary_columns, first_page_rows
from service.table.storage import Storage

AVRO_SCHEMA_KEY = "parquet.avro.schema"
WRITER_MODEL_KEY = "writer.model.name"
BLOOM_FILTER_KEY = "org.apache.hudi.bloomfilter"
BLOOM_FILTER_TYPE_KEY = "hoodie_bloom_filter_type_code"
MIN_RECORD_KEY = "hoodie_min_record_key"
MAX_RECORD_KEY = "hoodie_max_record_key"
BASE_FILE_EXTENSION = ".parquet"

# Compression levels parquet-mr uses by default: zlib's default 6 (Arrow's own default is 9) and
# zstd level 3, so files compress as Java-written ones do.
_DEFAULT_LEVELS = {"gzip": 6, "zstd": 3}
_SIGNIFICANT_ROW_GROUP_FRACTION = 0.01
# Size check of a planned row group: compress this share of its rows, in this many contiguous slices.
_SAMPLE_FRACTION = 0.02
_SAMPLE_MIN_ROWS = 2048
_SAMPLE_SLICES = 64
_MIN_SAMPLE_DICTIONARY_BYTES = 4096
# Footer bytes per column chunk (chunk metadata and statistics): assumed before the first file
# closes, then learned; never below the minimum.
_INITIAL_COLUMN_CHUNK_FOOTER_BYTES = 400
_MIN_COLUMN_CHUNK_FOOTER_BYTES = 64


def base_file_name(file_id: str, write_token: str, instant_time: str) -> str:
    """`<fileId>_<writeToken>_<instantTime>.parquet` (`FSUtils.makeBaseFileName`); no part may contain `_`."""
    for label, value in (("file id", file_id), ("write token", write_token), ("instant time", instant_time)):
        if not value or "_" in value or "/" in value:
            raise HudiTableServiceError(f"{label} {value!r} cannot be part of a base file name")
    return f"{file_id}_{write_token}_{instant_time}{BASE_FILE_EXTENSION}"


@dataclass(frozen=True)
class BaseFileWriteResult:
    """One written base file, as the committer needs it for its write stat."""

    path: str  # base-relative, `<partition>/<file name>`
    partition_path: str
    file_id: str
    file_name: str
    file_size_bytes: int
    record_count: int
    min_record_key: str | None
    max_record_key: str | None
    write_time_ms: int


@dataclass(frozen=True)
class BaseFileSchema:
    """What every file of a write shares: the Arrow schema rows are cast to and the Avro JSON."""

    arrow: pa.Schema
    avro_json: str
    populate_meta_fields: bool = True
    """`hoodie.populate.meta.fields`; False: virtual keys, no record-key footers (module docstring)."""

    @classmethod
    def create(
        cls,
        arrow_schema: pa.Schema,
        avro_schema_json: str | None = None,
        *,
        table_name: str | None = None,
        populate_meta_fields: bool = True,
    ) -> BaseFileSchema:
        """Check the meta columns and pair the (normalised) Arrow schema with the Avro schema.

        `avro_schema_json` is the table's schema as Hudi wrote it (an input file's footer, or
        commit metadata; meta fields are added if missing) and is embedded verbatim. Without it,
        the schema is derived from the Arrow schema as Hudi's Spark writer would (needs `table_name`).
        Top-level nullability is taken from the Avro schema, so Parquet's `required`/`optional`
        match what parquet-avro writes for it.
        """
        names = arrow_schema.names
        if tuple(names[: len(HOODIE_META_FIELDS)]) != HOODIE_META_FIELDS:
            raise HudiTableServiceError(
                f"the first columns must be Hudi's meta columns {list(HOODIE_META_FIELDS)}, got {names[:5]}"
            )
        for name in HOODIE_META_FIELDS:
            dtype = arrow_schema.field(name).type
            if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
                raise HudiTableServiceError(f"meta column {name} must be a string column, got {dtype}")
        normalized = normalize_arrow_schema(arrow_schema)
        if avro_schema_json is None:
            if table_name is None:
                raise HudiTableServiceError("deriving the Avro schema needs the table name")
            avro_schema_json = avro_schema_to_json(arrow_to_avro_schema(normalized, table_name))
        else:
            avro_schema_json = with_meta_fields(avro_schema_json)
        avro = parse_avro_schema(avro_schema_json)
        avro_names = [f["name"] for f in avro["fields"]]
        if avro_names != names:
            raise HudiTableServiceError(
                f"Arrow columns {names} do not match the Avro schema's fields {avro_names}"
            )
        nullable = top_level_nullability(avro)
        fields = [f.with_nullable(nullable[f.name]) for f in normalized]
        return cls(pa.schema(fields), avro_schema_json, populate_meta_fields)

    def conform(self, data: pa.Table | pa.RecordBatch) -> pa.Table:
        """Cast rows to the file schema; refuses nulls in a non-nullable column."""
        table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
        if table.schema.names != self.arrow.names:
            raise HudiTableServiceError(f"columns {table.schema.names} differ from {self.arrow.names}")
        for field in self.arrow:
            if not field.nullable and table.column(field.name).null_count:
                raise HudiTableServiceError(f"column {field.name} has nulls; its Avro type is not nullable")
        if table.schema.remove_metadata() != self.arrow:
            table = table.cast(self.arrow)
        return table.replace_schema_metadata(None)


def parquet_writer_options(
    config: ParquetWriteConfig,
    dictionary_limit_bytes: int | None = None,
    first_rows: pa.Table | None = None,
    dictionary: Sequence[str] | None = None,
) -> dict[str, Any]:
    """`pq.ParquetWriter` keyword arguments for Hudi's Parquet settings.

    With `first_rows` (the rows a file starts with), only the columns parquet-mr would keep
    dictionary-encoded get a dictionary (`parquet_dictionary`); `dictionary` names them when they
    were decided before (size estimates reuse a file's choice instead of deciding again).
    """
    codec = config.pyarrow_compression
    if codec == "lz4":
        # pyarrow writes LZ4_RAW, which parquet-mr before 1.13 (Hudi 0.14 on Spark < 3.5) cannot read.
        raise HudiTableServiceError("hoodie.parquet.compression.codec=lz4 is not supported; use zstd/snappy")
    use_dictionary: bool | list[str] = config.dictionary_enabled
    if config.dictionary_enabled and dictionary is not None:
        use_dictionary = list(dictionary)
    elif config.dictionary_enabled and first_rows is not None:
        use_dictionary = dictionary_columns(first_rows, config.page_size_bytes)
    return {
        "compression": codec,
        "compression_level": _DEFAULT_LEVELS.get(codec),
        "use_dictionary": use_dictionary,
        "data_page_size": config.page_size_bytes,
        # Hudi passes the page size as parquet-mr's dictionary page size too.
        "dictionary_pagesize_limit": dictionary_limit_bytes or config.page_size_bytes,
        "store_schema": False,
        "write_statistics": True,
    }


@dataclass(frozen=True)
class BaseFileTarget:
    """Where and how one write task writes its base files: every file it rolls over to shares these."""

    storage: Storage
    schema: BaseFileSchema
    config: ParquetWriteConfig
    partition_path: str
    instant_time: str
    write_token: str

    def file_name(self, file_id: str) -> str:
        return base_file_name(file_id, self.write_token, self.instant_time)

    def path(self, file_id: str) -> str:
        """Base-relative path of the base file of `file_id`."""
        return posixpath.join(self.partition_path.strip("/"), self.file_name(file_id))


class BaseFileWriter:
    """One base file. Rows arrive as row groups; `close()` writes the footer and returns the result."""

    def __init__(self, target: BaseFileTarget, file_id: str) -> None:
        self._started = time.perf_counter()
        storage, schema, config = target.storage, target.schema, target.config
        self._storage = storage
        self._schema = schema
        self._config = config
        self.partition_path = target.partition_path.strip("/")
        self.file_id = file_id
        self.file_name = target.file_name(file_id)
        self.path = target.path(file_id)
        self._bloom_config = BloomFilterConfig.from_parquet_config(config)
        self._bloom = HoodieBloomFilter(self._bloom_config)
        self._key_range: tuple[str, str] | None = None
        self._records = 0
        self._row_groups = 0
        self._max_key_bytes = 0
        self.footer_bytes = 0  # known after close()
        self._stream: BinaryIO = storage.open_output(self.path)
        # Opened with the first row group: its rows decide the dictionary columns.
        self._writer: pq.ParquetWriter | None = None
        self.dictionary_columns: tuple[str, ...] | None = None  # decided when the writer opens
        self._closed = False

    def _parquet_writer(self, first_rows: pa.Table | None) -> pq.ParquetWriter:
        if self._writer is None:
            options = parquet_writer_options(self._config, first_rows=first_rows)
            used = options["use_dictionary"]
            self.dictionary_columns = tuple(used) if isinstance(used, list) else None
            self._writer = pq.ParquetWriter(self._stream, self._schema.arrow, **options)
        return self._writer

    # ----------------------------------------------------------------- state
    @property
    def record_count(self) -> int:
        return self._records

    @property
    def bytes_written(self) -> int:
        """Bytes of data flushed so far (header and closed row groups; the footer comes at close)."""
        return int(self._stream.tell())

    @property
    def row_groups(self) -> int:
        return self._row_groups

    @property
    def leaf_columns(self) -> int:
        return sum(_leaf_count(f.type) for f in self._schema.arrow)

    def key_value_size_estimate(self, extra_records: int = 0) -> int:
        """Bytes of the footer's key-value part for the rows written plus `extra_records` more."""
        return _key_value_bytes(
            self._schema, self._bloom_config, self._records + extra_records, 2 * self._max_key_bytes
        )

    def footer_size_estimate(
        self, extra_records: int = 0, extra_row_groups: int = 1, column_chunk_bytes: int = 400
    ) -> int:
        """Estimate of the footer once `extra_records` more rows in `extra_row_groups` are written.

        `column_chunk_bytes` is the footer's cost per column chunk (metadata and statistics); the
        default is generous, `RollingBaseFileWriter` learns it from the files it closes.
        """
        chunks = (self._row_groups + extra_row_groups) * self.leaf_columns
        schema_bytes = 64 * self.leaf_columns
        return self.key_value_size_estimate(extra_records) + schema_bytes + chunks * column_chunk_bytes

    # ----------------------------------------------------------------- writing
    def write_row_group(self, rows: pa.Table) -> None:
        """Write `rows` (already conformed) as one row group, `_hoodie_file_name` set to this file."""
        if self._closed:
            raise HudiTableServiceError(f"{self.path} is already closed")
        n = rows.num_rows
        if n == 0:
            return
        index = rows.schema.get_field_index(FILE_NAME_FIELD)
        file_names = pa.repeat(self.file_name, n).cast(rows.schema.field(index).type)
        rows = rows.set_column(index, rows.schema.field(index), file_names)
        if self._schema.populate_meta_fields:
            keys = rows.column(RECORD_KEY_FIELD)
            self._bloom.add_keys(keys)  # refuses null and empty keys
            self._key_range = merge_min_max(self._key_range, java_min_max(keys))
            self._max_key_bytes = max(self._max_key_bytes, int(pc.max(pc.binary_length(keys)).as_py() or 0))
        self._parquet_writer(rows).write_table(rows, row_group_size=n)
        self._records += n
        self._row_groups += 1

    def close(self) -> BaseFileWriteResult:
        """Write the footer and close the file."""
        if self._closed:
            raise HudiTableServiceError(f"{self.path} is already closed")
        self._closed = True
        metadata = {AVRO_SCHEMA_KEY: self._schema.avro_json, WRITER_MODEL_KEY: "avro"}
        if self._schema.populate_meta_fields:
            metadata[BLOOM_FILTER_KEY] = self._bloom.serialize_to_string()
            if self._bloom.type_code is BloomFilterType.DYNAMIC_V0:
                metadata[BLOOM_FILTER_TYPE_KEY] = self._bloom.type_code.value
        if self._key_range is not None:
            metadata[MIN_RECORD_KEY], metadata[MAX_RECORD_KEY] = self._key_range
        data_bytes = self.bytes_written
        try:
            writer = self._parquet_writer(None)
            writer.add_key_value_metadata(metadata)
            writer.close()
            size = int(self._stream.tell())
        finally:
            self._stream.close()
        self.footer_bytes = size - data_bytes
        return BaseFileWriteResult(
            path=self.path,
            partition_path=self.partition_path,
            file_id=self.file_id,
            file_name=self.file_name,
            file_size_bytes=size,
            record_count=self._records,
            min_record_key=self._key_range[0] if self._key_range else None,
            max_record_key=self._key_range[1] if self._key_range else None,
            write_time_ms=round((time.perf_counter() - self._started) * 1000),
        )

    def abort(self) -> None:
        """Close without a footer and delete the partial file."""
        if not self._closed:
            self._closed = True
            try:
                if self._writer is not None:
                    with contextlib.suppress(Exception):  # the file is deleted below in any state
                        self._writer.close()
            finally:
                self._stream.close()
        self._storage.delete_file(self.path)


def _key_value_bytes(schema: BaseFileSchema, bloom: BloomFilterConfig, records: int, key_bytes: int) -> int:
    """A footer's key-value part: Avro schema, bloom filter of `records` keys, min/max keys."""
    if not schema.populate_meta_fields:
        return len(schema.avro_json.encode()) + 256
    return len(schema.avro_json.encode()) + serialized_length(bloom, records) + key_bytes + 256


def _leaf_count(dtype: pa.DataType) -> int:
    if pa.types.is_struct(dtype):
        return sum(_leaf_count(f.type) for f in dtype.fields)
    if pa.types.is_map(dtype):
        return 1 + _leaf_count(dtype.item_type)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _leaf_count(dtype.value_type)
    return 1


# --------------------------------------------------------------------------- size roll-over
@dataclass(frozen=True)
class RollOverPolicy:
    """How row groups are sized against the target file size."""

    first_fill_fraction: float = 0.6
    """While more than half the target is left, aim a row group at this fraction of the space
    left: a file's first, largest row group tolerates a ~75% under-estimate of its size."""
    fill_fraction: float = 0.85
    """Later row groups aim at this fraction of the space left (tolerating ~20% and more)."""
    close_margin_fraction: float = 0.03
    """Close the file once less than this fraction of the target is left."""
    probe_fraction: float = 0.5
    """Before any ratio is known, a row group holds at most this fraction of the target in Arrow bytes."""
    max_footer_fraction: float = 0.5
    """The footer counts against the target up to this fraction of it. A footer larger than the
    target (Hudi's default bloom filter alone is about 430 KB) would otherwise leave no room and
    give every row a file of its own; Hudi's writer counts no footer at all
    (`HoodieBaseParquetWriter.canWrite` compares the data written with the target), so such
    files hold at least this fraction of the target in data, beside a footer that exceeds it."""
    max_buffer_bytes: int = 256 * 1024 * 1024
    """At most this many Arrow bytes are buffered for one row group (bounds memory)."""
    cut_file_row_groups: int = 2
    """A file cut by the caller (`write_file`) that would fit one row group is written as this many
    equal row groups instead, each of at least a page: readers that prune by footer statistics
    (Spark's and parquet-mr's row-group filters) then skip half a file where its min/max allow,
    for a few hundred footer bytes. Larger files are already cut at `hoodie.parquet.block.size`."""


class RollingBaseFileWriter:
    """Writes a stream of rows into base files of about `target_file_size_bytes` each.

    Every file stays within the target up to the error of the size estimate (the policy keeps it
    under ~1.05x), and every file but the last is closed only when nearly full (≥ ~0.95x in
    practice; ≥ 0.8x is the contract). A target that the footer alone would fill more than half of
    (a bloom filter of Hudi's default size is about 430 KB) cannot hold: such files hold half the
    target in data beside their footer (`RollOverPolicy.max_footer_fraction`). File ids are
    `<prefix>-0`, `<prefix>-1`, ... as a Hudi write task rolling over names them. Use as a context
    manager: on an exception every file this writer created is deleted.
    """

    def __init__(
        self,
        storage: Storage,
        schema: BaseFileSchema,
        config: ParquetWriteConfig,
        *,
        partition_path: str,
        instant_time: str,
        target_file_size_bytes: int,
        write_token: str = "0-0-0",
        file_id_prefix: str | None = None,
        policy: RollOverPolicy | None = None,
        on_create: Callable[[str], None] | None = None,
    ) -> None:
        if target_file_size_bytes <= 0:
            raise HudiTableServiceError(f"target file size must be > 0, got {target_file_size_bytes}")
        self._target = BaseFileTarget(storage, schema, config, partition_path, instant_time, write_token)
        self._target_bytes = target_file_size_bytes
        self._file_id_prefix = file_id_prefix or str(uuid.uuid4())
        self._policy = policy or RollOverPolicy()
        # Called with each new file's base-relative path before the file is created (markers).
        self._on_create = on_create
        self._pending: deque[pa.Table] = deque()
        self._pending_rows = 0
        self._current: BaseFileWriter | None = None
        self._results: list[BaseFileWriteResult] = []
        self._created: list[str] = []
        self._ratio_all: float | None = None  # compressed bytes per Arrow byte, all row groups
        self._ratio_last: float | None = None  # ... of the last row group
        self._compressed_total = 0
        self._arrow_total = 0
        self._column_chunk_footer_bytes = _INITIAL_COLUMN_CHUNK_FOOTER_BYTES
        self._data_bytes_closed = 0
        self._ending = False  # in write_file(): the caller sized the rows for one file
        self._checked_rows = 0  # rows of the current cut file already checked to fit it
        # The dictionary columns size estimates assume: decided once on the first rows estimated,
        # then each new file's own choice. Deciding on every sample cost an eighth of a task's time.
        self._estimate_dictionary: tuple[str, ...] | None = None
        self._closed = False

    def __enter__(self) -> RollingBaseFileWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif not self._closed:
            self.close()

    @property
    def results(self) -> list[BaseFileWriteResult]:
        """Files completed so far."""
        return list(self._results)

    # ----------------------------------------------------------------- input
    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        if self._buffer(data):
            self._drain(final=False)

    def _buffer(self, data: pa.Table | pa.RecordBatch) -> int:
        if self._closed:
            raise HudiTableServiceError("writer is closed")
        table = self._target.schema.conform(data)
        if table.num_rows:
            self._pending.append(table)
            self._pending_rows += table.num_rows
        return table.num_rows

    def write_all(self, data: pa.Table | Iterable[pa.RecordBatch | pa.Table]) -> list[BaseFileWriteResult]:
        """Write all rows (in order) and close; returns one result per file. On an exception every
        file this writer created is deleted."""
        batches: Iterable[pa.RecordBatch | pa.Table] = [data] if isinstance(data, pa.Table) else data
        with self:
            for batch in batches:
                self.write(batch)
            return self.close()

    def close(self) -> list[BaseFileWriteResult]:
        """Write what is buffered, close the last file; returns every file written."""
        if not self._closed:
            self._drain(final=True)
            if self._current is not None:
                self._finish_current()
            self._closed = True
        return list(self._results)

    def write_file(self, data: pa.Table | pa.RecordBatch | Iterable[pa.Table | pa.RecordBatch]) -> None:
        """Write `data` (rows, or pieces of them in order) as a file of its own (after whatever is
        buffered) and close it.

        For a caller that balances file sizes itself: rows that do not fit the target still roll
        over into another file, so no file exceeds it. Pieces are written as row groups fill, so
        only about a row group of them is held at once.
        """
        pieces: Iterable[pa.Table | pa.RecordBatch] = (
            [data] if isinstance(data, pa.Table | pa.RecordBatch) else data
        )
        self._ending = True
        try:
            for piece in pieces:
                if self._buffer(piece):
                    self._drain(final=False)
            self._drain(final=True)
        finally:
            self._ending = False
        if self._current is not None:
            self._finish_current()

    @property
    def data_bytes_written(self) -> int:
        """Column-data bytes (file sizes without footers) of the files closed so far."""
        return self._data_bytes_closed

    def compressed_bytes(self, rows: pa.Table | pa.RecordBatch, file_rows: int) -> int:
        """Compressed column-data bytes `rows` would take inside a file of `file_rows` rows.

        The dictionary limit shrinks with `rows / file_rows`, so a column whose dictionary would
        overflow in the whole file falls back to plain encoding in the estimate too.
        """
        table = self._target.schema.conform(rows)
        fraction = min(1.0, table.num_rows / max(1, file_rows))
        return round(self._compressed_ratio(table, fraction) * table.nbytes)

    def estimate_dictionary_from(self, first_rows: pa.Table | pa.RecordBatch) -> None:
        """Size estimates assume the dictionary columns of a file starting with `first_rows` (until
        a file is written: then that file's own choice)."""
        config = self._target.config
        if config.dictionary_enabled:
            # Only the first page's rows decide: conform (possibly a cast) no more than those.
            table = self._target.schema.conform(first_page_rows(first_rows, config.page_size_bytes))
            self._estimate_dictionary = tuple(dictionary_columns(table, config.page_size_bytes))

    def file_overhead_bytes(self, file_rows: int, row_groups: int = 2) -> int:
        """Estimated footer of a file of `file_rows` rows (bloom filter, schema, chunk metadata)."""
        leaves = sum(_leaf_count(f.type) for f in self._target.schema.arrow)
        bloom = BloomFilterConfig.from_parquet_config(self._target.config)
        # The min/max record keys are unknown before the rows are written: room for 256 bytes.
        key_values = _key_value_bytes(self._target.schema, bloom, file_rows, key_bytes=256)
        return key_values + 64 * leaves + row_groups * leaves * self._column_chunk_footer_bytes

    def counted_footer_bytes(self, footer_bytes: int) -> int:
        """What of a footer of `footer_bytes` counts against the target (`max_footer_fraction`)."""
        return min(footer_bytes, int(self._policy.max_footer_fraction * self._target_bytes))

    def abort(self) -> None:
        """Delete every file this writer created (for a retry: a file group must not hold two)."""
        self._closed = True
        if self._current is not None:
            self._current.abort()
            self._current = None
        for path in self._created:
            self._target.storage.delete_file(path)
        self._results.clear()

    # ----------------------------------------------------------------- planning
    def _drain(self, final: bool) -> None:
        while self._pending_rows:
            if self._current is None:
                self._open_next()
            assert self._current is not None
            rows = self._plan_rows(final)
            if rows is None:
                return  # wait for more input
            if rows == 0:
                self._finish_current()
                continue
            self._write_chunk(self._take(rows))

    def _plan_rows(self, final: bool) -> int | None:
        """Rows for the next row group of the current file; 0 closes the file, None waits for input."""
        current = self._current
        assert current is not None
        if self._checked_rows and self._ending:
            # Rows already found to fit this cut file when its first row group was split off.
            groups_left = max(1, self._policy.cut_file_row_groups - current.row_groups)
            checked = min(-(-self._checked_rows // groups_left), self._pending_rows)
            self._checked_rows -= checked
            return checked
        self._checked_rows = 0
        rows = self._plan_rows_by_size(final)
        groups_left = self._policy.cut_file_row_groups - current.row_groups
        if not self._ending or not rows or rows < self._pending_rows or groups_left < 2:
            return rows
        # The rest of a cut file fits one row group: split it evenly into the groups left.
        candidate = self._peek(rows)
        ratio = self._ratio() or self._sample_ratio(candidate)
        if ratio * candidate.nbytes < groups_left * self._target.config.page_size_bytes:
            return rows
        first = -(-rows // groups_left)
        self._checked_rows = rows - first
        return first

    def _plan_rows_by_size(self, final: bool) -> int | None:
        """Rows for the next row group that fit the file's remaining size (see `_plan_rows`)."""
        current = self._current
        assert current is not None
        policy = self._policy
        footer = current.footer_size_estimate(
            self._records_that_may_fit(current), column_chunk_bytes=self._column_chunk_footer_bytes
        )
        remaining = self._target_bytes - current.bytes_written - self.counted_footer_bytes(footer)
        empty = current.record_count == 0
        if not empty and remaining < policy.close_margin_fraction * self._target_bytes:
            return 0
        if self._ending:
            fill = 1.0
        else:
            fill = policy.first_fill_fraction if remaining > self._target_bytes / 2 else policy.fill_fraction
        budget = min(float(self._target.config.block_size_bytes), fill * remaining)
        ratio = self._ratio()
        if ratio is None and self._ending:
            # The caller sized these rows for one file: take them in one row group if they fit.
            ratio = self._sample_ratio(self._peek(self._pending_rows))
        # Without history, assume no compression (Parquet rarely exceeds Arrow's size) and fill
        # at most a probe's worth; the sample below refines it.
        arrow_budget = (
            min(budget, policy.probe_fraction * self._target_bytes) if ratio is None else budget / ratio
        )
        rows, exhausted = self._rows_within(min(arrow_budget, float(policy.max_buffer_bytes)))
        if exhausted and not final:
            return None
        if rows == 0:
            return 1 if empty else 0  # a file always gets at least one row, however large
        # History predicts badly when the data changes (sorted input drifting from compressible to
        # random values): check the candidate rows themselves by compressing a sample of them.
        for _ in range(4):
            candidate = self._peek(rows)
            estimate = self._sample_ratio(candidate) * candidate.nbytes
            if estimate <= budget:
                return rows
            fitting = self._rows_within(candidate.nbytes * budget / estimate * 0.95)[0]
            if fitting == 0:
                # Not even the next row fits: start a new file, unless this one is still empty
                # (a row larger than the target gets a file of its own).
                return 1 if empty else 0
            rows = fitting
        return rows if empty or estimate <= remaining else 0

    def _records_that_may_fit(self, current: BaseFileWriter) -> int:
        """Buffered rows the current file may still take (the bloom filter's size depends on it)."""
        ratio = self._ratio()
        arrow_bytes = sum(t.nbytes for t in self._pending)
        if ratio is None or arrow_bytes == 0:
            return self._pending_rows
        bytes_per_row = ratio * arrow_bytes / self._pending_rows
        room = max(0, self._target_bytes - current.bytes_written)
        return min(self._pending_rows, int(room / bytes_per_row) + 1)

    def _sample_ratio(self, candidate: pa.Table) -> float:
        """Compressed bytes per Arrow byte of `candidate`, from compressing slices of it.

        Contiguous slices spread over the rows are compressed in two interleaved halves and the
        worse ratio is kept: when rows differ (runs of random and of repetitive values), the two
        halves disagree and the estimate leans to the costly side. The dictionary limit shrinks
        with the sample, so a column whose dictionary would overflow in the full row group falls
        back to plain encoding in the sample too. Both err towards over-estimating, the safe side.
        """
        n = candidate.num_rows
        sample_rows = max(_SAMPLE_MIN_ROWS, int(n * _SAMPLE_FRACTION))
        if sample_rows >= n:
            return self._compressed_ratio(candidate, 1.0)
        per_slice = max(1, sample_rows // _SAMPLE_SLICES)
        step = n // _SAMPLE_SLICES
        slices = [candidate.slice(i * step, per_slice) for i in range(_SAMPLE_SLICES)]
        halves = (pa.concat_tables(slices[0::2]), pa.concat_tables(slices[1::2]))
        return max(self._compressed_ratio(half, half.num_rows / n) for half in halves)

    def _compressed_ratio(self, sample: pa.Table, fraction: float) -> float:
        if sample.nbytes == 0:
            return 1.0
        limit = max(_MIN_SAMPLE_DICTIONARY_BYTES, int(self._target.config.page_size_bytes * fraction))
        sink = pa.BufferOutputStream()
        if self._estimate_dictionary is None:
            self.estimate_dictionary_from(sample)
        options = parquet_writer_options(self._target.config, limit, dictionary=self._estimate_dictionary)
        with pq.ParquetWriter(sink, self._target.schema.arrow, **options) as writer:
            start = sink.tell()
            writer.write_table(sample, row_group_size=sample.num_rows)
            compressed = sink.tell() - start
        return float(compressed) / sample.nbytes

    def _ratio(self) -> float | None:
        ratios = [r for r in (self._ratio_all, self._ratio_last) if r is not None]
        return max(ratios) if ratios else None

    def _rows_within(self, arrow_budget: float) -> tuple[int, bool]:
        """How many buffered rows fit `arrow_budget` Arrow bytes; True when all fit (more could)."""
        rows = 0
        spent = 0
        for table in self._pending:
            if spent + table.nbytes <= arrow_budget:
                rows += table.num_rows
                spent += table.nbytes
                continue
            # Rows vary in size: find the longest prefix that fits (a slice's nbytes is exact).
            lo, hi = 0, table.num_rows
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if spent + table.slice(0, mid).nbytes <= arrow_budget:
                    lo = mid
                else:
                    hi = mid - 1
            return rows + lo, False
        return rows, True

    def _peek(self, rows: int) -> pa.Table:
        """The first `rows` buffered rows, without consuming them (zero-copy)."""
        parts: list[pa.Table] = []
        needed = rows
        for table in self._pending:
            if needed == 0:
                break
            part = table if table.num_rows <= needed else table.slice(0, needed)
            parts.append(part)
            needed -= part.num_rows
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _take(self, rows: int) -> pa.Table:
        parts: list[pa.Table] = []
        needed = rows
        while needed:
            head = self._pending[0]
            if head.num_rows <= needed:
                parts.append(self._pending.popleft())
                needed -= head.num_rows
            else:
                parts.append(head.slice(0, needed))
                self._pending[0] = head.slice(needed)
                needed = 0
        self._pending_rows -= rows
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _write_chunk(self, chunk: pa.Table) -> None:
        current = self._current
        assert current is not None
        before = current.bytes_written
        current.write_row_group(chunk)
        if current.row_groups == 1 and current.dictionary_columns is not None:
            self._estimate_dictionary = current.dictionary_columns
        compressed = current.bytes_written - before
        arrow_bytes = chunk.nbytes
        if arrow_bytes:
            self._compressed_total += compressed
            self._arrow_total += arrow_bytes
            self._ratio_all = self._compressed_total / self._arrow_total
            # The latest row group tracks drifting data best, but a tiny one mostly measures
            # per-page overhead and would shrink every later row group.
            if compressed >= _SIGNIFICANT_ROW_GROUP_FRACTION * self._target_bytes or self._ratio_last is None:
                self._ratio_last = compressed / arrow_bytes

    # ----------------------------------------------------------------- files
    def _open_next(self) -> None:
        file_id = f"{self._file_id_prefix}-{len(self._created)}"
        if self._on_create is not None:
            self._on_create(self._target.path(file_id))
        writer = BaseFileWriter(self._target, file_id)
        self._created.append(writer.path)
        self._current = writer

    def _finish_current(self) -> None:
        current = self._current
        assert current is not None
        self._current = None
        self._checked_rows = 0
        if current.record_count == 0:
            current.abort()
            self._created.remove(current.path)
            return
        data_records = current.record_count
        result = current.close()
        self._results.append(result)
        self._data_bytes_closed += result.file_size_bytes - current.footer_bytes
        # Learn the footer's cost per column chunk from the real footer, with a margin for
        # statistics of longer values in later files.
        chunks = current.row_groups * current.leaf_columns
        fixed = current.key_value_size_estimate() + 64 * current.leaf_columns
        if data_records and chunks:
            observed = max(0, current.footer_bytes - fixed) / chunks
            self._column_chunk_footer_bytes = max(_MIN_COLUMN_CHUNK_FOOTER_BYTES, int(1.5 * observed))
