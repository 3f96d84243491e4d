"""The demo's writer: Hudi's own Spark writer (the 0.15.0 bundle) appending batches to a COW table.

This is the only product code that touches the Hudi bundle: the demo needs a real streaming-style
writer beside the table service, and that writer is Hudi itself. It keeps Hudi's defaults where a
daemon deployment can (the metadata table on, with its `files` partition only, which the service keeps
in sync) and sets what it needs (automatic table services off; optimistic concurrency with the
ZooKeeper lock when `zk_connect` is given).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from service.config.hoodie_keys import INDEX_TYPE, RECORD_INDEX_ENABLE
from service.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The demo's writer: Hudi 0.15.0 (table version 6) by default, or Hudi 1.1.1 (`--hudi 1.1`: it creates
# a version-9 table). `./run setup` fetches both bundles.
HUDI_BUNDLES = {"0.15": "0.15.0", "1.1": "1.1.1"}
DEFAULT_HUDI = "0.15"
BUNDLE_JAR_NAME = f"hudi-spark3.5-bundle_2.12-{HUDI_BUNDLES[DEFAULT_HUDI]}.jar"
# Hudi 1.x's record index (the index upsert-heavy tables pick): built in the metadata table and used
# by the writer to locate records (1.1 reads 1.0's switch as the alternative of its own).
RECORD_INDEX_OPTIONS = {RECORD_INDEX_ENABLE: "true", INDEX_TYPE: "RECORD_INDEX"}
ZK_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
CITIES = ("amsterdam", "lisbon", "oslo")
_JAVA17_OPENS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
)


def hts_home() -> Path:
    """Where `./run setup` keeps the venv, jars and demo data (`$HTS_HOME`)."""
    return Path(os.environ.get("HTS_HOME", Path.home() / ".cache" / "hudi-table-service"))


def bundle_jar(hudi: str = DEFAULT_HUDI) -> Path:
    """The Spark bundle of Hudi `hudi` (a key of `HUDI_BUNDLES`)."""
    jar = hts_home() / "jars" / f"hudi-spark3.5-bundle_2.12-{HUDI_BUNDLES[hudi]}.jar"
    if not jar.exists():
        raise ConfigError(f"Hudi bundle {jar} is missing; run ./run setup")
    return jar


def demo_spark(hudi: str = DEFAULT_HUDI) -> SparkSession:
    """A local SparkSession with Hudi `hudi`'s bundle and extensions (joins the process's session if
    one runs)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    scratch = Path(tempfile.mkdtemp(prefix="hts-demo-spark-"))
    conf = {
        "spark.master": "local[2]",
        "spark.app.name": "hudi-table-service-demo-writer",
        "spark.jars": str(bundle_jar(hudi)),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(scratch / "warehouse"),
        "spark.driver.extraJavaOptions": " ".join(
            [*_JAVA17_OPENS, f"-Dderby.system.home={scratch / 'derby'}"]
        ),
    }
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def demo_writer_options(
    table_name: str,
    zk_connect: str | None = None,
    lock_base_path: str = "/hudi/locks",
    table_type: str = "COPY_ON_WRITE",
    record_index: bool = False,
) -> dict[str, str]:
    """Hudi writer options of the demo table (partitioned by `city`, keyed by `order_id`).

    The writer hands every table service over with Hudi's master switch,
    `hoodie.table.services.enabled=false`: it cleans, clusters, compacts (merge-on-read: updates stay
    in log files until the daemon's services rewrite the slices) and archives nothing.
    `record_index`: the writer keeps and uses the record index (Hudi 1.x)."""
    opts = {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "order_id",
        "hoodie.datasource.write.precombine.field": "updated_at",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.table.services.enabled": "false",
        # Small files on purpose: they are what the table service's clustering is for.
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.upsert.shuffle.parallelism": "2",
    }
    if record_index:
        opts.update(RECORD_INDEX_OPTIONS)
    if zk_connect:
        opts.update(
            {
                "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
                "hoodie.cleaner.policy.failed.writes": "LAZY",
                "hoodie.write.lock.provider": ZK_LOCK_PROVIDER,
                "hoodie.write.lock.zookeeper.url": zk_connect,
                "hoodie.write.lock.zookeeper.port": zk_connect.rsplit(":", 1)[-1]
                if ":" in zk_connect
                else "2181",
                "hoodie.write.lock.zookeeper.base_path": lock_base_path,
                "hoodie.write.lock.zookeeper.lock_key": table_name,
            }
        )
    return opts


def demo_updates_per_batch(rows_per_batch: int) -> int:
    """How many orders of each batch after the first are updates: half of them, rounded down."""
    return rows_per_batch // 2


def demo_first_order(batch: int, rows_per_batch: int) -> int:
    """The first order id of batch `batch`; its `rows_per_batch` ids are consecutive.

    Batch 0 holds orders [0, R). Each later batch starts `demo_updates_per_batch(R)` ids before the
    previous batch ends: its first R // 2 orders are the previous batch's newest R // 2 (updates; from
    batch 2 on, exactly the orders the previous batch added), its other R - R // 2 orders are new."""
    return batch * (rows_per_batch - demo_updates_per_batch(rows_per_batch))


def demo_latest(batches: Iterable[int], rows_per_batch: int) -> dict[int, int]:
    """Order id -> the batch whose values it holds (`updated_at`) once `batches` were committed."""
    latest: dict[int, int] = {}
    for batch in batches:
        first = demo_first_order(batch, rows_per_batch)
        for order in range(first, first + rows_per_batch):
            latest[order] = max(latest.get(order, -1), batch)
    return latest


def demo_batch(spark: SparkSession, batch: int, rows_per_batch: int) -> DataFrame:
    """Batch `batch` (`demo_first_order`): R // 2 updates of the previous batch's newest orders, the
    rest new orders (batch 0: all new)."""
    from pyspark.sql import functions as F

    first_id = demo_first_order(batch, rows_per_batch)
    cities = F.array(*[F.lit(c) for c in CITIES])
    return spark.range(first_id, first_id + rows_per_batch).select(
        F.col("id").alias("order_id"),
        F.element_at(cities, (F.col("id") % len(CITIES) + 1).cast("int")).alias("city"),
        (F.col("id") % 17 + batch).cast("int").alias("quantity"),
        (F.col("id") * 0.5 + batch).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 97).cast("string")).alias("customer"),
        F.lit(batch).cast("long").alias("updated_at"),
    )


def write_demo_batches(
    base_path: str,
    batches: int = 4,
    *,
    rows_per_batch: int = 200,
    table_name: str = "demo",
    first_batch: int = 0,
    zk_connect: str | None = None,
    spark: SparkSession | None = None,
) -> int:
    """Append `batches` batches to the demo table at `base_path` (an insert, then upserts).

    Returns the number of batches written. `first_batch` continues an existing demo table.
    """
    if batches < 1 or rows_per_batch < 2:
        raise ConfigError(
            f"demo needs batches >= 1 and rows_per_batch >= 2, got {batches} and {rows_per_batch}"
        )
    session = spark or demo_spark()
    opts = demo_writer_options(table_name, zk_connect)
    for batch in range(first_batch, first_batch + batches):
        operation = "insert" if batch == 0 else "upsert"
        df = demo_batch(session, batch, rows_per_batch)
        df.write.format("hudi").options(**opts).option("hoodie.datasource.write.operation", operation).mode(
            "append"
        ).save(base_path)
        print(f"demo writer: batch {batch} ({operation}, {rows_per_batch} rows) -> {base_path}", flush=True)
    return batches


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.demo.hudi_writer", description=__doc__)
    parser.add_argument("--base-path", default=str(hts_home() / "demo" / "table"))
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--rows-per-batch", type=int, default=200)
    parser.add_argument("--table-name", default="demo")
    parser.add_argument(
        "--zk-connect", default=None, help="host:port of ZooKeeper: write with OCC and its lock"
    )
    args = parser.parse_args(argv)
    base = args.base_path
    first = 0
    if Path(base, ".hoodie", "hoodie.properties").exists():
        # Continue the existing demo table: later batches upsert and add orders.
        first = sum(1 for p in Path(base, ".hoodie").iterdir() if p.name.endswith(".commit"))
    write_demo_batches(
        base,
        args.batches,
        rows_per_batch=args.rows_per_batch,
        table_name=args.table_name,
        first_batch=first,
        zk_connect=args.zk_connect,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
