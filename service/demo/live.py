"""`hudi-table-service demo`: the daemon on an embedded default, beside Hudi's own writer.

ZooKeeper on loopback; Hudi's Spark writer commits a batch every few seconds under optimistic
concurrency with Hudi's ZookeeperBasedLockProvider; the daemon, locking the same znode, schedules and
executes clustering and cleaning as the triggers fire, with its metrics page up. With `--table-type
MERGE_ON_READ` the writer's updates land in log files and the daemon's clustering merges them. The
writer keeps Hudi's default metadata table (`files` partition), which the daemon updates with every instant it
completes. At the end the table is read back through Hudi twice, listing files through the metadata
table and through storage: every order exactly once with its latest value, the same rows from the same
files both ways. Each run writes a fresh table under the work directory.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from service.config.daemon import load_daemon_config
from service.daemon import Daemon
from service.demo.hudi_writer import demo_batch, demo_latest, demo_spark, demo_writer_options, hts_home
from service.demo.zookeeper import LoopbackZookeeper, zookeeper_available
from service.errors import HudiTableServiceError
from service.executor import SparkExecutor
from service.table.instant import Action
from service.table.properties import TableType
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
LOCK_BASE_PATH = "/hudi/locks"


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work-dir", default=str(hts_home() / "demo"), help="each run adds a table here")
    parser.add_argument("--duration", type=float, default=120, help="seconds to run; 0 runs until Ctrl-C")
    parser.add_argument("--batch-interval", type=float, default=3.0, help="seconds between writer batches")
    parser.add_argument("--rows-per-batch", type=int, default=400)
    parser.add_argument("--metrics-port", type=int, default=9464)
    parser.add_argument(
        "--table-type",
        choices=("COPY_ON_WRITE", "MERGE_ON_READ"),
        default="COPY_ON_WRITE",
        help="MERGE_ON_READ: the writer's updates land in log files, which clustering merges",
    )


def demo_config(base_path: str, zk: str, metrics_port: int) -> dict[str, object]:
    lock = {
        "provider": "zookeeper",
        "properties": {
            "hoodie.write.lock.zookeeper.url": zk,
            "hoodie.write.lock.zookeeper.base_path": LOCK_BASE_PATH,
            "hoodie.write.lock.zookeeper.lock_key": "demo",
        },
    }
    return {
        "daemon": {
            "poll_interval_seconds": 5,
            "spark": {"master": "local[2]"},
            "lock": lock,
            "metrics": {"host": "127.0.0.1", "port": metrics_port},
        },
        "defaults": {
            "hoodie.clustering.async.max.commits": 4,
            "hoodie.layout.optimize.strategy": "ZORDER",
            "hoodie.clustering.plan.strategy.sort.columns": "quantity,amount",
            "hoodie.cleaner.commits.retained": 3,
        },
        "tables": [{"name": "demo", "base_path": base_path, "timezone": "UTC"}],
    }


def _write_batch(spark: SparkSession, base: str, batch: int, rows: int, zk: str, table_type: str) -> None:
    opts = demo_writer_options("demo", zk, LOCK_BASE_PATH, table_type)
    opts["hoodie.table.timeline.timezone"] = "UTC"
    operation = "insert" if batch == 0 else "upsert"
    df = demo_batch(spark, batch, rows)
    df.write.format("hudi").options(**opts).option("hoodie.datasource.write.operation", operation).mode(
        "append"
    ).save(base)


def _writer(
    spark: SparkSession, base: str, rows: int, interval: float, zk: str, table_type: str,
    stop: threading.Event, written: list[int],
) -> None:  # fmt: skip
    batch = len(written)
    while not stop.is_set():
        for attempt in range(1, 6):
            try:
                _write_batch(spark, base, batch, rows, zk, table_type)
                written.append(batch)
                print(f"  writer: committed batch {batch} ({rows} orders, half of them updates)", flush=True)
                break
            except Exception as exc:  # Hudi rejects updates to file groups being clustered: retry
                reason = str(exc).splitlines()[0][:160]
                print(f"  writer: batch {batch} attempt {attempt} failed, retrying: {reason}", flush=True)
                stop.wait(2.0)
        batch += 1
        stop.wait(interval)


def _report_progress(table: HudiTable, seen: set[str]) -> None:
    # On merge-on-read Hudi's writers only deltacommit, so a `commit` there is a compaction.
    merge_on_read = table.config.table_type is TableType.MERGE_ON_READ
    services = {Action.REPLACE_COMMIT: "clustering committed", Action.CLEAN: "clean completed"}
    if merge_on_read:
        services[Action.COMMIT] = "compaction committed"
    for instant in table.load_timeline().completed():
        if instant.file_name in seen or instant.action not in services:
            continue
        seen.add(instant.file_name)
        detail = ""
        if instant.action is Action.REPLACE_COMMIT:
            plan = table.facts_reader.clustering_plan(instant, file_names_only=True)
            slices = [s for g in plan.groups for s in g.slices] if plan is not None else []
            merged = sum(1 for s in slices if s.log_file_paths)
            detail = f" ({len(slices)} file slices, {merged} with log files)"
        print(f"  daemon: {services[instant.action]} at {instant.timestamp}{detail}", flush=True)


def _hudi_read(spark: SparkSession, base: str, metadata: bool) -> list[tuple[int, int, str]]:
    """(order_id, updated_at, _hoodie_file_name) of Hudi's snapshot read, its file listing taken from
    the metadata table (`HoodieBackedTableMetadata`) or from storage (`FileSystemBackedTableMetadata`)."""
    got = (
        spark.read.format("hudi")
        .option("hoodie.metadata.enable", "true" if metadata else "false")
        .load(base)
        .select("order_id", "updated_at", "_hoodie_file_name")
    )
    return sorted((r["order_id"], r["updated_at"], r["_hoodie_file_name"]) for r in got.collect())


def verify_demo_table(spark: SparkSession, base: str, written: list[int], rows: int) -> bool:
    """Hudi's reader returns every order of the `written` batches exactly once with its latest value,
    listing files through the metadata table and through storage alike (printed; True if so)."""
    latest = demo_latest(written, rows)
    ok = True
    reads = {metadata: _hudi_read(spark, base, metadata) for metadata in (True, False)}
    for metadata, rows_read in reads.items():
        ids = [r[0] for r in rows_read]
        good = len(ids) == len(set(ids)) and {r[0]: r[1] for r in rows_read} == latest
        ok = ok and good
        verdict = "every order exactly once with its latest value" if good else "MISMATCH"
        listing = "metadata table" if metadata else "storage listing"
        print(
            f"verify (Hudi's reader, {listing}): {len(rows_read)} rows, {len(latest)} orders written: "
            f"{verdict}",
            flush=True,
        )
    # Each row from the same file both ways: the MDT lists exactly the files storage holds after the
    # daemon's clusterings and cleans (a file missing from it, or one it still lists, shows here).
    same = reads[True] == reads[False]
    ok = ok and same
    both = "the same rows from the same files" if same else "MISMATCH between the two reads"
    print(f"verify (metadata table vs storage listing): {both}", flush=True)
    return ok


def run_demo(args: argparse.Namespace) -> int:
    if not zookeeper_available():
        raise HudiTableServiceError(
            "the demo runs ZooKeeper on loopback (the lock Hudi's writer and the daemon share); "
            "install it with ./run setup (Debian package zookeeper)"
        )
    base = str(Path(args.work_dir) / time.strftime("live-%Y%m%d-%H%M%S"))
    Path(base).parent.mkdir(parents=True, exist_ok=True)
    spark = demo_spark()
    with LoopbackZookeeper() as zookeeper:
        zk = zookeeper.connect_string
        print(
            f"demo table {base} ({args.table_type}; Hudi's defaults: metadata table on); ZooKeeper on {zk}; "
            "Hudi's writer and the daemon share its lock",
            flush=True,
        )
        _write_batch(spark, base, 0, args.rows_per_batch, zk, args.table_type)
        written = [0]
        config_path = Path(base + "-daemon.yaml")
        config_path.write_text(yaml.safe_dump(demo_config(base, zk, args.metrics_port), sort_keys=False))
        daemon = Daemon(load_daemon_config(config_path), executor=SparkExecutor(session=spark))
        stop = threading.Event()
        writer = threading.Thread(
            target=_writer,
            args=(spark, base, args.rows_per_batch, args.batch_interval, zk, args.table_type, stop, written),
            name="demo-writer",
            daemon=True,
        )
        daemon.start()
        where = f"http://127.0.0.1:{args.metrics_port}"
        print(f"daemon running (config {config_path}); status page: {where}/, metrics: {where}/metrics")
        writer.start()
        table = HudiTable.open(base)
        seen: set[str] = set()
        deadline = time.monotonic() + args.duration if args.duration > 0 else float("inf")
        try:
            while time.monotonic() < deadline:
                time.sleep(2)
                _report_progress(table, seen)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        finally:
            stop.set()
            writer.join(timeout=120)
            daemon.stop(60)
        _report_progress(table, seen)
        ok = verify_demo_table(spark, base, written, args.rows_per_batch)
    return 0 if ok else 1
