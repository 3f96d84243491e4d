"""Schedule-time checks: a clustering plan that execution could not run is never written.

A pending clustering plan blocks Hudi's writers from updating its file groups (with the default
`SparkRejectUpdateStrategy` their upserts fail with `HoodieClusteringUpdateException`) until it
completes or is rolled back, so a plan whose every execution is bound to fail must not be written
at all. Everything execution depends on that is knowable before reading the data is checked here:
the table schema is readable and the input files carry its columns, the sort columns are
top-level columns whose types layout ordering supports, a table without meta fields has a key
generator Hudi supports whose fields are columns, the Parquet codec is one the writer can
produce, and when slices have log files (merge-on-read), the table's payload class and record merger
are ones the merged read reproduces.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from service.config.clustering import SORT_COLUMNS_KEY
from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import INDEX_TYPE
from service.errors import (
    CorruptTableError,
    HudiTableServiceError,
    PlanRefusedError,
    TableServicesRefusedError,
)
from service.table.base_file_writer import parquet_writer_options
from service.table.clustering_plan import PlannedClustering
from service.table.key_generator import VirtualKeyGenerator
from service.table.log_format.merge import MergeConfig
from service.table.table import HudiTable
from service.table.table_schema import TableSchema, table_schema_fields
from strategies.layout.rank import is_supported

# Writers' indexes a clustering must update, which this service cannot (Hudi's own clustering calls
# `HoodieIndex.updateLocation` with its write statuses, or keeps bucket file ids): left stale, the
# writer would append updates to replaced file groups (lost) or find no file group for a bucket.
INDEXES_CLUSTERING_MUST_UPDATE: dict[str, str] = {
    "HBASE": "record locations are kept in HBase (SparkHoodieHBaseIndex)",
    "INMEMORY": "record locations are kept in the writer's memory (HoodieInMemoryHashIndex)",
    "BUCKET": "file ids encode the bucket a record hashes to (HoodieBucketIndex)",
}
INDEX_FIX = (
    "the writers' hoodie.index.type (and the table entry's): an index that reads the table "
    "(SIMPLE, BLOOM, GLOBAL_SIMPLE, GLOBAL_BLOOM, RECORD_INDEX)"
)


def writers_index(config: HoodieConfig) -> str | None:
    """The writers' `hoodie.index.type` as configured, upper-cased; None when unset (the engine's)."""
    return config.raw.get(INDEX_TYPE, "").strip().upper() or None


def check_index_kept_current(table: HudiTable, config: HoodieConfig) -> None:
    """Refuse clustering (a state with its fix, not a failure: nothing we can retry) when the writers'
    index (`hoodie.index.type`, as the writers are configured) would go stale: executing any plan,
    Hudi's pending ones too, moves records to file groups that index does not know."""
    index = writers_index(config)
    if index in INDEXES_CLUSTERING_MUST_UPDATE:
        raise TableServicesRefusedError(
            f"table {table.name!r} at {table.base_uri}: {INDEX_TYPE}={index}: "
            f"{INDEXES_CLUSTERING_MUST_UPDATE[index]}; a clustering must update that index, which this "
            "service cannot",
            reason="index_type",
            fix=INDEX_FIX,
        )


def check_plan_executable(
    table: HudiTable, config: HoodieConfig, plan: PlannedClustering, table_schema: TableSchema | None
) -> None:
    """Raise PlanRefusedError (naming table, key and value) if executing `plan` is bound to fail;
    TableServicesRefusedError if it would leave the writers' index stale (`check_index_kept_current`)."""
    where = f"table {table.name!r} at {table.base_uri}"
    check_index_kept_current(table, config)
    if any(s.log_file_paths for g in plan.groups for s in g.slices):
        try:
            MergeConfig.from_table_properties(table.config.raw, table.name)
        except HudiTableServiceError as exc:
            raise PlanRefusedError(f"{where}: its slices have log files to read merged: {exc}") from exc
    try:
        parquet_writer_options(config.parquet)
    except HudiTableServiceError as exc:
        raise PlanRefusedError(f"{where}: {exc}") from exc
    newest = _newest_input_columns(table, plan)
    if newest is None:
        return  # log-only slices: their columns are their data blocks' (the table schema)
    path, columns = newest
    if table_schema is not None:
        # Output files carry the table schema's columns, filled from the inputs' (§ BaseFileSchema):
        # inputs lacking some of them cannot be rewritten under that schema.
        missing = [name for name in _schema_fields(table, table_schema) if name not in columns]
        if missing:
            raise PlanRefusedError(
                f"{where}: input file {path} lacks column(s) {missing} of the table schema (commit "
                "metadata `schema`); its rows cannot be rewritten under that schema"
            )
    sort_value = plan.strategy_params.get(SORT_COLUMNS_KEY)
    for column in (c.strip() for c in (sort_value or "").split(",") if c.strip()):
        if column not in columns:
            raise PlanRefusedError(
                f"{where}: {SORT_COLUMNS_KEY}={sort_value}: {column!r} is not a top-level column of the "
                f"table (columns of {path}: {', '.join(columns)})"
            )
        if not is_supported(columns[column]):
            raise PlanRefusedError(
                f"{where}: {SORT_COLUMNS_KEY}={sort_value}: column {column!r} has type {columns[column]}, "
                "which layout optimization cannot order (supported: integers, floats, decimals, "
                "booleans, strings, binaries, dates, times, timestamps)"
            )
    if not table.config.populate_meta_fields:
        try:
            keygen = VirtualKeyGenerator.for_table(table.config, table.base_uri)
        except HudiTableServiceError as exc:
            raise PlanRefusedError(str(exc)) from exc
        missing = keygen.missing_fields(list(columns))
        if missing:
            raise PlanRefusedError(
                f"{where}: hoodie.table.recordkey.fields={','.join(keygen.record_key_fields)}: "
                f"{missing} not in the table's columns, so Hudi could not derive record keys "
                "(hoodie.populate.meta.fields=false)"
            )


def _schema_fields(table: HudiTable, table_schema: TableSchema) -> list[str]:
    """`table_schema_fields`, an unreadable schema refusing the plan (it names the commit file)."""
    try:
        return table_schema_fields(table, table_schema)
    except CorruptTableError as exc:
        raise PlanRefusedError(str(exc)) from exc


def _newest_input_columns(
    table: HudiTable, plan: PlannedClustering
) -> tuple[str, dict[str, pa.DataType]] | None:
    """The newest input base file's top-level columns and their Arrow types (None: no base file).

    Execution reads every input file and unifies their schemas; reading one footer here (under
    the table lock) keeps scheduling cheap, and the newest file is the one most likely to carry
    every column of an evolved schema (columns are added over time).
    """
    slices = [s for g in plan.groups for s in g.slices if s.base_file_path]
    if not slices:
        return None
    newest = max(slices, key=lambda s: s.base_instant_time)
    path = table.storage.relativize(newest.base_file_path)
    try:
        with table.storage.open_input(path) as f:
            schema = pq.read_schema(f)
    except (OSError, pa.ArrowException) as exc:
        raise PlanRefusedError(
            f"table {table.name!r} at {table.base_uri}: input file {path} cannot be read: {exc}"
        ) from exc
    return path, {f.name: f.type for f in schema}
