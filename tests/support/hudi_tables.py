"""Write and read copy-on-write tables with real Hudi 0.15.0 (Spark datasource) and hudi-rs.

Writers use the configuration a daemon deployment asks of them (metadata table off, as the service requires,
automatic table services off) plus what tests need: `hoodie.parquet.small.file.limit=0` so every
insert makes new file groups (small files to cluster) and archiving off so histories stay whole.
Pass `extra_opts` to change any of it, e.g. `occ_zookeeper_options(...)` for optimistic concurrency.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OPERATIONS = ("insert", "upsert", "bulk_insert", "insert_overwrite", "insert_overwrite_table", "delete")
PARTITIONS = ("americas", "asia", "europe")
DEFAULT_TABLE = "harness"
RECORD_KEY = "id"
PRECOMBINE = "ts"
PARTITION_FIELD = "region"
# Test-session epoch for `event_time`: a fixed instant, so rows are reproducible.
EVENT_EPOCH_SECONDS = 1_704_067_200  # 2024-01-01T00:00:00Z

_KEYGEN = "org.apache.hudi.keygen"
# A pre-commit validator whose query can never match (`<query>#<expected result>`: the query always
# returns 0): Hudi aborts the write after its data files, before completing the instant.
FAILING_WRITE_OPTIONS = {
    "hoodie.precommit.validators": "org.apache.hudi.client.validator.SqlQuerySingleResultPreCommitValidator",
    "hoodie.precommit.validators.single.value.sql.queries": "select count(*) from <TABLE_NAME> where 1 = 0#1",
}
_COMPLETED = re.compile(r"^(\d{17})\.(commit|deltacommit|replacecommit)$")
_INFLIGHT_COMMIT = re.compile(r"^(\d{17})\.(inflight|deltacommit\.inflight)$")


def writer_options(
    table_name: str,
    record_key: str,
    precombine: str,
    partition_fields: Sequence[str] | None,
) -> dict[str, str]:
    """Hudi writer options with the test defaults; callers overlay their own on top."""
    opts = {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.recordkey.field": record_key,
        "hoodie.datasource.write.precombine.field": precombine,
        "hoodie.metadata.enable": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.clustering.inline": "false",
        "hoodie.clustering.async.enabled": "false",
        "hoodie.clustering.schedule.inline": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.bulkinsert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2",
    }
    fields = list(partition_fields or [])
    if fields:
        complex_key = len(fields) > 1 or "," in record_key
        opts["hoodie.datasource.write.partitionpath.field"] = ",".join(fields)
        opts["hoodie.datasource.write.keygenerator.class"] = (
            f"{_KEYGEN}.ComplexKeyGenerator" if complex_key else f"{_KEYGEN}.SimpleKeyGenerator"
        )
    else:
        opts["hoodie.datasource.write.partitionpath.field"] = ""
        opts["hoodie.datasource.write.keygenerator.class"] = f"{_KEYGEN}.NonpartitionedKeyGenerator"
    return opts


def occ_zookeeper_options(zk_connect: str, lock_base_path: str, lock_key: str) -> dict[str, str]:
    """Optimistic concurrency with Hudi's ZooKeeper lock, as the daemon's writers run (LAZY rollback)."""
    return {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.cleaner.policy.failed.writes": "LAZY",
        "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
        # 0.14/0.15 hand `url` to Curator as the whole connect string; `port` is declared but unused.
        "hoodie.write.lock.zookeeper.url": zk_connect,
        "hoodie.write.lock.zookeeper.port": zk_connect.rsplit(":", 1)[-1] if ":" in zk_connect else "2181",
        "hoodie.write.lock.zookeeper.base_path": lock_base_path,
        "hoodie.write.lock.zookeeper.lock_key": lock_key,
    }


def write(
    spark: SparkSession,
    base_path: str | Path,
    df: DataFrame,
    operation: str,
    table_name: str = DEFAULT_TABLE,
    record_key: str = RECORD_KEY,
    precombine: str = PRECOMBINE,
    partition_fields: Sequence[str] | None = None,
    extra_opts: Mapping[str, str] | None = None,
) -> str:
    """Write `df` with Hudi's Spark datasource; returns the instant time it completed."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown Hudi write operation {operation!r}; expected one of {OPERATIONS}")
    opts = writer_options(table_name, record_key, precombine, partition_fields)
    opts["hoodie.datasource.write.operation"] = operation
    opts.update(extra_opts or {})
    before = completed_instants(base_path)
    df.write.format("hudi").options(**opts).mode("append").save(str(base_path))
    added = sorted(set(completed_instants(base_path)) - set(before))
    if not added:
        raise AssertionError(f"Hudi {operation} on {base_path} completed no commit")
    return added[-1]


def write_failing(
    spark: SparkSession,
    base_path: str | Path,
    df: DataFrame,
    operation: str = "upsert",
    table_name: str = DEFAULT_TABLE,
    record_key: str = RECORD_KEY,
    precombine: str = PRECOMBINE,
    partition_fields: Sequence[str] | None = None,
    extra_opts: Mapping[str, str] | None = None,
) -> str:
    """A real Hudi write that fails after writing its data files; returns the inflight instant.

    A pre-commit validator whose query can never match makes Hudi abort between writing the data
    files (and markers) and completing the instant, as a crash there would: the table is left with
    `T.commit.requested`, `T.inflight`, data files and markers of `T`. The next write in single-writer
    mode (failed-writes policy EAGER, Hudi's default) rolls it back: see `rollback_failed_writes`.
    """
    from py4j.protocol import Py4JJavaError

    failing = {**FAILING_WRITE_OPTIONS, **(extra_opts or {})}
    before = set(pending_commit_instants(base_path))
    try:
        write(spark, base_path, df, operation, table_name, record_key, precombine, partition_fields, failing)
    except Py4JJavaError as err:
        if not failed_by_the_validator(err):
            raise
    else:
        raise AssertionError(f"the failing write on {base_path} completed")
    left = sorted(set(pending_commit_instants(base_path)) - before)
    if len(left) != 1:
        raise AssertionError(f"expected one inflight commit after the failed write, found {left}")
    return left[0]


def failed_by_the_validator(err: Exception) -> bool:
    """Whether a write failed on `FAILING_WRITE_OPTIONS`' validator. On MOR it fails either on its
    query or, reading the new log files as Parquet, with UNABLE_TO_INFER_SCHEMA: both after the data
    files are written."""
    text = str(err)
    return any(s in text for s in ("HoodieValidationException", "runPrecommitValidators")) or (
        "validation failed" in text.lower()
    )


def rollback_failed_writes(
    spark: SparkSession,
    base_path: str | Path,
    table_name: str = DEFAULT_TABLE,
    record_key: str = RECORD_KEY,
    precombine: str = PRECOMBINE,
    partition_fields: Sequence[str] | None = None,
    extra_opts: Mapping[str, str] | None = None,
) -> str:
    """Let Hudi roll back failed writes: an empty upsert with the EAGER policy; returns its instant.

    Hudi's write client rolls back every failed (inflight, non-table-service) commit before it starts
    a new one when `hoodie.cleaner.policy.failed.writes=EAGER`, writing `R.rollback`.
    """
    empty = generate(spark, [], batch=0)
    opts = {"hoodie.cleaner.policy.failed.writes": "EAGER", **(extra_opts or {})}
    return write(
        spark, base_path, empty, "upsert", table_name, record_key, precombine, partition_fields, opts
    )


def rollback_to_instant(spark: SparkSession, base_path: str | Path, instant: str) -> bool:
    """Roll back a completed commit with Hudi's `CALL rollback_to_instant` procedure."""
    with registered_table(spark, base_path) as name:
        call = f"CALL rollback_to_instant(table => '{name}', instant_time => '{instant}')"
        rows = spark.sql(call).collect()
    return bool(rows and rows[0][0])


# -- data ------------------------------------------------------------------------------------------


def generate(
    spark: SparkSession,
    ids: Iterable[int],
    batch: int = 0,
    partitions: Sequence[str] = PARTITIONS,
) -> DataFrame:
    """Deterministic rows for `ids`: every value is a function of (id, batch).

    Columns: id long (record key), region string (partition, `partitions[id % n]`), qty int,
    price double, name string, event_time timestamp, ts long (precombine = `batch`, so a later batch
    wins an upsert).
    """
    return rows_for_ids(spark.createDataFrame([(int(i),) for i in ids], "id long"), batch, partitions)


def rows_for_ids(ids_df: DataFrame, batch: int = 0, partitions: Sequence[str] = PARTITIONS) -> DataFrame:
    """`generate`'s rows for a DataFrame of `id long` (e.g. `spark.range`: no key list on the driver)."""
    from pyspark.sql import functions as F

    region_array = F.array(*[F.lit(p) for p in partitions])
    return ids_df.select(
        F.col("id"),
        F.element_at(region_array, (F.col("id") % len(partitions) + 1).cast("int")).alias("region"),
        ((F.col("id") * 7 + batch) % 100).cast("int").alias("qty"),
        (F.col("id") * 1.25 + batch).cast("double").alias("price"),
        F.concat(F.lit("name-"), F.col("id").cast("string"), F.lit(f"-b{batch}")).alias("name"),
        F.timestamp_seconds(F.col("id") + F.lit(EVENT_EPOCH_SECONDS + batch * 3600)).alias("event_time"),
        F.lit(batch).cast("long").alias("ts"),
    )


def expected_row(record_id: int, batch: int, partitions: Sequence[str] = PARTITIONS) -> dict[str, Any]:
    """The data columns `generate` makes for (id, batch), `event_time` as epoch microseconds."""
    return {
        "id": record_id,
        "region": partitions[record_id % len(partitions)],
        "qty": (record_id * 7 + batch) % 100,
        "price": record_id * 1.25 + batch,
        "name": f"name-{record_id}-b{batch}",
        "event_time": (EVENT_EPOCH_SECONDS + batch * 3600 + record_id) * 1_000_000,
        "ts": batch,
    }


DATA_COLUMNS = ("id", "region", "qty", "price", "name", "event_time", "ts")


def normalise_rows(
    rows: Iterable[Mapping[str, Any]], columns: Sequence[str] = DATA_COLUMNS
) -> list[dict[str, Any]]:
    """Rows of any reader reduced to `columns`, timestamps as epoch microseconds, sorted by id."""
    out = []
    for row in rows:
        norm: dict[str, Any] = {}
        for col in columns:
            value = row[col]
            if isinstance(value, datetime):
                value = _epoch_micros(value)
            norm[col] = value
        out.append(norm)
    return sorted(out, key=lambda r: r[columns[0]])


def _epoch_micros(value: datetime) -> int:
    # PySpark returns naive datetimes in the driver's local zone; `timestamp()` reads them as local.
    delta = value.timestamp()
    return round(delta * 1_000_000)


# -- reads -----------------------------------------------------------------------------------------


def read_snapshot(
    spark: SparkSession, base_path: str | Path, query_type: str = "snapshot"
) -> list[dict[str, Any]]:
    """Rows through Hudi's Spark reader (meta columns included), as dicts: a snapshot query, or
    `query_type` (`read_optimized`: base files only on merge-on-read)."""
    reader = (
        spark.read.format("hudi")
        .option("hoodie.metadata.enable", "false")
        .option("hoodie.datasource.query.type", query_type)
    )
    return [row.asDict() for row in reader.load(str(base_path)).collect()]


def hudi_rs_table(base_path: str | Path) -> Any:
    """hudi-rs's `HudiTable` for `base_path` (`HudiTableBuilder.from_base_uri(uri).build()`)."""
    from hudi import HudiTableBuilder

    return HudiTableBuilder.from_base_uri(str(base_path)).build()


def hudi_rs_snapshot(base_path: str | Path) -> pa.Table:
    """Snapshot read with hudi-rs (`HudiTable.read()`: record batches of the latest file slices)."""
    table = hudi_rs_table(base_path)
    batches = table.read()
    if not batches:
        return table.get_schema_with_meta_fields().empty_table()
    return pa.Table.from_batches(batches)


@dataclass(frozen=True, order=True)
class LatestSlice:
    """One latest file slice: partition path ('' when non-partitioned), file id, base instant, file name."""

    partition: str
    file_id: str
    base_instant: str
    base_file: str


def hudi_rs_file_slices(base_path: str | Path) -> list[LatestSlice]:
    """The file slices a hudi-rs snapshot read uses (`HudiTable.get_file_slices()`)."""
    slices = hudi_rs_table(base_path).get_file_slices()
    return sorted(
        LatestSlice(s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name) for s in slices
    )


def hudi_latest_file_slices(spark: SparkSession, base_path: str | Path) -> list[LatestSlice]:
    """Java's latest merged file slices per partition, through `CALL show_fsview_latest`.

    In 0.15 the procedure needs a catalog table and one `partition_path` per call (its default
    `limit` is 10, so a large limit is passed).
    """
    result: list[LatestSlice] = []
    with registered_table(spark, base_path) as name:
        for partition in partition_paths(base_path):
            args = f"table => '{name}', partition_path => '{partition}', limit => 1000000"
            call = f"CALL show_fsview_latest({args})"
            for row in spark.sql(call).collect():
                base_file = Path(row["data_file"]).name if row["data_file"] else ""
                result.append(
                    LatestSlice(row["partition"] or "", row["file_id"], row["base_instant"], base_file)
                )
    return sorted(result)


def data_files(base: Path) -> set[str]:
    """Base-relative paths of every base and log file of a local table (no `.hoodie`, partition
    metafiles or checksum files)."""
    return {
        p.relative_to(base).as_posix()
        for p in base.rglob("*")
        if p.is_file()
        and ".hoodie" not in p.relative_to(base).parts
        and not p.name.startswith((".hoodie_partition_metadata", ".."))
        and not p.name.endswith(".crc")
    }


def partition_paths(base_path: str | Path) -> list[str]:
    """Relative paths of directories holding `.hoodie_partition_metadata` ('' for the base path)."""
    root = Path(base_path)
    found = []
    for marker in root.rglob(".hoodie_partition_metadata*"):
        if ".hoodie" in marker.relative_to(root).parts[:-1]:
            continue
        found.append(marker.parent.relative_to(root).as_posix())
    return sorted({"" if p == "." else p for p in found})


_table_ids = itertools.count()


@contextmanager
def registered_table(spark: SparkSession, base_path: str | Path) -> Iterator[str]:
    """Register `base_path` as a catalog table for Hudi procedures; yields its name.

    Hudi's CREATE TABLE rewrites `hoodie.properties` (it drops `hoodie.table.timeline.timezone`, adds
    `hoodie.table.create.schema`, changes `hoodie.database.name`); the original bytes (and Hadoop's
    `.crc` beside them) are restored at once, so the table stays exactly as its writer left it.
    """
    meta = Path(base_path) / ".hoodie"
    files = (meta / "hoodie.properties", meta / ".hoodie.properties.crc")
    saved = {p: p.read_bytes() if p.exists() else None for p in files}

    def restore() -> None:
        # A checksum left beside bytes it was not computed for fails every later Hadoop read.
        for path, content in saved.items():
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)
        (meta / "hoodie.properties.backup").unlink(missing_ok=True)

    name = f"hts_registered_{next(_table_ids)}"
    try:
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{Path(base_path)}'")
    finally:
        restore()
    try:
        yield name
    finally:
        # DROP TABLE of an external table removes only the catalog entry.
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        restore()


# -- timeline files --------------------------------------------------------------------------------


def timeline_files(base_path: str | Path) -> list[str]:
    """Names of the instant files directly under `.hoodie` (hidden .crc files excluded)."""
    meta = Path(base_path) / ".hoodie"
    return sorted(p.name for p in meta.iterdir() if p.is_file() and p.name[:1].isdigit())


def completed_instants(base_path: str | Path) -> list[str]:
    """Instant times of completed commits, deltacommits and replacecommits, ascending."""
    if not (Path(base_path) / ".hoodie").exists():
        return []
    return sorted(m.group(1) for name in timeline_files(base_path) if (m := _COMPLETED.match(name)))


def pending_commit_instants(base_path: str | Path) -> list[str]:
    """Commit and deltacommit instants that are inflight (`T.inflight` without `T.commit`,
    `T.deltacommit.inflight` without `T.deltacommit`)."""
    if not (Path(base_path) / ".hoodie").exists():
        return []
    names = set(timeline_files(base_path))
    inflight = [m for name in names if (m := _INFLIGHT_COMMIT.match(name))]
    completed = {"inflight": "commit", "deltacommit.inflight": "deltacommit"}
    return sorted(m.group(1) for m in inflight if f"{m.group(1)}.{completed[m.group(2)]}" not in names)


def instants_with_action(base_path: str | Path, action: str) -> list[str]:
    """Completed instants of one action (`commit`, `replacecommit`, `clean`, `rollback`, ...)."""
    return sorted(name.split(".")[0] for name in timeline_files(base_path) if name.endswith(f".{action}"))


def garble_table_schemas(base_path: Path, action: str) -> list[Path]:
    """Replace the writer schema in every completed `action` file of a version-6 timeline (JSON
    commit metadata) by text that is not a schema; the files changed, oldest first."""
    changed = []
    for instant in instants_with_action(base_path, action):
        path = base_path / ".hoodie" / f"{instant}.{action}"
        metadata = json.loads(path.read_text())
        if (metadata.get("extraMetadata") or {}).get("schema"):
            metadata["extraMetadata"]["schema"] = "{not json"
            path.write_text(json.dumps(metadata))
            changed.append(path)
    assert changed, f"no {action} of {base_path} carries a schema: the check would prove nothing"
    return changed
