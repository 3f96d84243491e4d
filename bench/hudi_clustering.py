"""Clustering: ours next to Hudi's own, on the same input, with the same plan settings.

One run builds one input table (the clustering benchmark's many-small-files copy-on-write table, see
`bench.clustering.build_input_table`), checks that Hudi reads it, and then for every layout (LINEAR,
ZORDER and HILBERT, DIRECT and SAMPLE curves) rewrites a fresh copy of it with each contender, once
per round. Each contender runs in a process of its own with its own SparkSession carrying the Hudi
bundle, configured alike (`bench.contenders`), warmed up once on a tiny table:

* Hudi: `CALL run_clustering(path, order, order_strategy, options)` (`RunClusteringProcedure`, which
  schedules with `SparkSizeBasedClusteringPlanStrategy` and executes with
  `SparkSortAndSizeExecutionStrategy`, row writer on as in 0.15);
* ours: `schedule_clustering` + `execute_clustering` through `SparkExecutor`.

Both get the same `hoodie.*` plan settings (sort columns, layout, curve build method, target file
size, small-file limit, group size and count, compression codec). Hudi alone also gets
`hoodie.metadata.enable=false` (the service refuses metadata-table tables, and building one would be
work ours never does) and no automatic clean or archive after its commit.

Recorded per layout and contender: wall seconds (the median and min-max of `--rounds` rounds, default
3, each on a fresh copy, the rounds alternating who goes first; every round's seconds are kept), the
peak resident memory of the contender's process tree while it clustered, input MB/s, the ratio
ours/Hudi, the plan's groups (file ids per group; the two plans follow the same strategy, so they
should match), output files and their size spread, the digest of every row Hudi's reader reads back
from each output (`bench.contenders.row_digest`, in this process's session; every round's output
must hold the input's rows, or the run fails), and the rows a reader scans for each pruning
predicate of `bench.pruning_count` (footer min/max pruning over the output files). The floor is
pyarrow reading, sorting and encoding the same rows on every core (one process per core, each a
share of the files), in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.clustering import (
    SORT_COLUMNS,
    TABLE_NAME,
    InputTable,
    build_input_table,
    cluster_ours,
    fresh_copy,
)
from bench.common import (
    RESULTS_DIR,
    add_input_size_options,
    bench_parser,
    command_line,
    input_sizes,
    print_table,
    rerun_without_jvm,
    stopwatch,
    write_results,
)
from bench.contenders import (
    ContenderProcess,
    RowDigest,
    Spread,
    load_average,
    peak_mb,
    round_order,
    row_digest,
    settle,
    start_contenders,
)
from bench.pruning_count import PREDICATES, placements, read_row_group_stats, rows_scanned
from service.clustering.orchestrator import read_clustering_plan
from service.config.hoodie import HoodieConfig
from service.demo.hudi_writer import DEFAULT_HUDI, HUDI_BUNDLES
from service.lock.in_process import InProcessTableLock
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAME = "hudi-clustering"
MB = 1024 * 1024
CONTENDERS = ("hudi", "ours")
# (layout, curve build method); the method is moot for LINEAR, so it runs once.
ALL_LAYOUTS = (
    ("LINEAR", "DIRECT"),
    ("ZORDER", "DIRECT"),
    ("HILBERT", "DIRECT"),
    ("ZORDER", "SAMPLE"),
    ("HILBERT", "SAMPLE"),
)
# Hudi-only settings: no metadata table (the service refuses tables with one), and nothing after the
# clustering commit that ours does not do either.
HUDI_ONLY_SETTINGS = {
    "hoodie.metadata.enable": "false",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
# `--hudi 1.1`: the input upgraded to version 9 by Hudi 1.1.1's writer, with its metadata-table defaults
# (`files`, `column_stats`, `partition_stats`) and the record index, which both clusterings keep in
# sync: Hudi's with the metadata table on and the record-index options (a procedure without them
# drops the partition).
HUDI_1_ONLY_SETTINGS = {
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.global.record.level.index.enable": "true",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}


@dataclass(frozen=True)
class Options:
    files: int
    rows: int
    target_file_mb: int
    layouts: tuple[tuple[str, str], ...] = ALL_LAYOUTS
    small_file_limit_mb: int = 300  # Hudi's default `hoodie.clustering.plan.strategy.small.file.limit`
    group_mb: int = 2048  # Hudi's default `hoodie.clustering.plan.strategy.max.bytes.per.group`
    max_groups: int = 30  # Hudi's default `hoodie.clustering.plan.strategy.max.num.groups`
    codec: str = "gzip"  # Hudi's default `hoodie.parquet.compression.codec`
    placements: int = 50  # predicate placements per pruning predicate
    work_dir: Path | None = None
    results_dir: Path | None = None
    seed: int = 7
    driver_memory: str = "6g"
    # `--standalone`: both contenders on a standalone Spark cluster (master + one worker with the
    # machine's cores, on loopback) instead of local[2]: executors in their own JVM, Python workers
    # in their own directories, as when the work outgrows one process (issue 12 §4).
    standalone: bool = False
    executor_memory: str = "8g"
    hudi: str = DEFAULT_HUDI  # 1.1: Hudi 1.1.1 on the input upgraded to table version 9
    rounds: int = 1  # per layout, each contender on a fresh copy; `seconds` is the median
    # Said after the benchmark's name in the result file's: a run of other sizes or on other Spark
    # (`default-sizes`, `standalone`) keeps its own file beside the 4 M-row one.
    results_suffix: str = ""

    @property
    def hudi_only_settings(self) -> dict[str, str]:
        return dict(HUDI_ONLY_SETTINGS if self.hudi == DEFAULT_HUDI else HUDI_1_ONLY_SETTINGS)

    @property
    def results_name(self) -> str:
        name = NAME if self.hudi == DEFAULT_HUDI else f"{NAME}-v9"
        return f"{name}-{self.results_suffix}" if self.results_suffix else name

    @classmethod
    def quick(cls) -> Options:
        return cls(
            files=100,
            rows=400_000,
            target_file_mb=2,
            layouts=(("LINEAR", "DIRECT"), ("ZORDER", "DIRECT"), ("HILBERT", "DIRECT")),
        )

    @classmethod
    def full(cls) -> Options:
        return cls(files=400, rows=4_000_000, target_file_mb=10)


@dataclass
class Contender:
    """One contender's rewrite of one fresh copy of the input."""

    contender: str
    layout: str
    method: str
    seconds: float
    input_bytes: int
    instant_time: str
    plan_groups: list[list[str]]  # file ids of each input group, sorted
    output_groups_planned: list[int]  # numOutputFileGroups per group
    output_sizes: list[int]
    rows_read_by_hudi: int
    rows_scanned: dict[str, float] = field(default_factory=dict)  # predicate -> mean rows scanned
    round_seconds: list[float] = field(default_factory=list)  # every round's, in order; `seconds` the median
    round_peak_rss_bytes: list[int] = field(default_factory=list)  # the process tree's, every round
    round_peak_file_rss_bytes: list[int] = field(default_factory=list)  # the file-backed part of each

    @property
    def mb_per_s(self) -> float:
        return self.input_bytes / MB / self.seconds if self.seconds > 0 else 0.0


# ---------------------------------------------------------------- settings


def plan_settings(options: Options, layout: str, method: str) -> dict[str, str]:
    """The `hoodie.*` keys both contenders get (names as in Hudi's `HoodieClusteringConfig`)."""
    return {
        "hoodie.clustering.plan.strategy.sort.columns": ",".join(SORT_COLUMNS),
        "hoodie.layout.optimize.strategy": layout,
        "hoodie.layout.optimize.curve.build.method": method,
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(options.target_file_mb * MB),
        "hoodie.clustering.plan.strategy.small.file.limit": str(options.small_file_limit_mb * MB),
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(options.group_mb * MB),
        "hoodie.clustering.plan.strategy.max.num.groups": str(options.max_groups),
        "hoodie.parquet.compression.codec": options.codec,
    }


def run_clustering_call(
    base: Path | str, settings: Mapping[str, str], hudi_only: Mapping[str, str] = HUDI_ONLY_SETTINGS
) -> str:
    """`CALL run_clustering` for `settings`. `RunClusteringProcedure` splits `options` on ',' and '=',
    so the sort columns (a comma list) go through its `order` argument and the layout through
    `order_strategy`; every other key through `options`."""
    sort_key, layout_key = "hoodie.clustering.plan.strategy.sort.columns", "hoodie.layout.optimize.strategy"
    rest = {k: v for k, v in settings.items() if k not in (sort_key, layout_key)}
    for key, value in rest.items():
        if "," in value or "=" in value:
            raise ValueError(f"run_clustering options cannot carry {key}={value!r}")
    options = ",".join(f"{k}={v}" for k, v in {**rest, **hudi_only}.items())
    return (
        f"CALL run_clustering(path => '{base}', order => '{settings[sort_key]}', "
        f"order_strategy => '{settings[layout_key]}', op => 'scheduleAndExecute', options => '{options}')"
    )


# ---------------------------------------------------------------- contenders


def _completed_clustering(table: HudiTable) -> Instant:
    timeline = table.load_timeline()
    done = [i for i in timeline.completed().instants if i.action is Action.REPLACE_COMMIT]
    if len(done) != 1:
        raise RuntimeError(f"{table.base_uri}: expected one completed replacecommit, found {done}")
    return done[0]


def _outcome(name: str, layout: str, method: str, table: InputTable, seconds: float, rows: int) -> Contender:
    """What one contender left: its plan's groups, its output files, and Hudi's reading of the table."""
    hudi = HudiTable.open(str(table.base))
    instant = _completed_clustering(hudi)
    plan = read_clustering_plan(
        hudi, Instant(instant.timestamp, hudi.layout.clustering_action, State.REQUESTED)
    )
    groups = [sorted(s.file_id for s in g.slices) for g in plan.groups]
    planned = [g.num_output_file_groups for g in plan.groups]
    outputs = new_base_files(table.base, instant.timestamp)
    return Contender(
        contender=name, layout=layout, method=method, seconds=seconds, input_bytes=table.bytes,
        instant_time=instant.timestamp, plan_groups=sorted(groups), output_groups_planned=planned,
        output_sizes=sorted(p.stat().st_size for p in outputs), rows_read_by_hudi=rows,
    )  # fmt: skip


def new_base_files(base: Path, instant_time: str) -> list[Path]:
    """Base files the clustering at `instant_time` wrote (a base file's name ends in its instant)."""
    out = []
    for path in base.rglob("*.parquet"):
        if ".hoodie" in path.relative_to(base).parts:
            continue
        if path.name.split(".", 1)[0].rsplit("_", 1)[-1] == instant_time:
            out.append(path)
    return sorted(out)


def run_hudi(
    spark: SparkSession,
    base: Path | str,
    settings: Mapping[str, str],
    hudi_only: Mapping[str, str] = HUDI_ONLY_SETTINGS,
) -> float:
    with stopwatch() as sw:
        spark.sql(run_clustering_call(base, settings, hudi_only)).collect()
    return sw.seconds


def upgrade_to_version_9(spark: SparkSession, table: InputTable) -> InputTable:
    """Hudi 1.1.1's writer upserts a few rows of the input twice (their own values): its first write
    upgrades the table to version 9 and builds the metadata table, the second the record index."""
    from service.table.properties import load_table_config
    from service.table.storage import Storage

    meta = [c for c in spark.read.format("hudi").load(str(table.base)).columns if c.startswith("_hoodie")]
    options = {
        "hoodie.table.name": TABLE_NAME,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.compact.inline": "false",
        "hoodie.clustering.inline": "false",
        **HUDI_1_ONLY_SETTINGS,
    }
    for _ in range(2):
        rows = spark.read.format("hudi").load(str(table.base)).where("id < 8").drop(*meta)
        rows.write.format("hudi").options(**options).mode("append").save(str(table.base))
    config = load_table_config(Storage.for_base_uri(str(table.base)))
    if config.version != 9 or "record_index" not in config.metadata_partitions:
        raise RuntimeError(
            f"{table.base}: Hudi 1.1.1 left table version {config.version} with metadata partitions "
            f"{config.metadata_partitions}, not version 9 with the record index"
        )
    files = [p for p in table.base.glob("*.parquet")]
    return InputTable(
        table.base, table.files, table.rows, sum(p.stat().st_size for p in files), table.commits
    )


def run_ours(spark: SparkSession, base: Path | str, settings: Mapping[str, str]) -> float:
    hudi = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping(settings, hudi.name)
    _, _, seconds = cluster_ours(spark, hudi, config, InProcessTableLock(hudi.name))
    return seconds


# What a contender's process runs (`bench.contender_child`): JSON in, seconds out.
def hudi_in_child(
    spark: SparkSession, base: str, settings: dict[str, str], hudi_only: dict[str, str]
) -> float:
    return run_hudi(spark, base, settings, hudi_only)


def ours_in_child(
    spark: SparkSession, base: str, settings: dict[str, str], hudi_only: dict[str, str]
) -> float:
    return run_ours(spark, base, settings)


IN_CHILD = {"hudi": f"{__name__}:hudi_in_child", "ours": f"{__name__}:ours_in_child"}


def measure_pruning(runs: Sequence[Contender], bases: Mapping[int, Path], count: int, seed: int) -> None:
    """Mean rows scanned per predicate, the same placements on every output."""
    rng = np.random.default_rng(seed)
    chosen = {p.key: placements(p, count, rng) for p in PREDICATES}
    for index, run in enumerate(runs):
        stats = read_row_group_stats(new_base_files(bases[index], run.instant_time))
        run.rows_scanned = {key: float(rows_scanned(stats, chosen[key]).mean()) for key in chosen}


# ---------------------------------------------------------------- floor


# Rows one floor process sorts and encodes at once: a share of the few-GB input in one piece
# (18 M rows per core) does not fit beside the benchmark's JVM; the 4 M-row input is one chunk per core.
FLOOR_CHUNK_ROWS = 4_000_000


def _floor_share(paths: Sequence[str], out: str, codec: str) -> int:
    # gzip at level 6, zlib's default, as parquet-mr and our writer use.
    level = 6 if codec == "gzip" else None
    chunks: list[list[str]] = [[]]
    rows_in_chunk = 0
    for path in paths:
        rows = pq.read_metadata(path).num_rows
        if chunks[-1] and rows_in_chunk + rows > FLOOR_CHUNK_ROWS:
            chunks.append([])
            rows_in_chunk = 0
        chunks[-1].append(path)
        rows_in_chunk += rows
    total = 0
    for index, chunk in enumerate(chunks):
        data = pa.concat_tables(pq.read_table(p, use_threads=False) for p in chunk)
        data = data.sort_by([(c, "ascending") for c in SORT_COLUMNS])
        pq.write_table(data, f"{out}.{index}", compression=codec, compression_level=level)
        total += data.num_rows
        del data
    return total


def _warm_worker(_: int) -> None:
    time.sleep(0.5)


def machine_floor(table: InputTable, scratch: Path, codec: str) -> dict[str, float]:
    """pyarrow read + sort + encode of every input row, one process per core over a share of the
    files each (in chunks of up to `FLOOR_CHUNK_ROWS` rows): the least a rewrite of these rows costs
    on this machine (ignoring the global order)."""
    cores = os.cpu_count() or 1
    paths = [str(table.base / p) for p in table.files]
    shares = [paths[i::cores] for i in range(cores)]
    scratch.mkdir(parents=True, exist_ok=True)
    # spawn, not fork: the parent holds a JVM gateway and pyarrow's thread pools.
    with ProcessPoolExecutor(max_workers=cores, mp_context=multiprocessing.get_context("spawn")) as pool:
        # Every worker up (spawned, this module and pyarrow imported) before the clock starts: each
        # task sleeps long enough that the pool hands the next one to another worker.
        list(pool.map(_warm_worker, range(cores)))
        with stopwatch() as sw:
            rows = sum(
                pool.map(
                    _floor_share,
                    shares,
                    [str(scratch / f"floor-{i}.parquet") for i in range(cores)],
                    [codec] * cores,
                )
            )
    shutil.rmtree(scratch, ignore_errors=True)
    if rows != table.rows:
        raise RuntimeError(f"floor read {rows} rows of {table.rows}")
    return {"processes": cores, "seconds": sw.seconds, "mb_per_s": table.bytes / MB / sw.seconds}


# ---------------------------------------------------------------- driver


def start_session(
    work_dir: Path,
    driver_memory: str,
    extra_jars: Sequence[Path] = (),
    master: str = "local[2]",
    executor_memory: str | None = None,
    hudi: str = DEFAULT_HUDI,
    cores_max: int | None = None,
) -> SparkSession:
    """local[2] (or `master`) with Hudi `hudi`'s bundle (0.15, or 1.1 for version-9 tables), the same
    session for both contenders (the clustering benchmark's configuration plus what Hudi's SQL
    procedures need)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from service.demo.hudi_writer import bundle_jar

    opens = " ".join(
        f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in ("java.lang", "java.nio", "sun.nio.ch", "java.util")
    )
    conf = {
        "spark.master": master,
        "spark.app.name": "hudi-table-service-bench-hudi-clustering",
        "spark.driver.memory": driver_memory,
        "spark.jars": ",".join(str(j) for j in (bundle_jar(hudi), *extra_jars)),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.local.dir": str(work_dir / "spark-local"),
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.driver.extraJavaOptions": f"{opens} -Dderby.system.home={work_dir / 'derby'}",
    }
    if executor_memory is not None:
        conf["spark.executor.memory"] = executor_memory
        conf["spark.executor.extraJavaOptions"] = opens
        conf["spark.executorEnv.PYSPARK_PYTHON"] = sys.executable
    if cores_max is not None:  # a standalone application's share of the cluster's cores
        conf["spark.cores.max"] = str(cores_max)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def run(options: Options, spark: SparkSession | None = None, command: str | None = None) -> dict[str, Any]:
    """Build the input, run both contenders per layout, print the tables, write the JSON and chart."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-clustering-", dir=options.work_dir))
    with contextlib.ExitStack() as stack:
        master = "local[2]"
        if options.standalone and spark is None:
            from bench.standalone import standalone_cluster

            # Each contender's application holds its executor (and its cores) for the whole run, so
            # the worker offers the machine's cores once per application; only one works at a time.
            cores = os.cpu_count() or 2
            memory = f"{2 * int(options.executor_memory.rstrip('g'))}g"
            cluster = stack.enter_context(
                standalone_cluster(work / "spark-cluster", cores=2 * cores, memory=memory)
            )
            master = cluster.master_url
        return _run(options, work, spark, master, command)


def _contender_session(options: Options, master: str) -> dict[str, Any]:
    """`start_session`'s arguments for each contender's own driver, configured alike."""
    session: dict[str, Any] = {"driver_memory": options.driver_memory, "master": master, "hudi": options.hudi}
    if options.standalone:
        session |= {"executor_memory": options.executor_memory, "cores_max": os.cpu_count() or 2}
    return session


def _run(
    options: Options, work: Path, spark: SparkSession | None, master: str, command: str | None
) -> dict[str, Any]:
    session: SparkSession | None = spark
    load_before = load_average()
    try:
        session = (
            spark
            if spark is not None
            # The harness's own session (input, read-backs, digests) runs in local mode: on a cluster it
            # would hold cores the contenders' applications then wait for.
            else start_session(work, options.driver_memory, master="local[2]", hudi=options.hudi)
        )
        with stopwatch() as built:
            source = build_input_table(
                work / "input", options.files, options.rows, options.seed, options.codec
            )
        # Hudi's reader must accept the input before anything is timed (partition metafile, commits).
        if options.hudi != DEFAULT_HUDI:
            source = upgrade_to_version_9(session, source)
        read_back = session.read.format("hudi").load(str(source.base)).count()
        if read_back != source.rows:
            raise RuntimeError(f"Hudi reads {read_back} rows of the input's {source.rows}")
        print(
            f"input: {len(source.files)} files, {source.rows:,} rows, {source.bytes / MB:.1f} MB "
            f"(built in {built.seconds:.1f}s; Hudi reads all rows)",
            flush=True,
        )
        expected = row_digest(session, source.base)
        runs: list[Contender] = []
        bases: dict[int, Path] = {}
        comparisons_rounds: dict[tuple[str, str], list[dict[str, Any]]] = {}
        with contextlib.ExitStack() as stack:
            session_of_each = _contender_session(options, master)
            processes = start_contenders(stack, work, dict.fromkeys(CONTENDERS, session_of_each))
            _warm_up(session, processes, work / "warm-up", options)
            for layout, method in options.layouts:
                settings = plan_settings(options, layout, method)
                timed: dict[str, list[float]] = {name: [] for name in CONTENDERS}
                peaks: dict[str, list[int]] = {name: [] for name in CONTENDERS}
                file_peaks: dict[str, list[int]] = {name: [] for name in CONTENDERS}  # their file-backed part
                records = comparisons_rounds.setdefault((layout, method), [])
                # Rounds alternate who goes first, so a slow spell or a warm cache falls on both.
                for round_ in range(options.rounds):
                    order = round_order(CONTENDERS, round_)
                    copies = {name: fresh_copy(source, work / f"{name}-{layout}-{method}") for name in order}
                    settle()
                    record: dict[str, Any] = {"first": order[0], "load_before": load_average()}
                    for name in order:
                        call = processes[name].call(
                            IN_CHILD[name], base=str(copies[name].base), settings=settings,
                            hudi_only=options.hudi_only_settings,
                        )  # fmt: skip
                        timed[name].append(float(call.result))
                        peaks[name].append(call.peak_rss_bytes)
                        file_peaks[name].append(call.peak_file_rss_bytes)
                        print(
                            f"  {name} {layout} {method} round {round_ + 1}: {call.result:.1f}s, "
                            f"{call.peak_rss_bytes / MB:,.0f} MB",
                            flush=True,
                        )
                    record["load_after"] = load_average()
                    digests = {name: row_digest(session, copies[name].base) for name in CONTENDERS}
                    for name in CONTENDERS:
                        record[f"{name}_seconds"] = round(timed[name][-1], 3)
                        record[f"{name}_peak_rss_mb"] = peak_mb([peaks[name][-1]])
                        record[f"{name}_peak_file_rss_mb"] = peak_mb([file_peaks[name][-1]])
                        record[f"{name}_rows"] = digests[name].text
                    record["same_rows"] = all(d == expected for d in digests.values())
                    records.append(record)
                    if not record["same_rows"]:
                        _fail_on_rows(layout, method, expected, digests)
                for name in CONTENDERS:  # the outputs of every round are alike: the last one's are measured
                    median = statistics.median(timed[name])
                    runs.append(_outcome(name, layout, method, copies[name], median, digests[name].rows))
                    runs[-1].round_seconds = timed[name]
                    runs[-1].round_peak_rss_bytes = peaks[name]
                    runs[-1].round_peak_file_rss_bytes = file_peaks[name]
                    bases[len(runs) - 1] = copies[name].base
        measure_pruning(runs, bases, options.placements, options.seed)
        floor = machine_floor(source, work / "floor", options.codec)
        payload = _payload(options, source, runs, floor, command)
        payload["input"]["rows_digest"] = expected.text
        payload["load_before"] = load_before
        for comparison in payload["comparisons"]:
            comparison["rounds"] = comparisons_rounds[(comparison["layout"], comparison["method"])]
        payload["spark_master"] = "standalone" if master.startswith("spark://") else master
        _print(payload)
        path = write_results(options.results_name, payload, options.results_dir)
        payload["results_path"] = str(path)
        from bench.hudi_clustering_chart import draw

        payload["chart_path"] = str(draw(payload, path.with_suffix(".png")))
        print(f"\nwrote {path} and {payload['chart_path']}", flush=True)
        return payload
    finally:
        if spark is None and session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)


def _warm_up(
    spark: SparkSession, processes: Mapping[str, ContenderProcess], work: Path, options: Options
) -> None:
    """One untimed run of each contender on a tiny table, so no timed run pays for JIT start-up."""
    tiny = build_input_table(work / "input", 4, 4_000, options.seed, options.codec)
    if options.hudi != DEFAULT_HUDI:
        tiny = upgrade_to_version_9(spark, tiny)
    settings = plan_settings(options, "HILBERT", "DIRECT")
    for name, process in processes.items():
        copy = fresh_copy(tiny, work / name)
        process.call(
            IN_CHILD[name], base=str(copy.base), settings=settings, hudi_only=options.hudi_only_settings
        )
    shutil.rmtree(work, ignore_errors=True)


def _fail_on_rows(layout: str, method: str, expected: RowDigest, digests: Mapping[str, RowDigest]) -> None:
    wrong = {name: d.text for name, d in digests.items() if d != expected}
    raise RuntimeError(
        f"clustering {layout} {method}: Hudi reads other rows than the input's ({expected.text}) from {wrong}"
    )


def _spread(sizes: Sequence[int], target: int) -> dict[str, float | None]:
    if not sizes:
        return {"min_mb": None, "max_mb": None, "min_to_target": None, "max_to_target": None}
    return {
        "min_mb": round(min(sizes) / MB, 3),
        "max_mb": round(max(sizes) / MB, 3),
        "min_to_target": round(min(sizes) / target, 3),
        "max_to_target": round(max(sizes) / target, 3),
    }


def _payload(
    options: Options,
    source: InputTable,
    runs: Sequence[Contender],
    floor: Mapping[str, float],
    command: str | None,
) -> dict[str, Any]:
    target = options.target_file_mb * MB
    figures = []
    for run in runs:
        figures.append(
            {
                "contender": run.contender,
                "layout": run.layout,
                "method": run.method,
                "seconds": round(run.seconds, 3),
                "round_seconds": [round(s, 3) for s in run.round_seconds],
                "seconds_spread": Spread.of(run.round_seconds).as_json(),
                "round_peak_rss_mb": [peak_mb([b]) for b in run.round_peak_rss_bytes],
                "peak_rss_mb": peak_mb(run.round_peak_rss_bytes),
                "round_peak_file_rss_mb": [peak_mb([b]) for b in run.round_peak_file_rss_bytes],
                "peak_file_rss_mb": _file_part_of_peak(run),
                "input_mb_per_s": round(run.mb_per_s, 3),
                "instant_time": run.instant_time,
                "plan_groups": len(run.plan_groups),
                "plan_group_file_ids": run.plan_groups,
                "plan_output_file_groups": run.output_groups_planned,
                "output_files": len(run.output_sizes),
                "output_mb": round(sum(run.output_sizes) / MB, 3),
                "output_file_sizes": run.output_sizes,
                **_spread(run.output_sizes, target),
                "rows_read_by_hudi": run.rows_read_by_hudi,
                "rows_scanned": {k: round(v, 1) for k, v in run.rows_scanned.items()},
            }
        )
    comparisons = []
    for layout, method in options.layouts:
        pair = {r.contender: r for r in runs if (r.layout, r.method) == (layout, method)}
        hudi, ours = pair["hudi"], pair["ours"]
        comparisons.append(
            {
                "layout": layout,
                "method": method,
                "ours_over_hudi_throughput": round(ours.mb_per_s / hudi.mb_per_s, 3)
                if hudi.mb_per_s
                else None,
                "ours_over_floor_seconds": round(ours.seconds / floor["seconds"], 3),
                "hudi_over_floor_seconds": round(hudi.seconds / floor["seconds"], 3),
                "same_plan_groups": hudi.plan_groups == ours.plan_groups,  # file ids of every group
                "same_output_file_groups": hudi.output_groups_planned == ours.output_groups_planned,
                "rows_scanned_ours_over_hudi": {
                    k: round(ours.rows_scanned[k] / v, 3) if v else None for k, v in hudi.rows_scanned.items()
                },
            }
        )
    return {
        "command": command or f"bench.hudi_clustering.run({options})",
        "options": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in asdict(options).items()
            if k != "results_dir"
        },
        "input": {"files": len(source.files), "rows": source.rows, "mb": round(source.bytes / MB, 3)},
        "hudi": options.hudi,
        "hudi_only_settings": options.hudi_only_settings,
        "predicates": {p.key: p.label for p in PREDICATES},
        "runs": figures,
        "comparisons": comparisons,
        "floor": {k: round(v, 3) for k, v in floor.items()},
    }


def _print(payload: Mapping[str, Any]) -> None:
    rows = [
        [
            r["contender"], r["layout"], r["method"], r["seconds"], r["input_mb_per_s"], r["plan_groups"],
            r["output_files"], r["min_to_target"], r["max_to_target"], r["rows_read_by_hudi"],
        ]
        for r in payload["runs"]
    ]  # fmt: skip
    headers = [
        "contender",
        "layout",
        "method",
        "s",
        "MB/s",
        "groups",
        "files",
        "min/target",
        "max/target",
        "rows",
    ]
    print_table(f"Clustering, ours vs Hudi ({payload['input']['rows']:,} rows)", headers, rows)
    floor = payload["floor"]
    compare = [
        [
            c["layout"], c["method"], c["ours_over_hudi_throughput"], c["ours_over_floor_seconds"],
            c["hudi_over_floor_seconds"], "yes" if c["same_plan_groups"] else "NO",
            *(c["rows_scanned_ours_over_hudi"].get(k) for k in payload["predicates"]),
        ]
        for c in payload["comparisons"]
    ]  # fmt: skip
    print_table(
        f"Ours vs Hudi (pyarrow floor: {floor['seconds']:.1f}s on {floor['processes']:.0f} cores)",
        ["layout", "method", "ours/Hudi MB/s", "ours/floor s", "Hudi/floor s", "same groups"]
        + [f"scanned {k} ours/Hudi" for k in payload["predicates"]],
        compare,
    )


def _file_part_of_peak(run: Contender) -> float:
    """The file-backed part of the round whose peak was highest (`peak_rss_mb`'s round)."""
    if not run.round_peak_file_rss_bytes:
        return 0.0
    highest = max(range(len(run.round_peak_rss_bytes)), key=run.round_peak_rss_bytes.__getitem__)
    return peak_mb([run.round_peak_file_rss_bytes[highest]])


def _layouts(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`LINEAR`, `ZORDER` (DIRECT), `ZORDER:SAMPLE`, ...; LINEAR ignores the curve method."""
    out = []
    for value in values:
        layout, _, method = value.upper().partition(":")
        if layout not in ("LINEAR", "ZORDER", "HILBERT") or method not in ("", "DIRECT", "SAMPLE"):
            raise argparse.ArgumentTypeError(f"unknown layout {value!r}")
        out.append((layout, method or "DIRECT"))
    return tuple(dict.fromkeys(out))


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, "400k rows in 100 files, DIRECT layouts only")
    add_input_size_options(parser)
    parser.add_argument("--group-mb", type=int, help="hoodie.clustering.plan.strategy.max.bytes.per.group")
    parser.add_argument("--layouts", nargs="+", help="LINEAR ZORDER[:SAMPLE] HILBERT[:SAMPLE] ...")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON and chart go")
    parser.add_argument(
        "--standalone",
        action="store_true",
        help="run both contenders on a standalone Spark cluster (master + worker on loopback)",
    )
    parser.add_argument(
        "--hudi",
        choices=tuple(HUDI_BUNDLES),
        default=DEFAULT_HUDI,
        help="1.1: Hudi 1.1.1 on the input upgraded to table version 9 with the record index",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per layout and contender (medians reported)"
    )
    parser.add_argument(
        "--results-suffix",
        default="",
        help="the result file is hudi-clustering[-v9]-<suffix>.json (e.g. default-sizes, standalone)",
    )
    args = parser.parse_args(list(argv))
    if (status := rerun_without_jvm(NAME, argv)) is not None:
        return status
    base = Options.quick() if args.quick else Options.full()
    options = Options(
        **input_sizes(args, base),
        layouts=_layouts(args.layouts) if args.layouts else base.layouts,
        group_mb=args.group_mb or base.group_mb,
        work_dir=args.work_dir,
        results_dir=args.results_dir,
        standalone=args.standalone,
        hudi=args.hudi,
        rounds=args.rounds,
        results_suffix=args.results_suffix,
    )
    run(options, command=command_line(NAME, argv))
    return 0
