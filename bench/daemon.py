"""Daemon overhead benchmark: 1,000 idle tables in one daemon, its tick cost, CPU, memory and reaction time.

Every table is a Hudi 0.14/0.15 copy-on-write table (version 6), written directly in Hudi's format with
the project's codecs (base files are sparse placeholders: the daemon reads only names and sizes):
    60 inserts, a completed clustering (replacecommit with its CLUSTER plan), a completed clean,
    39 inserts  -> 101 active instants, 303 instant files in `.hoodie`, 4 partitions.
The triggers sit just above what the timelines hold (hoodie.clustering.async.max.commits = 40,
hoodie.clean.max.commits = 41), so nothing is due. All tables are registered in one YAML config and
served by `run_daemon` (the code behind `hudi-table-service run`) in a child process, whose ticks are
timed by wrapping `Daemon.run_iteration` and whose storage calls are counted per tick; the parent
reads the child's CPU time and memory from /proc. Spark is never started: the executor is replaced by
one that records any request for a session (and refuses it), so a request while idle is reported.

Phases: start and the cold round (first tick of every table and service); a steady window of whole
poll intervals (tick time, CPU share, RSS, listings and decodes per tick; nothing may be planned);
then a few tables receive the commit that crosses the clustering threshold, at staggered moments, and
the delay until `.replacecommit.requested` appears is measured from the two files' modification times.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from bench.common import hudi_record_schema, own_peak_rss_kb, print_table, stopwatch, write_results
from bench.contenders import load_average
from bench.fixtures import clean_that_deleted_nothing, cow_table_properties, write_partition_metafile
from service.daemon.runtime import TableService
from service.table import codecs
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.data_files import base_file_name
from service.table.instant import Action, Instant, State
from service.table.timeline import format_instant_time

NAME = "daemon"
T = TypeVar("T")
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
WRITE_TOKEN = "0-0-0"
PARTITIONS = 4
COMMITS_BEFORE_CLUSTERING = 60
COMMITS_AFTER_CLUSTERING = 39
CLUSTERING_MAX_COMMITS = COMMITS_AFTER_CLUSTERING + 1  # one more commit crosses it
CLEAN_MAX_COMMITS = COMMITS_AFTER_CLUSTERING + 2  # the crossing commit does not trigger a clean
BASE_FILE_BYTES = 64 * 1024  # sparse: a size for the planner without writing data
TARGET_TICK_MS = 5.0
TARGET_RSS_MB = 300.0
REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.dumps(
    hudi_record_schema("bench_daemon", [("id", "string"), ("p", "string"), ("v", "long")], nullable=True)
)


@dataclass(frozen=True)
class Shape:
    tables: int
    poll_seconds: float
    steady_rounds: int  # the steady window is this many whole poll intervals
    crossing_tables: int  # tables that receive the commit crossing the clustering threshold

    @property
    def active_instants(self) -> int:
        return COMMITS_BEFORE_CLUSTERING + COMMITS_AFTER_CLUSTERING + 2

    @property
    def base_files_per_table(self) -> int:
        return PARTITIONS + COMMITS_AFTER_CLUSTERING  # the clustering's outputs + later inserts


FULL = Shape(tables=1000, poll_seconds=20.0, steady_rounds=3, crossing_tables=3)
QUICK = Shape(tables=50, poll_seconds=2.0, steady_rounds=3, crossing_tables=2)
# `--fleet` (issue 49): ten thousand tables, then three replicas sharing them; a round of 40,000
# ticks needs a longer poll interval than a thousand tables do.
FLEET = Shape(tables=10_000, poll_seconds=60.0, steady_rounds=3, crossing_tables=3)
FLEET_REPLICAS = 3
TARGET_FLEET_RSS_MB = 1024.0  # above 1,000 tables: at most 1 GB at 10,000


def rss_target_mb(shape: Shape) -> float:
    return TARGET_RSS_MB if shape.tables <= FULL.tables else TARGET_FLEET_RSS_MB


# ---------------------------------------------------------------------------------------------- tables
def _instant_time(minute: int) -> str:
    return format_instant_time(EPOCH + timedelta(minutes=minute))


def _table_name(index: int) -> str:
    return f"bench_daemon_{index:04d}"


def _file_id(table: int, n: int) -> str:
    return f"{table:08x}-{n:04x}-4000-8000-{table * 10_000 + n:012x}-0"


@functools.cache
def _parquet_footer() -> bytes:
    """The tail of a real Parquet file of the table's columns (footer, its length, `PAR1`).

    Scheduling reads one input file's schema from its footer (the clustering preflight); a sparse
    file that ends with this tail answers that read without the benchmark writing row data. Its
    row-group offsets point nowhere: the benchmark refuses Spark, so no row is ever read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: pa.array([], pa.string()) for name in (*HOODIE_META_FIELDS, "id", "p")}
    columns["v"] = pa.array([], pa.int64())
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    data = sink.getvalue().to_pybytes()
    footer_length = int.from_bytes(data[-8:-4], "little")
    return data[-(footer_length + 8) :]


def _write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


class _TableBuilder:
    """One table's files, written directly (no pyarrow filesystem, no exclusive-create dance)."""

    def __init__(self, base: Path, index: int) -> None:
        self.base = base
        self.index = index
        self.hoodie = base / ".hoodie"
        self.minute = 0
        self.files = 0
        self.latest: dict[str, list[tuple[str, str]]] = {}  # partition -> [(file id, instant)]

    def build(self) -> None:
        self.hoodie.mkdir(parents=True)
        _write(self.hoodie / "hoodie.properties", cow_table_properties(_table_name(self.index), "v", "p"))
        for p in range(PARTITIONS):
            directory = self.base / _partition(p)
            directory.mkdir()
            write_partition_metafile(self.base, _partition(p), _instant_time(1))
        for _ in range(COMMITS_BEFORE_CLUSTERING):
            self.insert(self._next())
        clustering_time = self._next()
        self._clustering(clustering_time)
        self._clean(self._next(), last_completed=clustering_time)
        for _ in range(COMMITS_AFTER_CLUSTERING):
            self.insert(self._next())

    def _next(self) -> str:
        self.minute += 1
        return _instant_time(self.minute)

    def _base_file(self, partition: str, file_id: str, instant_time: str) -> codecs.WriteStat:
        name = base_file_name(file_id, WRITE_TOKEN, instant_time)
        fd = os.open(self.base / partition / name, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, BASE_FILE_BYTES)
            footer = _parquet_footer()
            os.pwrite(fd, b"PAR1", 0)
            os.pwrite(fd, footer, BASE_FILE_BYTES - len(footer))
        finally:
            os.close(fd)
        self.latest.setdefault(partition, []).append((file_id, instant_time))
        return codecs.WriteStat(
            file_id=file_id,
            path=f"{partition}/{name}",
            prev_commit=codecs.NULL_COMMIT,
            num_writes=100,
            num_inserts=100,
            total_write_bytes=BASE_FILE_BYTES,
            partition_path=partition,
            file_size_in_bytes=BASE_FILE_BYTES,
        )

    def insert(self, instant_time: str, into: Path | None = None) -> Path:
        """One insert of a new file group; returns the completed instant file (written last)."""
        partition = _partition(self.files % PARTITIONS)
        stat = self._base_file(partition, _file_id(self.index, self.files), instant_time)
        self.files += 1
        meta = codecs.CommitMetadata(
            partition_to_write_stats={partition: (stat,)},
            extra_metadata={codecs.SCHEMA_KEY: SCHEMA},
            operation_type=codecs.WriteOperationType.INSERT,
        )
        return self._instant(
            Instant(instant_time, Action.COMMIT, State.REQUESTED), b"", b"", codecs.encode(meta)
        )

    def _instant(self, requested: Instant, plan: bytes, inflight: bytes, completed: bytes) -> Path:
        _write(self.hoodie / requested.file_name, plan)
        _write(self.hoodie / requested.with_state(State.INFLIGHT).file_name, inflight)
        # Readers must never see a partial completed file: write aside, then rename into place.
        final = self.hoodie / requested.with_state(State.COMPLETED).file_name
        staging = self.base / f".staging-{final.name}"
        _write(staging, completed)
        os.replace(staging, final)
        return final

    def _clustering(self, instant_time: str) -> None:
        """Cluster every file group written so far into one file group per partition."""
        qualify = f"file:{self.base}/"
        groups = []
        replaced: dict[str, tuple[str, ...]] = {}
        stats: dict[str, tuple[codecs.WriteStat, ...]] = {}
        for partition, slices in sorted(self.latest.items()):
            infos = tuple(
                codecs.SliceInfo(
                    data_file_path=qualify + f"{partition}/{base_file_name(fid, WRITE_TOKEN, t)}",
                    delta_file_paths=(),
                    file_id=fid,
                    partition_path=partition,
                    bootstrap_file_path="",
                )
                for fid, t in slices
            )
            groups.append(codecs.ClusteringGroup(slices=infos, num_output_file_groups=1))
            replaced[partition] = tuple(fid for fid, _ in slices)
        self.latest = {}
        for partition in sorted(replaced):
            stat = self._base_file(partition, _file_id(self.index, 9000 + len(stats)), instant_time)
            stats[partition] = (stat,)
        plan = codecs.RequestedReplaceMetadata(
            operation_type=codecs.CLUSTER_OPERATION,
            clustering_plan=codecs.ClusteringPlan(
                input_groups=tuple(groups),
                strategy=codecs.ClusteringStrategy(
                    strategy_class_name="org.apache.hudi.client.clustering.run.strategy."
                    "SparkSortAndSizeExecutionStrategy",
                    strategy_params={},
                ),
                extra_metadata={},
                preserve_hoodie_metadata=True,
            ),
            extra_metadata={},
        )
        meta = codecs.ReplaceCommitMetadata(
            partition_to_write_stats=stats,
            extra_metadata={codecs.SCHEMA_KEY: SCHEMA},
            operation_type=codecs.WriteOperationType.CLUSTER,
            partition_to_replace_file_ids=replaced,
        )
        self._instant(
            Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED),
            codecs.encode(plan),
            b"",
            codecs.encode(meta),
        )
        # The clean that follows deleted the replaced files: they are not on disk any more.
        for partition, file_ids in replaced.items():
            for name in os.listdir(self.base / partition):
                if any(name.startswith(fid) for fid in file_ids):
                    os.unlink(self.base / partition / name)

    def _clean(self, instant_time: str, last_completed: str) -> None:
        ectr = _instant_time(self.minute - 11)
        plan, meta = clean_that_deleted_nothing(instant_time, ectr, last_completed, COMMITS_BEFORE_CLUSTERING)
        encoded = codecs.encode(plan)
        self._instant(
            Instant(instant_time, Action.CLEAN, State.REQUESTED), encoded, encoded, codecs.encode(meta)
        )


def _partition(p: int) -> str:
    return f"p={p}"


def build_table(base: Path, index: int) -> None:
    """Table number `index` at `base` (which must not exist yet)."""
    _TableBuilder(base, index).build()


def append_commit(base: Path, index: int, now: datetime) -> Path:
    """A writer's next insert on a built table, timed `now`; returns its completed instant file."""
    builder = _TableBuilder(base, index)
    builder.files = 10_000 + int(now.timestamp() * 1000) % 10_000  # a fresh file id
    return builder.insert(format_instant_time(now))


def _table_dir(work: Path, index: int) -> Path:
    return work / "tables" / _table_name(index)


def write_config(path: Path, work: Path, shape: Shape, replica: dict[str, Any] | None = None) -> None:
    """One daemon config registering every table (JSON is YAML); `replica`: this replica's `cluster`
    and `lock` sections (`bench.daemon_replicas`)."""
    document = {
        "daemon": {
            "poll_interval_seconds": shape.poll_seconds,
            "max_concurrent_clusterings": max(1, shape.crossing_tables),
            "shutdown_grace_seconds": 10,
            "metrics": {"host": "127.0.0.1", "port": 0},
            "logging": {"level": "WARNING"},
            **(replica or {}),
        },
        "defaults": {
            "hoodie.clustering.async.max.commits": CLUSTERING_MAX_COMMITS,
            "hoodie.clean.max.commits": CLEAN_MAX_COMMITS,
            "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "hoodie.cleaner.commits.retained": 10,
            # Each table's 100 commits stay on the active timeline: archival (on by default) would
            # archive them once, and this benchmark measures what an idle tick costs.
            "hoodie.keep.min.commits": 200,
            "hoodie.keep.max.commits": 300,
        },
        "tables": [
            {"name": _table_name(i), "base_path": str(_table_dir(work, i))} for i in range(shape.tables)
        ],
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------- the child
# Counters of the tick running on this thread (None outside ticks).
_tick_counters = threading.local()
COUNTED = ("hoodie_listings", "other_listings", "reads", "stats", "decodes", "instant_files_written")


def _count(what: str) -> None:
    counters: dict[str, int] | None = getattr(_tick_counters, "value", None)
    if counters is not None:
        counters[what] += 1


def _counting(original: Callable[..., Any], classify: Callable[..., str]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _count(classify(*args))  # classified by the positional arguments (keywords are options)
        return original(*args, **kwargs)

    return wrapper


# A tick's record, kept as a tuple until the stats are written: the daemon's memory is what is
# measured, and twenty thousand dicts of these would add about 20 MB of the benchmark's own.
TICK_FIELDS = ("table", "service", "start", "start_wall", "wall_s", "cpu_s", "outcome", *COUNTED)


class _Recorder:
    def __init__(self) -> None:
        self.ticks: list[tuple[Any, ...]] = []
        self.spark_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.started_at: float | None = None
        # Kept as ticks end, so the progress report costs the daemon no pass over every tick.
        self.per_key: dict[tuple[str, str], int] = {}
        self.serving: dict[str, bool] = {}  # table -> its latest tick ran here (not `not_held`)
        self.changes = 0  # of `serving`

    def add(self, record: tuple[Any, ...]) -> None:
        table, service, outcome = record[0], record[1], record[6]
        with self.lock:
            self.ticks.append(record)
            key = (table, service)
            self.per_key[key] = self.per_key.get(key, 0) + 1
            served = outcome != "not_held"
            if self.serving.get(table) is not served:
                self.serving[table] = served
                self.changes += 1


def serve(config_path: Path, stats_path: Path, progress_path: Path) -> int:
    """The child: `run_daemon(config)` with instrumented ticks; stats written when it stops (SIGTERM)."""
    import service.daemon as daemon_module
    import service.daemon.scheduler as scheduler_module
    import service.table.codecs as codecs_module
    import service.table.timeline_facts as facts_module
    from service.executor import SparkExecutor
    from service.table.storage import Storage

    recorder = _Recorder()

    def listing_kind(_self: Storage, rel: str) -> str:
        return "hoodie_listings" if rel.strip("/") == ".hoodie" else "other_listings"

    Storage.list_dir = _counting(Storage.list_dir, listing_kind)  # type: ignore[method-assign]
    Storage.list_file_names = _counting(Storage.list_file_names, listing_kind)  # type: ignore[method-assign]
    Storage.walk_files = _counting(Storage.walk_files, lambda *_: "other_listings")  # type: ignore[method-assign]
    Storage.read_bytes = _counting(Storage.read_bytes, lambda *_: "reads")  # type: ignore[method-assign]
    Storage.exists = _counting(Storage.exists, lambda *_: "stats")  # type: ignore[method-assign]
    Storage.status = _counting(Storage.status, lambda *_: "stats")  # type: ignore[method-assign]
    Storage.create_if_absent = _counting(  # type: ignore[method-assign]
        Storage.create_if_absent, lambda *_: "instant_files_written"
    )
    facts_module.decode = _counting(facts_module.decode, lambda *_: "decodes")
    codecs_module.decode = _counting(codecs_module.decode, lambda *_: "decodes")

    class NoSparkExecutor(SparkExecutor):
        """Records every request for the Spark session and refuses it: this benchmark never starts Spark."""

        @property
        def session(self) -> Any:
            counters = getattr(_tick_counters, "value", None)
            self._refuse(counters.get("table") if counters else None)

        def run_group(self, job: Any) -> Any:
            self._refuse(job.table_name)

        def _refuse(self, table: str | None) -> NoReturn:
            with recorder.lock:
                recorder.spark_requests.append({"at_wall": time.time(), "table": table})
            raise RuntimeError("bench.daemon: Spark is not started by this benchmark")

    scheduler_module.SparkExecutor = NoSparkExecutor  # type: ignore[misc]
    original = daemon_module.Daemon.run_iteration

    def timed(self: Any, runtime: Any, service: Any, now: datetime) -> Any:
        counters: dict[str, Any] = dict.fromkeys(COUNTED, 0)
        counters["table"] = runtime.name
        _tick_counters.value = counters
        started, started_wall, cpu_started = time.monotonic(), time.time(), time.thread_time()
        try:
            outcome = original(self, runtime, service, now)
        finally:
            wall, cpu = time.monotonic() - started, time.thread_time() - cpu_started
            _tick_counters.value = None
        record = (
            runtime.name, service.value, started, started_wall, wall, cpu, outcome.value,
            *(counters[k] for k in COUNTED),
        )  # fmt: skip
        recorder.add(record)
        return outcome

    daemon_module.Daemon.run_iteration = timed  # type: ignore[method-assign]
    stop_progress = threading.Event()
    progress = threading.Thread(
        target=_report_progress, args=(recorder, progress_path, stop_progress), daemon=True
    )
    progress.start()
    # As `hudi-table-service run` configures logging (its level then comes from the config).
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    recorder.started_at = time.monotonic()
    status = daemon_module.run_daemon(config_path, hard_exit=False)
    stop_progress.set()
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    with recorder.lock:
        stats = {
            "status": status,
            "started_at": recorder.started_at,
            "ticks": [dict(zip(TICK_FIELDS, t, strict=True)) for t in recorder.ticks],
            "spark_requests": recorder.spark_requests,
            "maxrss_kb": own_peak_rss_kb(),
            "cpu_s": usage.ru_utime + usage.ru_stime,
        }
    stats_path.write_text(json.dumps(stats), encoding="utf-8")
    return status


def _report_progress(recorder: _Recorder, path: Path, stop: threading.Event) -> None:
    """Ticks done per (table, service), so the parent knows when the cold round is over; and in
    `served_path(path)`, rewritten when it changed, the tables this daemon serves (its replica's share)."""
    seen_changes = 0
    while not stop.wait(0.25):
        served: list[str] | None = None
        with recorder.lock:
            ticks = len(recorder.ticks)
            keys = len(recorder.per_key)
            min_ticks = min(recorder.per_key.values(), default=0)
            if recorder.changes != seen_changes:
                seen_changes = recorder.changes
                served = [t for t, here in recorder.serving.items() if here]
        if served is not None:
            _write_atomically(served_path(path), json.dumps(sorted(served)))
        _write_atomically(path, json.dumps({"ticks": ticks, "keys": keys, "min_ticks": min_ticks}))


def served_path(progress: Path) -> Path:
    return progress.with_name(progress.stem + ".served.json")


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------- the parent
@dataclass(frozen=True)
class ProcSample:
    at: float  # monotonic
    cpu_s: float
    rss_kb: int
    hwm_kb: int
    threads: int


def sample_process(pid: int) -> ProcSample | None:
    """The daemon process's CPU time (utime + stime) and memory, from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    values = {}
    for line in status.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "Threads"):
            values[key] = int(rest.split()[0])
    return ProcSample(
        time.monotonic(), cpu, values.get("VmRSS", 0), values.get("VmHWM", 0), values.get("Threads", 0)
    )


class _Sampler(threading.Thread):
    def __init__(self, pid: int, every: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[ProcSample] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            sample = sample_process(self.pid)
            if sample is not None:
                self.samples.append(sample)
            self.halt.wait(self.every)


def _read_progress(path: Path) -> dict[str, Any]:
    try:
        loaded: dict[str, int] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    except (OSError, ValueError):
        return {}


def _plan_files(hoodie: Path) -> set[str]:
    return {n for n in os.listdir(hoodie) if n.endswith((".replacecommit.requested", ".clean.requested"))}


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "mean": statistics.fmean(ordered),
        "p50": statistics.median(ordered),
        "p99": p99,
        "max": ordered[-1],
    }


def _ms(stats: dict[str, float | None]) -> dict[str, float | None]:
    return {k: (v * 1000 if v is not None else None) for k, v in stats.items()}


def summarise_ticks(ticks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per service and per table (its clustering + cleaning tick of the same round): ms and counters."""
    by_service: dict[str, list[dict[str, Any]]] = {}
    by_table: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for t in sorted(ticks, key=lambda t: t["start"]):
        by_service.setdefault(t["service"], []).append(t)
        by_table.setdefault(t["table"], {}).setdefault(t["service"], []).append(t)
    per_table_cpu, per_table_wall = [], []
    for services in by_table.values():
        rounds = zip(*services.values(), strict=False)  # the k-th tick of each service
        for pair in rounds:
            per_table_cpu.append(sum(t["cpu_s"] for t in pair))
            per_table_wall.append(sum(t["wall_s"] for t in pair))
    services_out = {}
    for service, items in sorted(by_service.items()):
        services_out[service] = {
            "ticks": len(items),
            "cpu_ms": _ms(_percentiles([t["cpu_s"] for t in items])),
            "wall_ms": _ms(_percentiles([t["wall_s"] for t in items])),
            **{f"{k}_per_tick": statistics.fmean(t[k] for t in items) for k in COUNTED},
            "outcomes": sorted({t["outcome"] for t in items}),
        }
    return {
        "ticks": len(ticks),
        "table_ticks": len(per_table_cpu),
        "per_table_cpu_ms": _ms(_percentiles(per_table_cpu)),
        "per_table_wall_ms": _ms(_percentiles(per_table_wall)),
        "services": services_out,
    }


def _default_parent(shape: Shape) -> Path | None:
    """tmpfs when there is one with room: 300,000 small files are written in seconds there, while a
    busy shared disk can take a millisecond per file. The daemon's listings and reads come from the
    page cache either way. Room is bytes and inodes: 10,000 tables are 3.5 million files."""
    shm = Path("/dev/shm")
    try:
        usage = shutil.disk_usage(shm)
        inodes = os.statvfs(shm).f_favail
    except OSError:
        return None
    files = shape.tables * (3 * shape.active_instants + 60)  # instant files, base files, slack
    return shm if usage.free > 4 * 1024**3 and inodes > files else None


@contextmanager
def _work_dir(given: Path | None, shape: Shape) -> Iterator[Path]:
    parent = given if given is not None else _default_parent(shape)
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="bench-daemon-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _build_range(work: Path, indexes: range) -> None:
    for i in indexes:
        build_table(_table_dir(work, i), i)


def build_tables(work: Path, count: int) -> None:
    """Every table, in one process per core (building is file creation and encoding, not shared state)."""
    workers = max(1, min(os.cpu_count() or 1, count // 50))
    if workers == 1:
        _build_range(work, range(count))
        return
    context = multiprocessing.get_context("fork")
    chunks = [range(w, count, workers) for w in range(workers)]
    with context.Pool(workers) as pool:
        pool.starmap(_build_range, [(work, chunk) for chunk in chunks])


def wait_until(condition: Callable[[], T], timeout: float, what: str, every: float = 0.05) -> T:
    """`condition()`'s first truthy value, polled every `every` s; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench.daemon: timed out after {timeout:g}s waiting for {what}")
        time.sleep(every)
    return value


def _wait_for_new_plan(hoodie: Path, before: set[str], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        new = sorted(n for n in _plan_files(hoodie) - before if n.endswith(".replacecommit.requested"))
        if new:
            return new
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench.daemon: no clustering plan in {hoodie} after {timeout:g}s")
        time.sleep(0.02)


def _cross_threshold(
    work: Path, shape: Shape, first_table: int, report: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Append the crossing commit to a few tables, spread over one poll interval; time the plans."""
    indexes = list(range(first_table, first_table + shape.crossing_tables))
    before = {i: _plan_files(_table_dir(work, i) / ".hoodie") for i in indexes}
    results: list[dict[str, Any]] = []
    commits: dict[int, Path] = {}
    spacing = shape.poll_seconds / max(1, len(indexes))
    for n, i in enumerate(indexes):
        if n:
            time.sleep(spacing)
        commits[i] = append_commit(_table_dir(work, i), i, datetime.now(UTC))
    for i in indexes:
        hoodie = _table_dir(work, i) / ".hoodie"
        try:
            new = _wait_for_new_plan(hoodie, before[i], 2 * shape.poll_seconds + 30)
        except TimeoutError as exc:
            report(str(exc))
            results.append({"table": _table_name(i), "planned": False})
            continue
        plan = hoodie / sorted(new)[0]
        committed_ns = commits[i].stat().st_mtime_ns
        planned_ns = plan.stat().st_mtime_ns
        delay = (planned_ns - committed_ns) / 1e9
        results.append(
            {
                "table": _table_name(i),
                "planned": True,
                "commit_file": commits[i].name,
                "plan_file": plan.name,
                "committed_at": committed_ns / 1e9,
                "planned_at": planned_ns / 1e9,
                "delay_s": delay,
                "within_poll_interval": delay <= shape.poll_seconds,
            }
        )
    return results


def run(
    quick: bool,
    *,
    shape: Shape | None = None,
    work_dir: Path | None = None,
    results_dir: Path | None = None,
    replicas: int = 0,
    session_timeout_s: float | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build the tables, run the daemon in a child process, measure (then, with `replicas`, the
    replica phase of `bench.daemon_replicas`); print and write `daemon.json`."""
    shape = shape or (QUICK if quick else FULL)
    load_before = load_average()
    with _work_dir(work_dir, shape) as work:
        (work / "tables").mkdir()
        with stopwatch() as build:
            build_tables(work, shape.tables)
        report(
            f"built {shape.tables:,} tables, {shape.active_instants} active instants each "
            f"({build.seconds:.1f}s)"
        )
        config = work / "daemon.yaml"
        write_config(config, work, shape)
        plans_before = sum(len(_plan_files(_table_dir(work, i) / ".hoodie")) for i in range(shape.tables))
        payload = _measure(work, config, shape, report)
        plans_after_idle = payload.pop("_plans_after_idle")
        if replicas:
            from bench import daemon_replicas  # it imports this module

            tables = [_table_name(i) for i in range(shape.tables)]
            lease = session_timeout_s or daemon_replicas.SESSION_TIMEOUT_S
            payload["replicas"] = daemon_replicas.measure(work, shape, tables, replicas, report, lease)
    payload["build_s"], payload["load_before"] = build.seconds, load_before
    payload["work_dir_filesystem"] = "tmpfs" if str(work).startswith("/dev/shm/") else "disk"
    payload["idle"]["plan_files_before"] = plans_before
    payload["idle"]["plan_files_after"] = plans_after_idle
    payload["idle"]["nothing_planned"] = (
        plans_after_idle == plans_before
        and payload["idle"]["instant_files_written"] == 0
        and payload["idle"]["spark_session_requests"] == 0
    )
    payload.update(
        {
            "quick": quick,
            "command": "python -m bench daemon"
            + (" --quick" if quick else "")
            + _shape_flags(shape, quick, replicas),
            "shape": asdict(shape)
            | {
                "active_instants_per_table": shape.active_instants,
                "instant_files_per_table": 3 * shape.active_instants,
                "partitions_per_table": PARTITIONS,
                "base_files_per_table": shape.base_files_per_table,
            },
            "triggers": {
                "hoodie.clustering.async.max.commits": CLUSTERING_MAX_COMMITS,
                "hoodie.clean.max.commits": CLEAN_MAX_COMMITS,
                "commits_since_last_clustering": COMMITS_AFTER_CLUSTERING,
                "commits_since_last_clean": COMMITS_AFTER_CLUSTERING,
            },
        }
    )
    payload["targets"] = _targets(payload, shape)
    path = write_results(NAME if shape != FLEET else f"{NAME}-fleet", payload, results_dir)
    _print(payload)
    report(f"results: {path}")
    return payload


@dataclass(frozen=True)
class Child:
    """A daemon run by `serve` in a process of its own, and the files it reports through."""

    process: subprocess.Popen[bytes]
    stats: Path
    progress: Path
    log: Path

    def progress_now(self) -> dict[str, Any]:
        return _read_progress(self.progress)

    def served(self) -> set[str]:
        try:
            return set(json.loads(served_path(self.progress).read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return set()

    def stop(self) -> dict[str, Any]:
        """SIGTERM, wait (SIGKILL after a minute); its stats, or RuntimeError with its log's tail."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.returncode != 0 or not self.stats.exists():
            tail = self.log.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"bench.daemon: the daemon failed (exit {self.process.returncode}):\n{tail}")
        stats: dict[str, Any] = json.loads(self.stats.read_text(encoding="utf-8"))
        return stats


def launch(work: Path, config: Path, tag: str = "") -> Child:
    """`serve(config)` in a child process; its stats, progress and log files under `work` (`tag` apart)."""
    suffix = f"-{tag}" if tag else ""
    child_files = [work / f"{name}{suffix}{ext}" for name, ext in (("stats", ".json"), ("progress", ".json"))]
    log_path = work / f"daemon{suffix}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    command = [
        sys.executable, "-m", "bench.daemon",
        "--serve", str(config), "--stats", str(child_files[0]), "--progress", str(child_files[1]),
    ]  # fmt: skip
    with open(log_path, "wb") as log:  # the child keeps its copy
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return Child(process, child_files[0], child_files[1], log_path)


def services_per_table() -> int:
    """Jobs per table: every service the tables keep on, all but the opt-in repair."""
    return len([s for s in TableService if s is not TableService.REPAIR])


def _measure(work: Path, config: Path, shape: Shape, report: Callable[[str], None]) -> dict[str, Any]:
    expected_keys = services_per_table() * shape.tables
    launched = time.monotonic()
    daemon = launch(work, config)
    child, progress_path = daemon.process, daemon.progress
    sampler = _Sampler(child.pid, 0.25)
    sampler.start()
    try:
        cold_timeout = 60 + shape.tables * 0.2
        wait_until(
            lambda: (
                _read_progress(progress_path).get("keys", 0) >= expected_keys
                and _read_progress(progress_path).get("min_ticks", 0) >= 1
            ),
            cold_timeout,
            "the cold round",
        )
        cold_done = time.monotonic()
        report(f"cold round done {cold_done - launched:.1f}s after launch")
        # Steady window: whole poll intervals, starting one interval after the cold round.
        time.sleep(min(shape.poll_seconds, 5.0))
        window_load = {"load_before": load_average()}
        start = sample_process(child.pid)
        time.sleep(shape.steady_rounds * shape.poll_seconds)
        end = sample_process(child.pid)
        window_load["load_after"] = load_average()
        if start is None or end is None:
            raise RuntimeError(f"bench.daemon: the daemon exited early; see {daemon.log}")
        plans_after_idle = sum(len(_plan_files(_table_dir(work, i) / ".hoodie")) for i in range(shape.tables))
        idle_end, idle_end_wall = time.monotonic(), time.time()
        crossing = _cross_threshold(work, shape, 0, report)
        final = sample_process(child.pid)
    finally:
        terminated = time.monotonic()
        try:
            stats = daemon.stop()
        finally:
            sampler.halt.set()
            sampler.join()
    log_text = daemon.log.read_text(encoding="utf-8", errors="replace")
    ticks = stats["ticks"]
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for t in sorted(ticks, key=lambda t: t["start"]):
        first.setdefault((t["table"], t["service"]), t)
    cold_ticks = list(first.values())
    steady_ticks = [t for t in ticks if start.at <= t["start"] < end.at]
    idle_ticks = [t for t in ticks if t["start"] < idle_end]
    window = end.at - start.at
    cpu = end.cpu_s - start.cpu_s
    rounds = len(steady_ticks) / expected_keys if expected_keys else 0.0
    # The daemon's memory while it runs: after SIGTERM the child turns its tick records into JSON.
    samples = [s for s in sampler.samples if s.at < terminated]
    memory_at = final or end
    crossing_tables = {c["table"] for c in crossing}
    crossing_spark = [r for r in stats["spark_requests"] if r["table"] in crossing_tables]
    spark_before_plan = [
        r
        for r in crossing_spark
        for c in crossing
        if c["table"] == r["table"] and c.get("planned") and r["at_wall"] < c["planned_at"]
    ]
    for c in crossing:
        scheduling = [
            t
            for t in ticks
            if t["table"] == c["table"] and t["service"] == "clustering" and t["instant_files_written"]
        ]
        if c.get("planned") and scheduling:
            tick = min(scheduling, key=lambda t: t["start"])
            c["tick_start_to_plan_s"] = c["planned_at"] - tick["start_wall"]
            c["scheduling_tick_decodes"] = tick["decodes"]
    return {
        "cold": summarise_ticks(cold_ticks)
        | {
            "round_s": max(t["start"] + t["wall_s"] for t in cold_ticks) - stats["started_at"],
            "decodes": sum(t["decodes"] for t in cold_ticks),
        },
        "steady": summarise_ticks(steady_ticks)
        | {
            **window_load,
            "window_s": window,
            "rounds": rounds,
            "process_cpu_s": cpu,
            "process_cpu_share_of_one_core": cpu / window if window else None,
            "process_cpu_ms_per_table_round": (cpu / (rounds * shape.tables) * 1000) if rounds else None,
            "decodes": sum(t["decodes"] for t in steady_ticks),
            "partition_listings": sum(t["other_listings"] for t in steady_ticks),
        },
        "memory": {
            "rss_mb_end_of_steady_window": end.rss_kb / 1024,
            "rss_mb_end": memory_at.rss_kb / 1024,
            "peak_rss_mb": max([memory_at.hwm_kb, *(s.hwm_kb for s in samples)]) / 1024,
            "threads_peak": max([end.threads, *(s.threads for s in samples)]),
            "child_maxrss_mb": stats["maxrss_kb"] / 1024,
        },
        "idle": {
            "ticks": len(idle_ticks),
            "instant_files_written": sum(t["instant_files_written"] for t in idle_ticks),
            "spark_session_requests": sum(1 for r in stats["spark_requests"] if r["at_wall"] < idle_end_wall),
            # A copy-on-write table's compaction tick is `not_applicable`: nothing to do, not a failure.
            "failed_ticks": sum(1 for t in idle_ticks if t["outcome"] not in ("done", "not_applicable")),
        },
        "threshold": {
            "tables": crossing,
            "all_planned": all(c.get("planned") for c in crossing),
            "max_delay_s": max((c["delay_s"] for c in crossing if c.get("planned")), default=None),
            "spark_requests": len(crossing_spark),
            "spark_needed_to_schedule": bool(spark_before_plan),
            "log_errors": [line for line in log_text.splitlines() if "ERROR" in line][:10],
        },
        "_plans_after_idle": plans_after_idle,
    }


def _shape_flags(shape: Shape, quick: bool, replicas: int) -> str:
    if shape == FLEET:
        return " --fleet" + (f" --replicas {replicas}" if replicas != FLEET_REPLICAS else "")
    default = QUICK if quick else FULL
    flags = f" --tables {shape.tables}" if shape.tables != default.tables else ""
    flags += f" --poll-seconds {shape.poll_seconds:g}" if shape.poll_seconds != default.poll_seconds else ""
    return flags + (f" --replicas {replicas}" if replicas else "")


def _targets(payload: dict[str, Any], shape: Shape) -> dict[str, Any]:
    steady = payload["steady"]["per_table_cpu_ms"]
    tick_met = (
        steady["mean"] is not None and steady["mean"] <= TARGET_TICK_MS and steady["p99"] <= TARGET_TICK_MS
    )
    rss = payload["memory"]["peak_rss_mb"]
    delay = payload["threshold"]["max_delay_s"]
    return {
        "tick_ms": TARGET_TICK_MS,
        "tick_met": tick_met,
        "rss_mb": rss_target_mb(shape),
        "rss_met": rss <= rss_target_mb(shape),
        "plan_delay_s": shape.poll_seconds,
        "plan_delay_met": payload["threshold"]["all_planned"]
        and delay is not None
        and delay <= shape.poll_seconds,
        "nothing_planned_while_idle": payload["idle"]["nothing_planned"],
    }


def _yes(value: object) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _print(payload: dict[str, Any]) -> None:
    shape = payload["shape"]
    rows = []
    for phase in ("cold", "steady"):
        p = payload[phase]
        for label, key in (("CPU", "per_table_cpu_ms"), ("wall", "per_table_wall_ms")):
            s = p[key]
            rows.append(
                [f"{phase} table tick, {label}", p["table_ticks"], s["mean"], s["p50"], s["p99"], s["max"]]
            )
        for service, s in p["services"].items():
            c = s["cpu_ms"]
            rows.append([f"{phase} {service} tick, CPU", s["ticks"], c["mean"], c["p50"], c["p99"], c["max"]])
    print_table(
        f"Daemon tick cost, {shape['tables']:,} idle tables, {shape['active_instants_per_table']} active "
        f"instants each (ms; a table tick = its cleaning, clustering and compaction ticks of one round)",
        ["phase", "ticks", "mean", "p50", "p99", "max"],
        rows,
    )
    steady, memory, idle = payload["steady"], payload["memory"], payload["idle"]
    services = steady["services"]
    print_table(
        f"Steady window: {steady['window_s']:.0f}s, {steady['rounds']:.1f} rounds, "
        f"poll every {shape['poll_seconds']:g}s",
        ["figure", "value"],
        [
            ["daemon CPU share of one core (%)", 100 * (steady["process_cpu_share_of_one_core"] or 0)],
            ["daemon CPU per table per round (ms)", steady["process_cpu_ms_per_table_round"]],
            ["RSS at end of window (MB)", memory["rss_mb_end_of_steady_window"]],
            ["peak RSS (MB)", memory["peak_rss_mb"]],
            ["threads (peak)", memory["threads_peak"]],
            *[
                [f"`.hoodie` listings per {s} tick", v["hoodie_listings_per_tick"]]
                for s, v in services.items()
            ],
            *[
                [f"file reads per {s} tick", v["reads"]]
                for s, v in ((s, {"reads": v["reads_per_tick"]}) for s, v in services.items())
            ],
            ["partition listings (window)", steady["partition_listings"]],
            ["metadata decodes (window)", steady["decodes"]],
            ["metadata decodes (cold round)", payload["cold"]["decodes"]],
            ["instant files written while idle", idle["instant_files_written"]],
            ["Spark session requests while idle", idle["spark_session_requests"]],
            ["failed ticks while idle", idle["failed_ticks"]],
        ],
    )
    threshold = payload["threshold"]
    print_table(
        "Commit crossing hoodie.clustering.async.max.commits -> `.replacecommit.requested`",
        [
            "table",
            "planned",
            "delay s",
            "within poll interval",
            "tick start to plan s",
            "decodes in that tick",
        ],
        [
            [
                c["table"],
                _yes(c.get("planned")),
                c.get("delay_s"),
                _yes(c.get("within_poll_interval")),
                c.get("tick_start_to_plan_s"),
                c.get("scheduling_tick_decodes"),
            ]
            for c in threshold["tables"]
        ],
    )
    print(
        f"Spark session requested by the crossing tables' executions: {threshold['spark_requests']} "
        f"(before the plan was written: {_yes(threshold['spark_needed_to_schedule'])})"
    )
    for line in threshold["log_errors"]:
        print(f"  daemon log (expected: the benchmark refuses Spark to executions): {line}")
    targets = payload["targets"]
    print_table(
        "Targets",
        ["target", "value", "met"],
        [
            [
                "table tick CPU, mean and p99 <= 5 ms (p99)",
                payload["steady"]["per_table_cpu_ms"]["p99"],
                _yes(targets["tick_met"]),
            ],
            [f"peak RSS <= {targets['rss_mb']:g} MB", memory["peak_rss_mb"], _yes(targets["rss_met"])],
            [
                "plan within one poll interval (max delay s)",
                threshold["max_delay_s"],
                _yes(targets["plan_delay_met"]),
            ],
            ["nothing planned while idle", None, _yes(targets["nothing_planned_while_idle"])],
        ],
    )
    if "replicas" in payload:
        from bench import daemon_replicas

        daemon_replicas.print_summary(payload["replicas"])


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench daemon", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 tables, 2 s poll interval")
    parser.add_argument("--tables", type=int, default=None, help="number of tables")
    parser.add_argument("--poll-seconds", type=float, default=None, help="the daemon's poll interval")
    parser.add_argument(
        "--replicas", type=int, default=0, help="then serve the tables by this many replicas, and kill one"
    )
    parser.add_argument(
        "--fleet", action="store_true",
        help=f"{FLEET.tables:,} tables, {FLEET.poll_seconds:g} s poll, then {FLEET_REPLICAS} replicas "
        "(results: daemon-fleet.json)",
    )  # fmt: skip
    parser.add_argument("--session-timeout-seconds", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", type=Path, default=None, help="where the synthetic tables go")
    parser.add_argument("--results-dir", type=Path, default=None, help="instead of bench/results")
    parser.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--stats", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--progress", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv))
    if args.serve is not None:
        if args.stats is None or args.progress is None:
            parser.error("--serve needs --stats and --progress")
        return serve(args.serve, args.stats, args.progress)
    shape = FLEET if args.fleet else QUICK if args.quick else FULL
    replicas = args.replicas or (FLEET_REPLICAS if args.fleet else 0)
    if args.tables is not None or args.poll_seconds is not None:
        shape = Shape(
            args.tables or shape.tables, args.poll_seconds or shape.poll_seconds, shape.steady_rounds,
            shape.crossing_tables,
        )  # fmt: skip
    if replicas == 1 or replicas < 0:
        parser.error("--replicas: 0 (none) or at least 2")
    payload = run(
        args.quick, shape=shape, work_dir=args.work_dir, results_dir=args.results_dir, replicas=replicas,
        session_timeout_s=args.session_timeout_seconds,
    )  # fmt: skip
    replicas_ok = "replicas" not in payload or payload["replicas"]["targets"]["each_serves_a_share"]
    return (
        0 if payload["idle"]["nothing_planned"] and payload["threshold"]["all_planned"] and replicas_ok else 1
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
