"""Ours vs Hudi on an object store: requests by kind per run, and per idle daemon tick.

A moto S3 server on loopback sits behind a counting proxy (`bench.s3_proxy`); ours reaches it with
pyarrow's S3 filesystem, Hudi with Hadoop's s3a (hadoop-aws and the AWS SDK bundle matching Spark
3.5.1's Hadoop 3.3.4, fetched by `./run setup` beside the Hudi bundle). Small sizes only: this counts
requests, it does not time an object store.

* Clustering: the clustering benchmark's input, one fresh copy per contender, LINEAR on (a, b) with
  the same settings as `bench.hudi_clustering`; Hudi's `CALL run_clustering` on `s3a://`, ours
  through `schedule_clustering` + `execute_clustering`. Both outputs are read back by Hudi.
* Cleaning: the cleaning benchmark's table, KEEP_LATEST_COMMITS retaining its `commits_retained`
  commits (incremental mode, Hudi's default): the new ECTR is the first full upsert, so the window
  since the last clean holds only the small commits and an incremental clean lists only the
  partitions they touched (retaining one commit would put a full-table upsert in the window).
  Hudi's `CALL run_clean` on one copy, our `Cleaner` on the other; the files left must be the same.
  The partitions each contender listed are reported next to the table's partitions and those the
  incremental window touches.
* Idle daemon tick: the cleaned table served by `Daemon.run_iteration` with nothing due, a first
  (cold) tick and then a warm one per service, counted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import pyarrow.fs as pafs

from bench.cleaning import NOW, TINY, TableShape, build_table
from bench.clustering import build_input_table, cluster_ours
from bench.common import (
    RESULTS_DIR,
    bench_parser,
    command_line,
    print_table,
    rerun_without_jvm,
    stopwatch,
    write_results,
)
from bench.contenders import load_average
from bench.hudi_clustering import Options as ClusteringOptions
from bench.hudi_clustering import plan_settings, run_clustering_call, start_session
from bench.moto_server import moto_server
from bench.s3_proxy import KINDS, CountingProxy
from service.cleaning import Cleaner, CleanOptions
from service.config.daemon import load_daemon_config
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAME = "hudi-s3"
BUCKET = "bench"
ACCESS_KEY = SECRET_KEY = "testing"
S3A_JARS = ("hadoop-aws-3.3.4.jar", "aws-java-sdk-bundle-1.12.262.jar")


@dataclass(frozen=True)
class Options:
    files: int = 20
    rows: int = 40_000
    target_file_mb: int = 1
    shape: TableShape = TINY
    work_dir: Path | None = None
    results_dir: Path | None = None
    seed: int = 7


# ---------------------------------------------------------------- the object store


def jars_dir() -> Path:
    from service.demo.hudi_writer import bundle_jar

    return bundle_jar().parent


def s3a_jars() -> list[Path]:
    jars = [jars_dir() / name for name in S3A_JARS]
    missing = [str(j) for j in jars if not j.exists()]
    if missing:
        raise RuntimeError(f"missing {missing}; run ./run setup (it fetches them with Maven)")
    return jars


def storage_options(endpoint: str) -> dict[str, str]:
    """Our `storage_options` (pyarrow S3FileSystem) for `endpoint`."""
    return {
        "endpoint_override": endpoint,
        "endpoint_scheme": "http",
        "access_key": ACCESS_KEY,
        "secret_key": SECRET_KEY,
        "region": "us-east-1",
    }


def filesystem(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(
        access_key=ACCESS_KEY, secret_key=SECRET_KEY, region="us-east-1", scheme="http",
        endpoint_override=endpoint, allow_bucket_creation=True,
    )  # fmt: skip


def point_s3a_at(spark: SparkSession, endpoint: str) -> None:
    """Hadoop's s3a on `endpoint`, path-style, static keys (set before the first s3a use: Hadoop caches
    file systems per scheme and authority)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in {
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": f"http://{endpoint}",
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": ACCESS_KEY,
        "fs.s3a.secret.key": SECRET_KEY,
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }.items():
        conf.set(key, value)


def upload(local: Path, fs: pafs.S3FileSystem, key: str) -> str:
    """Copy a local table to `s3a://BUCKET/key` (directly, not through the proxy); returns its URI."""
    pafs.copy_files(str(local), f"{BUCKET}/{key}", pafs.LocalFileSystem(), fs)
    return f"s3a://{BUCKET}/{key}"


def data_files(fs: pafs.S3FileSystem, key: str) -> set[str]:
    infos = fs.get_file_info(pafs.FileSelector(f"{BUCKET}/{key}", recursive=True))
    prefix = f"{BUCKET}/{key}/"
    out = set()
    for info in infos:
        relative = info.path.removeprefix(prefix)
        name = relative.rsplit("/", 1)[-1]
        if info.type != pafs.FileType.File or relative.startswith(".hoodie/") or name.startswith(".hoodie"):
            continue
        out.add(relative)
    return out


@contextmanager
def registered(spark: SparkSession, fs: pafs.S3FileSystem, key: str) -> Iterator[str]:
    """`key` as a catalog table for Hudi procedures that take only a table name (`run_clean`); Hudi's
    CREATE TABLE rewrites hoodie.properties, whose original bytes are put back at once."""
    path = f"{BUCKET}/{key}/.hoodie/hoodie.properties"
    with fs.open_input_stream(path) as f:
        saved = f.read()

    def restore() -> None:
        with fs.open_output_stream(path) as out:
            out.write(saved)
        backup = f"{BUCKET}/{key}/.hoodie/hoodie.properties.backup"
        if fs.get_file_info(backup).type == pafs.FileType.File:
            fs.delete_file(backup)

    name = "hts_s3_" + key.replace("-", "_").replace("/", "_")
    try:
        spark.sql(f"CREATE TABLE {name} USING hudi LOCATION 's3a://{BUCKET}/{key}'")
    finally:
        restore()
    try:
        yield name
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        restore()


def _list_prefix(target: str) -> str:
    """The `prefix` a LIST request (ListObjectsV2) asked for."""
    return parse_qs(urlsplit(target).query).get("prefix", [""])[0]


def partitions_listed(requests: Sequence[tuple[str, str, str]], key: str) -> int:
    """Distinct partition directories of table `key` listed (LIST requests with the prefix `p=.../`)."""
    listed = set()
    for kind, _, target in requests:
        if kind != "LIST":
            continue
        prefix = _list_prefix(target).removeprefix(f"{key}/")
        partition = prefix.split("/", 1)[0]
        if partition.startswith("p=") and prefix == f"{partition}/":
            listed.add(partition)
    return len(listed)


# ---------------------------------------------------------------- measured parts


def clustering(
    spark: SparkSession, proxy: CountingProxy, fs: pafs.S3FileSystem, options: Options, work: Path
) -> dict[str, Any]:
    local = build_input_table(work / "clustering-input", options.files, options.rows, options.seed)
    settings = plan_settings(
        ClusteringOptions(files=options.files, rows=options.rows, target_file_mb=options.target_file_mb),
        "LINEAR",
        "DIRECT",
    )
    out: dict[str, Any] = {"input": {"files": options.files, "rows": options.rows, "mb": local.bytes / 2**20}}
    hudi_uri = upload(local.base, fs, "clustering-hudi")
    with proxy.counting() as counts, stopwatch() as sw:
        spark.sql(run_clustering_call(hudi_uri, settings)).collect()
    out["hudi"] = {"seconds": round(sw.seconds, 3), "requests": counts}
    ours_uri = upload(local.base, fs, "clustering-ours")
    table = HudiTable.open(ours_uri, storage_options(proxy.endpoint))
    config = HoodieConfig.from_mapping(settings, table.name)
    lock = InProcessTableLock(table.name, key=ours_uri)
    with proxy.counting() as counts, stopwatch() as sw:
        cluster_ours(spark, table, config, lock)
    out["ours"] = {"seconds": round(sw.seconds, 3), "requests": counts}
    for name, uri in (("hudi", hudi_uri), ("ours", ours_uri)):
        out[name]["rows_read_by_hudi"] = spark.read.format("hudi").load(uri).count()
    shutil.rmtree(local.base)
    return out


def cleaning(
    spark: SparkSession, proxy: CountingProxy, fs: pafs.S3FileSystem, options: Options, work: Path
) -> tuple[dict[str, Any], str]:
    local = work / "cleaning-table"
    build_table(local, options.shape)
    retained = options.shape.commits_retained
    policy = {
        "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
        "hoodie.cleaner.commits.retained": str(retained),
    }
    uris = {name: upload(local, fs, f"cleaning-{name}") for name in ("hudi", "ours")}
    before = data_files(fs, "cleaning-hudi")
    out: dict[str, Any] = {
        "data_files": len(before),
        "partitions": options.shape.partitions,
        "partitions_in_incremental_window": options.shape.touched_partitions,
        "policy": policy,
    }
    with registered(spark, fs, "cleaning-hudi") as name:
        call = (
            f"CALL run_clean(table => '{name}', clean_policy => 'KEEP_LATEST_COMMITS', "
            f"retain_commits => {retained}, options => 'hoodie.metadata.enable=false')"
        )
        mark = proxy.mark()
        with proxy.counting() as counts, stopwatch() as sw:
            spark.sql(call).collect()
    out["hudi"] = {"seconds": round(sw.seconds, 3), "requests": counts}
    out["hudi"]["partitions_listed"] = partitions_listed(proxy.requests_since(mark), "cleaning-hudi")
    table = HudiTable.open(uris["ours"], storage_options(proxy.endpoint))
    config = HoodieConfig.from_mapping(policy, table.name)
    lock = InProcessTableLock(table.name, key=uris["ours"])
    # Planning alone first (a dry run writes and deletes nothing), to tell its requests from the deletes'.
    planner = Cleaner(table, config, lock, UTC, CleanOptions(dry_run=True, force=True), now=lambda: NOW)
    mark = proxy.mark()
    with proxy.counting() as counts, stopwatch() as sw:
        planner.run()
    out["ours_planning_only"] = {"seconds": round(sw.seconds, 3), "requests": counts}
    out["ours_planning_only"]["partitions_listed"] = partitions_listed(
        proxy.requests_since(mark), "cleaning-ours"
    )
    table = HudiTable.open(uris["ours"], storage_options(proxy.endpoint))  # cold again, like Hudi's run
    cleaner = Cleaner(table, config, lock, UTC, CleanOptions(force=True), now=lambda: NOW)
    mark = proxy.mark()
    with proxy.counting() as counts, stopwatch() as sw:
        result = cleaner.run()
    if len(result.cleans) != 1:
        raise RuntimeError(
            f"{uris['ours']}: our clean ran {len(result.cleans)} cleans ({result.skipped_reason})"
        )
    out["ours"] = {"seconds": round(sw.seconds, 3), "requests": counts}
    out["ours"]["partitions_listed"] = partitions_listed(proxy.requests_since(mark), "cleaning-ours")
    left = {name: data_files(fs, f"cleaning-{name}") for name in ("hudi", "ours")}
    for name in ("hudi", "ours"):
        out[name]["files_deleted"] = len(before - left[name])
    out["same_files_left"] = left["hudi"] == left["ours"]
    shutil.rmtree(local)
    return out, uris["ours"]


def request_targets(requests: Sequence[tuple[str, str, str]], key: str) -> dict[str, int]:
    """How many requests of each kind went to each object (a LIST: to its prefix) of table `key`."""
    out: dict[str, int] = {}
    for kind, _, target in requests:
        name = _list_prefix(target) if kind == "LIST" else urlsplit(target).path
        name = name.removeprefix(f"/{BUCKET}/").removeprefix(f"{key}/")
        out[f"{kind} {name}"] = out.get(f"{kind} {name}", 0) + 1
    return dict(sorted(out.items()))


def idle_ticks(
    spark: SparkSession, proxy: CountingProxy, uri: str, work: Path, retained: int
) -> dict[str, Any]:
    """Requests of `Daemon.run_iteration` per service on a table with nothing due: cold, then warm."""
    from service.daemon import Daemon, TableRuntime, TableService

    config_path = work / "daemon.json"
    document = {
        "daemon": {"metrics": {"host": "127.0.0.1", "port": 0}, "logging": {"level": "WARNING"}},
        # Nothing due: the last commit was cleaned, and the clustering trigger is out of reach.
        "defaults": {
            "hoodie.clustering.async.max.commits": 100_000,
            "hoodie.cleaner.commits.retained": retained,
        },
        "tables": [{"name": "idle", "base_path": uri, "storage_options": storage_options(proxy.endpoint)}],
    }
    config_path.write_text(json.dumps(document), encoding="utf-8")
    daemon = Daemon(load_daemon_config(config_path), executor=SparkExecutor(session=spark), serve_http=False)
    runtime: TableRuntime = daemon.runtimes["idle"]
    key = uri.removeprefix(f"s3a://{BUCKET}/")
    out: dict[str, Any] = {}
    for service in (TableService.CLEANING, TableService.CLUSTERING):
        for phase in ("cold", "warm"):
            mark = proxy.mark()
            with proxy.counting() as counts:
                outcome = daemon.run_iteration(runtime, service, datetime.now(UTC))
            out[f"{service.value.lower()}_{phase}"] = {
                "outcome": str(outcome),
                "requests": counts,
                "targets": request_targets(proxy.requests_since(mark), key),
            }
    return out


# ---------------------------------------------------------------- driver


def run(options: Options, command: str | None = None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-s3-", dir=options.work_dir))
    session: SparkSession | None = None
    load_before = load_average()
    try:
        session = start_session(work, "2g", extra_jars=s3a_jars())
        with moto_server() as moto, CountingProxy(moto) as proxy:
            fs = filesystem(moto)
            fs.create_dir(BUCKET)
            point_s3a_at(session, proxy.endpoint)
            clustered = clustering(session, proxy, fs, options, work)
            print("  clustering: done", flush=True)
            cleaned, cleaned_uri = cleaning(session, proxy, fs, options, work)
            print("  cleaning: done", flush=True)
            ticks = idle_ticks(session, proxy, cleaned_uri, work, options.shape.commits_retained)
        payload = {
            "command": command or f"bench.hudi_s3.run({options})",
            "request_kinds": list(KINDS),
            "clustering": clustered,
            "cleaning": cleaned,
            "idle_daemon_ticks": ticks,
            "load_before": load_before,
            "load_after": load_average(),
        }
        _print(payload)
        path = write_results(NAME, payload, options.results_dir)
        print(f"\nwrote {path}", flush=True)
        if not cleaned["same_files_left"]:
            raise RuntimeError(f"Hudi's cleaner and ours left different files on S3: {cleaned}")
        return payload
    finally:
        if session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)


def _print(payload: Mapping[str, Any]) -> None:
    def row(label: str, entry: Mapping[str, Any]) -> list[Any]:
        counts = [entry["requests"][k] for k in KINDS]
        return [label, entry.get("seconds"), *counts, entry.get("partitions_listed", "")]

    rows = [
        row(f"{what} {name}", payload[what][name])
        for what in ("clustering", "cleaning")
        for name in ("hudi", "ours")
    ]
    rows.append(row("cleaning ours, planning only (dry run)", payload["cleaning"]["ours_planning_only"]))
    rows += [row(f"idle tick {key}", entry) for key, entry in payload["idle_daemon_ticks"].items()]
    print_table(
        "Requests by kind (moto S3 behind a counting proxy)",
        ["run", "seconds", *KINDS, "partitions listed"],
        rows,
    )


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, "accepted for `bench all`; sizes are small anyway")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    args = parser.parse_args(list(argv))
    if (status := rerun_without_jvm(NAME, argv)) is not None:
        return status
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    run(
        Options(work_dir=args.work_dir, results_dir=args.results_dir),
        command=command_line(NAME, argv),
    )
    return 0
