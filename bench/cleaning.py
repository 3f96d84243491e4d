"""Cleaning benchmark: clean planning, incremental versus full scan, and delete throughput.

The synthetic table (Hudi's on-disk format, built without Spark): P partitions of G file groups, every
file group written by one bulk insert and then V-1 full-table upserts (V versions), plus K small
commits in between that rewrite a few partitions each. Base files are empty placeholders: the view
and the planner read only names and sizes from the listing, never the Parquet content.

Timeline, with R = V-1 commits retained (KEEP_LATEST_COMMITS):
    bulk insert, s1..sR, [previous clean: ECTR s1], s(R+1)..sK, upsert 1..R
The new clean's ECTR is upsert 1, so incremental mode scans only the partitions of s1..sK; a full
scan lists every partition. Both must plan the same deletes (each rewritten file group's bulk-insert
version): the previous clean left nothing behind elsewhere. Delete throughput is measured on a fresh
copy with one commit retained, which deletes about half of the table's files.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import hudi_record_schema, print_table, stopwatch, write_results
from bench.contenders import PeakRss, load_average, peak_mb, round_order
from bench.fixtures import clean_that_deleted_nothing, cow_table_properties, write_partition_metafile
from service.cleaning import Cleaner, CleanOptions
from service.cleaning.snapshot import commit_partitions, load_clean_snapshot
from service.config.hoodie import HoodieConfig
from service.lock import create_lock
from service.table import codecs
from service.table.data_files import base_file_name
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1, TimelineLayout
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, format_instant_time, parse_instant_time
from strategies.cleaning import CleanPlan, CleanSnapshot, plan_clean

NAME = "cleaning"
TABLE_NAME = "bench_cleaning"
WRITE_TOKEN = "0-0-0"
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 1, 8, tzinfo=UTC)  # after every instant of the synthetic timeline
TARGET_SPEEDUP = 10.0
AVRO_SCHEMA = hudi_record_schema(TABLE_NAME, [("id", "long"), ("ts", "long"), ("p", "string")])


@dataclass(frozen=True)
class TableShape:
    partitions: int
    file_groups_per_partition: int
    versions: int  # bulk insert + (versions - 1) full-table upserts
    small_commits: int  # commits rewriting a few partitions between the two cleans' ECTRs
    partitions_per_small_commit: int

    def __post_init__(self) -> None:
        if self.versions < 2 or self.small_commits < self.versions - 1:
            raise ValueError(f"{self}: needs versions >= 2 and small_commits >= versions - 1")
        if self.small_commits * self.partitions_per_small_commit > self.partitions:
            raise ValueError(f"{self}: the small commits must touch distinct partitions")

    @property
    def touched_partitions(self) -> int:
        return self.small_commits * self.partitions_per_small_commit

    @property
    def file_groups(self) -> int:
        return self.partitions * self.file_groups_per_partition

    @property
    def data_files(self) -> int:
        return self.file_groups * self.versions + self.touched_partitions * self.file_groups_per_partition

    @property
    def commits_retained(self) -> int:
        return self.versions - 1

    @property
    def files_deleted_retaining_one_commit(self) -> int:
        """Keeping the last two slices of every file group (the latest and the newest before the ECTR)."""
        touched_groups = self.touched_partitions * self.file_groups_per_partition
        return self.file_groups * (self.versions - 2) + touched_groups


FULL = TableShape(1000, 25, 4, 10, 2)  # 100,500 data files
QUICK = TableShape(100, 25, 4, 10, 1)  # 10,250 data files
TINY = TableShape(12, 3, 3, 4, 1)  # for the smoke test


# ---------------------------------------------------------------------------------------------- table
def _instant_time(minute: int) -> str:
    return format_instant_time(EPOCH + timedelta(minutes=minute))


def _file_id(partition: int, group: int) -> str:
    return f"{partition:08x}-{group:04x}-4000-8000-{partition * 10_000 + group:012x}-0"


def _partition_path(partition: int) -> str:
    return f"p={partition:04d}"


class _Builder:
    """Writes the synthetic table directly: empty base files, codec-encoded timeline files."""

    def __init__(
        self, base: Path, shape: TableShape, table_version: int = 6, base_file_bytes: bytes = b""
    ) -> None:
        self.base = base
        self.base_file_bytes = base_file_bytes
        self.shape = shape
        self.table_version = table_version
        # Version 9: layout 2, completed names with a completion time, Avro commit metadata.
        self.layout = TimelineLayout.v2() if table_version == 9 else LAYOUT_1
        self.storage = Storage.for_base_uri(str(base))
        self.minute = 0
        self.latest: dict[tuple[int, int], str] = {}
        self._last = ""

    def build(self) -> None:
        shape = self.shape
        (self.base / ".hoodie").mkdir(parents=True)
        self._properties()
        everything = range(shape.partitions)
        self._commit(everything, codecs.WriteOperationType.BULK_INSERT)
        step = shape.partitions // shape.touched_partitions
        small = [
            [
                (i * shape.partitions_per_small_commit + j) * step
                for j in range(shape.partitions_per_small_commit)
            ]
            for i in range(shape.small_commits)
        ]
        first_small = self._instant_time_next()
        for i, partitions in enumerate(small):
            self._commit(partitions, codecs.WriteOperationType.UPSERT)
            if i + 1 == shape.commits_retained:
                # completed = bulk insert + s1..sR: Hudi's ECTR was s1, and it had nothing to delete.
                self._clean(earliest_commit_to_retain=first_small, last_completed=self._last)
        for _ in range(shape.versions - 1):
            self._commit(everything, codecs.WriteOperationType.UPSERT)

    def _properties(self) -> None:
        props = cow_table_properties(TABLE_NAME, "ts", "p", self.table_version)
        self.storage.write_bytes(".hoodie/hoodie.properties", props)

    def _complete(self, requested: Instant, content: bytes) -> None:
        """The completed file; on layout 2 completed a second after it was requested."""
        completion = None
        if self.layout.names_completion_time:
            completion = format_instant_time(
                parse_instant_time(requested.timestamp, UTC) + timedelta(seconds=1)
            )
        create_instant_file(self.storage, self.layout, requested.completed_at(completion), content)

    def _instant_time_next(self) -> str:
        return _instant_time(self.minute + 1)

    def _next(self) -> str:
        self.minute += 1
        self._last = _instant_time(self.minute)
        return self._last

    def _commit(self, partitions: Sequence[int], operation: codecs.WriteOperationType) -> None:
        instant_time = self._next()
        stats: dict[str, tuple[codecs.WriteStat, ...]] = {}
        for p in partitions:
            partition = _partition_path(p)
            directory = self.base / partition
            if not directory.exists():
                directory.mkdir()
                write_partition_metafile(self.base, partition, instant_time)
            out = []
            for g in range(self.shape.file_groups_per_partition):
                file_id = _file_id(p, g)
                name = base_file_name(file_id, WRITE_TOKEN, instant_time)
                fd = os.open(directory / name, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
                try:
                    if self.base_file_bytes:
                        os.write(fd, self.base_file_bytes)
                finally:
                    os.close(fd)
                previous = self.latest.get((p, g))
                self.latest[(p, g)] = instant_time
                out.append(
                    codecs.WriteStat(
                        file_id=file_id,
                        path=f"{partition}/{name}",
                        prev_commit=previous or codecs.NULL_COMMIT,
                        num_writes=100,
                        num_inserts=0 if previous else 100,
                        num_update_writes=100 if previous else 0,
                        partition_path=partition,
                    )
                )
            stats[partition] = tuple(out)
        meta = codecs.CommitMetadata(
            partition_to_write_stats=stats,
            # Hudi resolves the table's schema from the latest commit's `schema` (TableSchemaResolver);
            # without it, registering the table (for `CALL run_clean`) reads a base file, and these are empty.
            extra_metadata={"schema": json.dumps(AVRO_SCHEMA)},
            operation_type=operation,
        )
        requested = Instant(instant_time, Action.COMMIT, State.REQUESTED)
        create_instant_file(self.storage, self.layout, requested)
        create_instant_file(self.storage, self.layout, requested.with_state(State.INFLIGHT))
        avro = self.layout.version >= 2
        self._complete(requested, codecs.encode_commit(meta, avro=avro))

    def _clean(self, earliest_commit_to_retain: str, last_completed: str) -> None:
        instant_time = self._next()
        plan, meta = clean_that_deleted_nothing(instant_time, earliest_commit_to_retain, last_completed)
        requested = Instant(instant_time, Action.CLEAN, State.REQUESTED)
        create_instant_file(self.storage, self.layout, requested, codecs.encode(plan))
        # Hudi 1.1 leaves the inflight clean empty (`ActiveTimelineV2`); 0.x writes the plan again.
        inflight = b"" if self.table_version == 9 else codecs.encode(plan)
        create_instant_file(self.storage, self.layout, requested.with_state(State.INFLIGHT), inflight)
        self._complete(requested, codecs.encode(meta))


def build_table(base: Path, shape: TableShape, table_version: int = 6, base_file_bytes: bytes = b"") -> None:
    """The synthetic table at `base` (which must not exist yet), of table version 6 or 9; each base
    file holds `base_file_bytes` (empty placeholders by default)."""
    _Builder(base, shape, table_version, base_file_bytes).build()


# ---------------------------------------------------------------------------------------------- planning
def _config(shape: TableShape, incremental: bool, commits_retained: int | None = None) -> HoodieConfig:
    return HoodieConfig.from_mapping(
        {
            "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "hoodie.cleaner.commits.retained": str(commits_retained or shape.commits_retained),
            "hoodie.cleaner.incremental.mode": str(incremental).lower(),
        },
        TABLE_NAME,
    )


@dataclass(frozen=True)
class PlanningRun:
    """One cold planning pass (fresh HudiTable, nothing cached) split into its phases, in seconds."""

    timeline: float  # list .hoodie, decode every completed commit's metadata
    listing: float  # load_clean_snapshot with decoded commits cached: partition listing + view
    plan: float  # plan_clean on the snapshot (pure)
    warm_listing: float  # again on the same table object (a daemon's tick: decoded metadata cached)
    warm_plan: float
    partitions_listed: int
    partitions_scanned: int
    files_in_view: int
    plan_paths: frozenset[str]

    @property
    def cold_total(self) -> float:
        return self.timeline + self.listing + self.plan

    @property
    def warm_total(self) -> float:
        return self.warm_listing + self.warm_plan


def _listed(snapshot: CleanSnapshot) -> CleanSnapshot:
    """The snapshot with every batch's view built now: the listing is timed apart from the planning
    (a clean interleaves them, holding one batch at a time)."""
    return replace(snapshot, views=tuple(snapshot.views))


def _plan_once(base: Path, config: HoodieConfig) -> PlanningRun:
    clean = config.clean
    table = HudiTable.open(str(base))
    gc.collect()  # each phase starts without the previous phase's garbage
    with stopwatch() as t_timeline:
        timeline = table.load_timeline()
        # Every completed commit decoded here, as this step has always measured; the planner itself
        # decodes only the commits an incremental clean's window holds (`CommitPartitions`).
        dict(commit_partitions(table, timeline))
    gc.collect()
    with stopwatch() as t_listing:
        snapshot = _listed(load_clean_snapshot(table, timeline, clean, NOW, UTC))
    gc.collect()
    with stopwatch() as t_plan:
        plan = plan_clean(snapshot, clean, NOW)
    views = tuple(snapshot.views)
    partitions_listed = sum(len(view.partitions) for view in views)
    files_in_view = sum(
        len(s.file_names) for view in views for fg in view.file_groups.values() for s in fg.slices
    )
    del views
    partitions_scanned = plan.partitions_scanned if plan else 0
    plan_paths = _paths(plan)
    del snapshot, plan  # a daemon's tick holds no previous view; only the decoded-metadata cache stays
    gc.collect()
    with stopwatch() as t_warm_listing:
        warm = _listed(load_clean_snapshot(table, table.load_timeline(), clean, NOW, UTC))
    gc.collect()
    with stopwatch() as t_warm_plan:
        plan_clean(warm, clean, NOW)
    return PlanningRun(
        timeline=t_timeline.seconds,
        listing=t_listing.seconds,
        plan=t_plan.seconds,
        warm_listing=t_warm_listing.seconds,
        warm_plan=t_warm_plan.seconds,
        partitions_listed=partitions_listed,
        partitions_scanned=partitions_scanned,
        files_in_view=files_in_view,
        plan_paths=plan_paths,
    )


def _commit_json_seconds(base: Path) -> float:
    """Reading and `json.loads` of every completed commit file, nothing else: what finding the
    partitions each commit wrote would cost without building write-stat models."""
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    gc.collect()
    with stopwatch() as sw:
        for instant in timeline.commits().completed():
            json.loads(table.storage.read_bytes(LAYOUT_1.instant_path(instant)))
    return sw.seconds


def _paths(plan: CleanPlan | None) -> frozenset[str]:
    return frozenset(t.path for t in plan.all_targets) if plan else frozenset()


def _dry_run_seconds(base: Path, config: HoodieConfig) -> tuple[float, int]:
    """The product's own entry point, `Cleaner(dry_run=True).run()`, cold: seconds and files planned."""
    table = HudiTable.open(str(base))
    lock = create_lock("in-process", TABLE_NAME, {"hoodie.base.path": str(base)})
    cleaner = Cleaner(table, config, lock, UTC, CleanOptions(dry_run=True), now=lambda: NOW)
    gc.collect()
    with stopwatch() as sw:
        result = cleaner.run()
    return sw.seconds, sum(c.files_planned for c in result.cleans)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def measure_planning(base: Path, shape: TableShape, repeat: int) -> dict[str, Any]:
    """Incremental versus full scan, `repeat` alternating cold runs of each; medians in seconds."""
    configs = {"incremental": _config(shape, True), "full": _config(shape, False)}
    runs: dict[str, list[PlanningRun]] = {mode: [] for mode in configs}
    dry: dict[str, list[float]] = {mode: [] for mode in configs}
    dry_files: dict[str, int] = {}
    json_only: list[float] = []
    loads: list[dict[str, Any]] = []
    for round_index in range(repeat):
        # Rounds alternate which mode goes first, so neither always finds the other's cache warm.
        order = round_order(list(configs), round_index)
        load = {"first": order[0], "load_before": load_average()}
        json_only.append(_commit_json_seconds(base))
        for mode in order:
            runs[mode].append(_plan_once(base, configs[mode]))
            seconds, files = _dry_run_seconds(base, configs[mode])
            dry[mode].append(seconds)
            dry_files[mode] = files
        loads.append(load | {"load_after": load_average()})
    out: dict[str, Any] = {"rounds": loads}
    for mode, mode_runs in runs.items():
        first = mode_runs[0]
        out[mode] = {
            "timeline_s": _median([r.timeline for r in mode_runs]),
            "listing_s": _median([r.listing for r in mode_runs]),
            "plan_s": _median([r.plan for r in mode_runs]),
            "cold_total_s": _median([r.cold_total for r in mode_runs]),
            "warm_listing_s": _median([r.warm_listing for r in mode_runs]),
            "warm_plan_s": _median([r.warm_plan for r in mode_runs]),
            "warm_total_s": _median([r.warm_total for r in mode_runs]),
            "dry_run_s": _median(dry[mode]),
            "partitions_listed": first.partitions_listed,
            "partitions_scanned": first.partitions_scanned,
            "files_in_view": first.files_in_view,
            "files_planned": len(first.plan_paths),
            "dry_run_files_planned": dry_files[mode],
            "runs": [
                {k: v for k, v in asdict(r).items() if k != "plan_paths"} | {"cold_total": r.cold_total}
                for r in mode_runs
            ],
        }
    incremental, full = runs["incremental"][0], runs["full"][0]
    out["commit_json_parse_s"] = _median(json_only)
    out["plans_equal"] = all(r.plan_paths == full.plan_paths for r in runs["incremental"] + runs["full"])
    out["expected_files_planned"] = shape.touched_partitions * shape.file_groups_per_partition
    out["plans_match_expected"] = len(incremental.plan_paths) == out["expected_files_planned"]
    speedup: dict[str, float | None] = {}
    for key in ("listing_s", "plan_s", "cold_total_s", "warm_total_s", "dry_run_s"):
        numerator, denominator = out["full"][key], out["incremental"][key]
        speedup[key.removesuffix("_s")] = numerator / denominator if denominator > 0 else None
    out["speedup_full_over_incremental"] = speedup
    return out


# ---------------------------------------------------------------------------------------------- deletes
class _TimedDelete:
    """Wraps Storage.delete_file to time the delete phase alone (first start to last finish)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._lock = threading.Lock()
        self.first: float | None = None
        self.last = 0.0
        self.calls = 0

    def __call__(self, path: str) -> bool:
        started = time.perf_counter()
        removed = self._storage.delete_file(path)
        finished = time.perf_counter()
        with self._lock:
            self.first = started if self.first is None else min(self.first, started)
            self.last = max(self.last, finished)
            self.calls += 1
        return removed


def measure_deletes(
    work: Path, shape: TableShape, parallelisms: Sequence[int], rounds: int = 1
) -> list[dict[str, Any]]:
    """A real clean (one commit retained) on a fresh copy per `hoodie.cleaner.parallelism` value and
    round; each value's figures are the medians of its rounds, every round kept."""
    per_value: dict[int, list[dict[str, Any]]] = {p: [] for p in parallelisms}
    for round_index in range(rounds):
        for parallelism in round_order(parallelisms, round_index):
            per_value[parallelism].append(_delete_once(work, shape, parallelism))
    results = []
    for parallelism, runs in per_value.items():
        medians = {key: statistics.median(r[key] for r in runs) for key in ("delete_phase_s", "clean_run_s")}
        deleted = runs[0]["files_deleted"]
        results.append(
            {
                "parallelism": parallelism,
                "files_deleted": deleted,
                "expected_files_deleted": shape.files_deleted_retaining_one_commit,
                "delete_calls": runs[0]["delete_calls"],
                **medians,
                "files_per_s": deleted / medians["delete_phase_s"] if medians["delete_phase_s"] > 0 else None,
                "end_to_end_files_per_s": deleted / medians["clean_run_s"]
                if medians["clean_run_s"] > 0
                else None,
                "rounds": runs,
            }
        )
    return results


def _delete_once(work: Path, shape: TableShape, parallelism: int) -> dict[str, Any]:
    base = work / f"delete-p{parallelism}"
    with stopwatch() as build:
        build_table(base, shape)
    config = HoodieConfig.from_mapping(
        {
            "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.cleaner.parallelism": str(parallelism),
        },
        TABLE_NAME,
    )
    table = HudiTable.open(str(base))
    lock = create_lock("in-process", TABLE_NAME, {"hoodie.base.path": str(base)})
    timed = _TimedDelete(table.storage)
    cleaner = Cleaner(table, config, lock, UTC, CleanOptions(), now=lambda: NOW, delete=timed)
    load_before = load_average()
    with stopwatch() as run:
        result = cleaner.run()
    shutil.rmtree(base)
    return {
        "files_deleted": sum(c.files_deleted for c in result.cleans),
        "delete_calls": timed.calls,
        "delete_phase_s": (timed.last - timed.first) if timed.first is not None else 0.0,
        "clean_run_s": run.seconds,
        "build_s": build.seconds,
        "load_before": load_before,
        "load_after": load_average(),
    }


# ---------------------------------------------------------------------------------------------- entry
@contextmanager
def _work_dir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield Path(tempfile.mkdtemp(prefix="bench-cleaning-", dir=given))
        return
    with tempfile.TemporaryDirectory(prefix="bench-cleaning-") as tmp:
        yield Path(tmp)


def run(
    quick: bool,
    *,
    shape: TableShape | None = None,
    repeat: int | None = None,
    parallelisms: Sequence[int] | None = None,
    work_dir: Path | None = None,
    results_dir: Path | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build the table, measure, print the tables, write `<results_dir>/cleaning.json`; the payload."""
    shape = shape or (QUICK if quick else FULL)
    repeat = repeat or (3 if quick else 5)
    parallelisms = tuple(parallelisms or ((1, 200) if quick else (1, 8, 200)))
    delete_rounds = 1 if quick else 3
    load_before = load_average()
    with _work_dir(work_dir) as work:
        base = work / "table"
        with stopwatch() as build:
            build_table(base, shape)
        report(f"built {shape.data_files:,} files, {shape.partitions:,} partitions ({build.seconds:.1f}s)")
        # The planner is Python in this process: its resident memory is the process's.
        with PeakRss(os.getpid()) as planning_memory:
            planning = measure_planning(base, shape, repeat)
        with PeakRss(os.getpid()) as deleting_memory:
            deletes = measure_deletes(work, shape, parallelisms, delete_rounds)
        if work_dir is not None:
            shutil.rmtree(work)
    payload: dict[str, Any] = {
        "quick": quick,
        "command": "python -m bench cleaning" + (" --quick" if quick else ""),
        "shape": asdict(shape)
        | {
            "data_files": shape.data_files,
            "file_groups": shape.file_groups,
            "touched_partitions": shape.touched_partitions,
        },
        "policy": {
            "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "commits_retained": shape.commits_retained,
        },
        "repeat": repeat,
        "load_before": load_before,
        "peak_rss_mb": {
            "planning": peak_mb([planning_memory.peak_bytes]),
            "deleting": peak_mb([deleting_memory.peak_bytes]),
        },
        "build_s": build.seconds,
        "planning": planning,
        "deletes": deletes,
        "target": {
            "speedup": TARGET_SPEEDUP,
            "met_cold": (planning["speedup_full_over_incremental"]["cold_total"] or 0) >= TARGET_SPEEDUP,
            "met_warm": (planning["speedup_full_over_incremental"]["warm_total"] or 0) >= TARGET_SPEEDUP,
        },
    }
    path = write_results(NAME, payload, results_dir)
    _print(payload)
    report(f"results: {path}")
    return payload


def _print(payload: dict[str, Any]) -> None:
    planning = payload["planning"]
    shape = payload["shape"]
    rows = []
    for mode in ("incremental", "full"):
        m = planning[mode]
        rows.append(
            [
                mode,
                m["partitions_listed"],
                m["files_in_view"],
                m["files_planned"],
                m["timeline_s"] * 1000,
                m["listing_s"] * 1000,
                m["plan_s"] * 1000,
                m["cold_total_s"] * 1000,
                m["warm_total_s"] * 1000,
                m["dry_run_s"] * 1000,
            ]
        )
    speedup = planning["speedup_full_over_incremental"]
    rows.append(
        [
            "full / incremental",
            None,
            None,
            None,
            None,
            speedup["listing"],
            speedup["plan"],
            speedup["cold_total"],
            speedup["warm_total"],
            speedup["dry_run"],
        ]
    )
    print_table(
        f"Clean planning, {shape['data_files']:,} files in {shape['partitions']:,} partitions "
        f"(median of {payload['repeat']}, ms; plans equal: {planning['plans_equal']})",
        [
            "mode",
            "partitions listed",
            "files in view",
            "files planned",
            "timeline",
            "listing",
            "plan",
            "cold total",
            "warm total",
            "dry run",
        ],
        rows,
    )
    print(
        f"timeline = list .hoodie + decode every completed commit; reading and json.loads of those files "
        f"alone: {planning['commit_json_parse_s'] * 1000:,.0f} ms"
    )
    print_table(
        "Clean execution (one commit retained, fresh copy each)",
        ["parallelism", "files deleted", "delete phase s", "files/s", "clean run s", "end-to-end files/s"],
        [
            [
                d["parallelism"],
                d["files_deleted"],
                d["delete_phase_s"],
                d["files_per_s"],
                d["clean_run_s"],
                d["end_to_end_files_per_s"],
            ]
            for d in payload["deletes"]
        ],
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cleaning", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 partitions, ~10k files")
    parser.add_argument("--repeat", type=int, default=None, help="planning repetitions (median)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where the synthetic tables go")
    parser.add_argument("--results-dir", type=Path, default=None, help="instead of bench/results")
    args = parser.parse_args(list(argv))
    payload = run(args.quick, repeat=args.repeat, work_dir=args.work_dir, results_dir=args.results_dir)
    return 0 if payload["planning"]["plans_equal"] else 1
