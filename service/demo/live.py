"""`hudi-table-service demo`: the daemon on an embedded default, beside Hudi's own writer.

ZooKeeper on loopback; Hudi's Spark writer commits a batch every few seconds under optimistic
concurrency with Hudi's ZookeeperBasedLockProvider, each batch after the first updating the previous
batch's newest half of orders and adding as many new ones (`demo_first_order`); a batch Hudi rejects
(an update to a file group under pending clustering) is retried until it commits. The daemon, locking
the same znode, schedules and executes clustering and cleaning as the triggers fire, with its metrics
page up. With `--table-type MERGE_ON_READ` the writer's updates land in log files, which every
clustering merges (the daemon's compaction is off here): each is printed with the log files it merged
and the updated records they held. The writer keeps Hudi's default metadata table (`files` partition),
which the daemon updates with every instant it completes. `--hudi 1.1` runs Hudi 1.1.1's writer
instead: a version-9 table with 1.1's defaults (`column_stats` and `partition_stats` too) and the
record index, which the daemon's clusterings keep pointing at the moved records. At the end the table
is read back through Hudi twice, listing files through the metadata table and through storage: every
order exactly once with its latest value, the same rows from the same files both ways; the last line
counts the rows written and the updates among them. Each run writes a fresh table under the work directory.
"""

from __future__ import annotations

import argparse
import logging
import posixpath
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from service.archival import archived_timeline_files
from service.config.daemon import load_daemon_config
from service.config.hoodie_keys import HEARTBEAT_INTERVAL_MS
from service.daemon import Daemon
from service.demo.hudi_writer import (
    DEFAULT_HUDI,
    HUDI_BUNDLES,
    demo_batch,
    demo_latest,
    demo_spark,
    demo_updates_per_batch,
    demo_writer_options,
    hts_home,
)
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
DEMO_MAX_COMMITS = 6  # the demo's hoodie.keep.max.commits
DEMO_HEARTBEAT_MS = 5000  # x hoodie.client.heartbeat.tolerable.misses (2): a failed attempt expires in 10 s


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work-dir", default=str(hts_home() / "demo"), help="each run adds a table here")
    parser.add_argument("--duration", type=float, default=120, help="seconds to run; 0 runs until Ctrl-C")
    parser.add_argument(
        "--until-serviced",
        action="store_true",
        help="stop before --duration once the daemon has clustered, cleaned and archived the table "
        "(on merge-on-read: two clusterings that merged log files)",
    )
    parser.add_argument("--batch-interval", type=float, default=3.0, help="seconds between writer batches")
    parser.add_argument("--rows-per-batch", type=int, default=400)
    parser.add_argument("--metrics-port", type=int, default=9464)
    parser.add_argument(
        "--hudi",
        choices=tuple(HUDI_BUNDLES),
        default=DEFAULT_HUDI,
        help="the writer's Hudi: 0.15 (table version 6) or 1.1 (Hudi 1.1.1: a version-9 table with its "
        "defaults and the record index)",
    )
    parser.add_argument(
        "--table-type",
        choices=("COPY_ON_WRITE", "MERGE_ON_READ"),
        default="COPY_ON_WRITE",
        help="MERGE_ON_READ: the writer's updates land in log files, which clustering merges",
    )


def demo_config(base_path: str, zk: str, metrics_port: int) -> dict[str, object]:
    """The daemon's config: Z-order clustering after 4 commits, cleaning keeping 3 commits, and no
    compaction, so the writer's log files on a merge-on-read table are what its clusterings merge."""
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
            # Within a second of the writer's commit that makes clustering due, so the plan is mostly
            # written before the writer's next batch starts (which Hudi then rejects) rather than
            # while a batch updating its file groups is in flight (then the clustering rolls back).
            "poll_interval_seconds": 1,
            # A tick failing on a transient state (e.g. Hudi's writer mid metadata-table compaction)
            # is retried within seconds, not after the default 30 s.
            "failures": {"backoff_initial_seconds": 2, "backoff_max_seconds": 30},
            "spark": {"master": "local[2]"},
            "lock": lock,
            "metrics": {"host": "127.0.0.1", "port": metrics_port},
        },
        "defaults": {
            "hoodie.clustering.async.max.commits": 4,
            "hoodie.layout.optimize.strategy": "ZORDER",
            "hoodie.clustering.plan.strategy.sort.columns": "quantity,amount",
            "hoodie.cleaner.commits.retained": 3,
            # Archival keeps the active timeline between 4 and 6 commits (Hudi's defaults: 20 and 30),
            # so the demo shows it within minutes.
            "hoodie.keep.min.commits": 4,
            "hoodie.keep.max.commits": DEMO_MAX_COMMITS,
            # The writer's (optimistic concurrency forces it there): each clean first rolls back the
            # writer's rejected attempts once their heartbeat (the writer's interval) expired.
            "hoodie.cleaner.policy.failed.writes": "LAZY",
            HEARTBEAT_INTERVAL_MS: DEMO_HEARTBEAT_MS,
        },
        "tables": [
            {
                "name": "demo",
                "base_path": base_path,
                "timezone": "UTC",
                # Compaction (on by default for merge-on-read) would merge the same log files whenever
                # its trigger fires beside a clustering's; the demo shows the clustering merging them.
                "compaction": {"enabled": False},
            }
        ],
    }


def _write_batch(
    spark: SparkSession, base: str, batch: int, rows: int, zk: str, table_type: str, hudi: str
) -> None:
    opts = demo_writer_options("demo", zk, LOCK_BASE_PATH, table_type, record_index=hudi != DEFAULT_HUDI)
    opts["hoodie.table.timeline.timezone"] = "UTC"
    # An attempt Hudi rejects (an update to a file group under pending clustering, SparkRejectUpdateStrategy)
    # stays pending until a clean rolls it back once its heartbeat expired (LAZY failed writes), and
    # holds back the earliest commit to retain meanwhile: with Hudi's 60 s beat and 2 misses, every
    # clean of a 2-minute demo would wait for the last rejected attempt.
    opts[HEARTBEAT_INTERVAL_MS] = str(DEMO_HEARTBEAT_MS)
    operation = "insert" if batch == 0 else "upsert"
    df = demo_batch(spark, batch, rows)
    df.write.format("hudi").options(**opts).option("hoodie.datasource.write.operation", operation).mode(
        "append"
    ).save(base)


def _batch_summary(batch: int, rows: int) -> str:
    if batch == 0:
        return f"{rows} new orders"
    updates = demo_updates_per_batch(rows)
    return f"{rows} orders: {updates} updates of batch {batch - 1}'s newest orders, {rows - updates} new"


def _last_writer_commit(table: HudiTable) -> str:
    """The newest completed instant only the writer makes: a deltacommit on merge-on-read, a commit on
    copy-on-write (the daemon there writes only replacecommits and cleans); "" when none."""
    merge_on_read = table.config.table_type is TableType.MERGE_ON_READ
    action = Action.DELTA_COMMIT if merge_on_read else Action.COMMIT
    done = table.load_timeline().by_actions([action]).completed()
    return max((i.timestamp for i in done), default="")


def _failure_reason(exc: Exception) -> str:
    """The innermost Java exception of a failed `save` (Py4J's message holds the whole trace)."""
    lines = [line.strip() for line in str(exc).splitlines()] or [type(exc).__name__]
    causes = [line.removeprefix("Caused by: ") for line in lines if "Exception: " in line]
    return (causes[-1] if causes else lines[0])[:200]


def _writer(
    spark: SparkSession, base: str, rows: int, interval: float, zk: str, table_type: str, hudi: str,
    stop: threading.Event, written: list[int],
) -> None:  # fmt: skip
    """Commit batch after batch until `stop`. A failed attempt is retried with the same rows until the
    batch commits, so each committed batch updates the orders of the previous committed one; an
    attempt whose instant completed before `save` raised counts as committed (not written twice)."""
    table = HudiTable.open(base)
    batch = len(written)
    while not stop.is_set():
        attempt = 1
        while not stop.is_set():
            before = _last_writer_commit(table)
            try:
                _write_batch(spark, base, batch, rows, zk, table_type, hudi)
            except Exception as exc:  # Hudi rejects updates to file groups being clustered: retry
                reason = _failure_reason(exc)
                if _last_writer_commit(table) == before:
                    print(f"  writer: batch {batch} attempt {attempt} failed, retrying: {reason}", flush=True)
                    attempt += 1
                    stop.wait(2.0)
                    continue
                # Its instant completed (a later step of `save` raised): the batch is in, do not rewrite it.
                said = f"batch {batch} attempt {attempt} committed, then raised"
                print(f"  writer: {said}: {reason}", flush=True)
            written.append(batch)
            print(f"  writer: committed batch {batch} ({_batch_summary(batch, rows)})", flush=True)
            batch += 1
            break
        stop.wait(interval)


def _log_file_updates(table: HudiTable, log_names: set[str]) -> int:
    """Updated records the log files named `log_names` hold: the `numUpdateWrites` of the completed
    deltacommits' write stats (HoodieDeltaWriteStat of Hudi's HoodieAppendHandle) whose path is one of
    them (a deltacommit Hudi's writer archived since is not counted)."""
    updates = 0
    for instant in table.load_timeline().by_actions([Action.DELTA_COMMIT]).completed():
        for stat in table.facts_reader.commit_metadata(instant).write_stats:
            if stat.path is not None and posixpath.basename(stat.path) in log_names:
                updates += stat.num_update_writes
    return updates


@dataclass
class _Serviced:
    """What the demo has reported the daemon doing so far."""

    clusterings: int = 0
    merging_clusterings: int = 0  # merge-on-read: clusterings of slices with log files
    cleans: int = 0
    archived_files: set[str] = field(default_factory=set)  # the archived timeline's, as last seen

    def shown(self, merge_on_read: bool) -> bool:
        """Whether the demo has shown what it is for: a clustering (two merging log files on
        merge-on-read, where every batch's updates land in log files), a clean and an archival."""
        clustered = self.merging_clusterings >= 2 if merge_on_read else self.clusterings >= 1
        return clustered and self.cleans >= 1 and bool(self.archived_files)


def _report_progress(table: HudiTable, seen: set[str], serviced: _Serviced) -> None:
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
        serviced.cleans += instant.action is Action.CLEAN
        if instant.action is Action.REPLACE_COMMIT:
            serviced.clusterings += 1
            plan = table.facts_reader.clustering_plan(instant, file_names_only=True)
            slices = [s for g in plan.groups for s in g.slices] if plan is not None else []
            detail = f"{len(slices)} file slices"
            if merge_on_read:
                merged = sum(1 for s in slices if s.log_file_paths)
                serviced.merging_clusterings += merged > 0
                logs = {posixpath.basename(p) for s in slices for p in s.log_file_paths}
                said = f"{len(logs)} log files, {_log_file_updates(table, logs)} updated records merged"
                detail += f", {merged} with log files: {said}"
            detail = f" ({detail})"
        print(f"  daemon: {services[instant.action]} at {instant.timestamp}{detail}", flush=True)
    archived = set(archived_timeline_files(table))
    if archived - serviced.archived_files:
        serviced.archived_files = archived
        print(f"  daemon: archived ({_timeline_summary(table)})", flush=True)


def _timeline_summary(table: HudiTable) -> str:
    timeline = table.load_timeline()
    commits = len(timeline.commits().completed())
    return f"active timeline: {len(timeline)} instants, {commits} completed commits"


def _timeline_bounded(table: HudiTable, wait_seconds: float) -> bool:
    """Whether the active timeline holds at most hoodie.keep.max.commits completed commits, waiting
    up to `wait_seconds` for the daemon's next archival tick after the writer's last commit (printed)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        commits = len(table.load_timeline().commits().completed())
        if commits <= DEMO_MAX_COMMITS or time.monotonic() >= deadline:
            break
        time.sleep(1)
    ok = commits <= DEMO_MAX_COMMITS
    verdict = "within" if ok else "MISMATCH: more than"
    print(
        f"verify (archival): {_timeline_summary(table)}: {verdict} hoodie.keep.max.commits={DEMO_MAX_COMMITS}"
    )
    return ok


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
    listing files through the metadata table and through storage alike (printed, the last line with
    the rows written and how many of them were updates; True if so)."""
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
    rows_written = len(written) * rows
    # A batch's order ids are distinct: every written row beyond an order's first one updated it.
    updates = rows_written - len(latest)
    verdict = "every order holds its latest value, read both ways" if ok else "MISMATCH (above)"
    print(
        f"verify: {rows_written} rows written in {len(written)} batches, {updates} of them updates, "
        f"{len(latest)} orders: {verdict}",
        flush=True,
    )
    return ok


def run_demo(args: argparse.Namespace) -> int:
    if not zookeeper_available():
        raise HudiTableServiceError(
            "the demo runs ZooKeeper on loopback (the lock Hudi's writer and the daemon share); "
            "install it with ./run setup (Debian package zookeeper)"
        )
    base = str(Path(args.work_dir) / time.strftime("live-%Y%m%d-%H%M%S"))
    Path(base).parent.mkdir(parents=True, exist_ok=True)
    spark = demo_spark(args.hudi)
    indexes = "" if args.hudi == DEFAULT_HUDI else ", record index on (table version 9)"
    with LoopbackZookeeper() as zookeeper:
        zk = zookeeper.connect_string
        print(
            f"demo table {base} ({args.table_type}, Hudi {HUDI_BUNDLES[args.hudi]}'s writer with its "
            f"defaults: metadata table on{indexes}); ZooKeeper on {zk}; Hudi's writer and the daemon "
            "share its lock",
            flush=True,
        )
        _write_batch(spark, base, 0, args.rows_per_batch, zk, args.table_type, args.hudi)
        written = [0]
        print(f"  writer: committed batch 0 ({_batch_summary(0, args.rows_per_batch)})", flush=True)
        config_path = Path(base + "-daemon.yaml")
        config_path.write_text(yaml.safe_dump(demo_config(base, zk, args.metrics_port), sort_keys=False))
        daemon = Daemon(load_daemon_config(config_path), executor=SparkExecutor(session=spark))
        stop = threading.Event()
        writer_args = (spark, base, args.rows_per_batch, args.batch_interval, zk, args.table_type, args.hudi)
        writer = threading.Thread(
            target=_writer,
            args=(*writer_args, stop, written),
            name="demo-writer",
            daemon=True,
        )
        daemon.start()
        where = f"http://127.0.0.1:{args.metrics_port}"
        print(f"daemon running (config {config_path}); status page: {where}/, metrics: {where}/metrics")
        writer.start()
        table = HudiTable.open(base)
        seen: set[str] = set()
        serviced = _Serviced()
        merge_on_read = table.config.table_type is TableType.MERGE_ON_READ
        deadline = time.monotonic() + args.duration if args.duration > 0 else float("inf")
        try:
            while time.monotonic() < deadline:
                time.sleep(2)
                _report_progress(table, seen, serviced)
                if args.until_serviced and serviced.shown(merge_on_read):
                    print("the daemon has clustered, cleaned and archived the table: stopping", flush=True)
                    break
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        finally:
            stop.set()
            writer.join(timeout=120)
            bounded = _timeline_bounded(table, wait_seconds=30)
            daemon.stop(60)
        _report_progress(table, seen, serviced)
        ok = verify_demo_table(spark, base, written, args.rows_per_batch) and bounded
    return 0 if ok else 1
