"""Hudi's own planning on the scale benchmark's tables, schedule-only, beside ours (issue 49's item 1).

Hudi plans without executing through its write client: a clean with
`BaseHoodieWriteClient.scheduleTableService(extraMetadata, TableServiceType.CLEAN)` (called through
py4j: Hudi's `run_clean` procedure always executes), a clustering with `CALL run_clustering(path,
op => 'schedule')` (`RunClusteringProcedure`). Each writes its requested instant; the benchmark reads the
plan from it and then removes what the call added under `.hoodie` (and its timeline folder), so every
round plans the same table.

Hudi runs in a process of its own (`bench.contenders.ContenderProcess`: `local[2]`, the bundle of the
table's version: 0.15.0 for version 6, 1.1.1 for version 9), warmed up on a small table first. Timed: the
write client's creation and the schedule call (its meta client, timeline, listing and planner), or the
procedure's call; the JVM's start is not. Peak memory: the contender's process tree (driver and JVM)
while the call ran; a JVM keeps the heap it once grew to, so it is the highest of the rounds so far.
Hudi runs without the metadata table (the tables have none).

Plans compared with ours: the clean's files to delete (our `clean --dry-run --json` with incremental
mode off), the clustering's input groups, each as the set of its (partition, file id) slices.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.contenders import Call, ContenderProcess, Spread, peak_mb
from bench.hudi_cleaning import BUNDLE_OF_VERSION
from bench.hudi_cleaning import HUDI_OF_VERSION as HUDI_OF_VERSION  # re-exported: the Hudi of a version
from bench.scale import ALL_GROUPS
from service.table import codecs
from service.table.codecs import CleanerPlan, RequestedReplaceMetadata

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DRIVER_MEMORY = "6g"
# Hudi's settings, the same as our operations' (`bench.scale.CLEAN`, `bench.scale.ALL_GROUPS`).
CLEAN_PROPS = {
    "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.metadata.enable": "false",
}
CLUSTER_OPTIONS = f"hoodie.metadata.enable=false,{ALL_GROUPS}"
# Hudi's operation -> ours whose plan it must equal.
COMPARED = {"clean_schedule": "clean_full", "cluster_schedule": "cluster_schedule"}

# A plan as compared: the set of files a clean deletes ("partition/file name"), or a clustering's groups.
Plan = frozenset[str] | frozenset[frozenset[tuple[str, str]]]


# ------------------------------------------------------------- in Hudi's process (`bench.contender_child`)


def schedule_clean(spark: SparkSession, base: str) -> float:
    """Seconds to plan a clean and write `<t>.clean.requested`."""
    jvm: Any = spark._jvm
    hudi = jvm.org.apache.hudi
    started = time.perf_counter()
    config = hudi.config.HoodieWriteConfig.newBuilder().withPath(base).withProps(CLEAN_PROPS).build()
    client = hudi.client.SparkRDDWriteClient(hudi.client.common.HoodieSparkEngineContext(spark._jsc), config)
    try:
        scheduled = client.scheduleTableService(
            hudi.common.util.Option.empty(), hudi.common.model.TableServiceType.CLEAN
        )
        seconds = time.perf_counter() - started
    finally:
        client.close()
    if not scheduled.isPresent():
        raise RuntimeError(f"{base}: Hudi scheduled no clean")
    return seconds


def schedule_clustering(spark: SparkSession, base: str) -> float:
    """Seconds of `run_clustering(op => 'schedule')`."""
    started = time.perf_counter()
    spark.sql(
        f"CALL run_clustering(path => '{base}', op => 'schedule', options => '{CLUSTER_OPTIONS}')"
    ).collect()
    return time.perf_counter() - started


IN_CHILD = {
    "clean_schedule": f"{__name__}:schedule_clean",
    "cluster_schedule": f"{__name__}:schedule_clustering",
}


# ------------------------------------------------------------- in the benchmark's process


def _timeline_folders(base: Path) -> list[Path]:
    hoodie = base / ".hoodie"
    return [hoodie, *(d for d in (hoodie / "timeline",) if d.is_dir())]


def _timeline_listing(base: Path) -> dict[Path, set[Path]]:
    return {folder: set(folder.iterdir()) for folder in _timeline_folders(base)}


def _added_since(before: Mapping[Path, set[Path]]) -> list[Path]:
    return sorted(p for folder, had in before.items() for p in set(folder.iterdir()) - had)


def planned_by_hudi(hudi: ContenderProcess, base: Path, name: str) -> tuple[Call, Plan]:
    """Hudi's operation `name` on `base`: the call, and the plan read from the requested instant it
    wrote; whatever it added under `.hoodie` and its timeline folder is removed after, so the next round
    plans the same table."""
    before = _timeline_listing(base)
    added: list[Path] = []
    try:
        call = hudi.call(IN_CHILD[name], base=str(base))
        added = _added_since(before)
        return call, READ_PLAN[name](added)
    finally:
        for path in added or _added_since(before):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()


def _requested(added: list[Path], suffixes: tuple[str, ...]) -> Path:
    [plan] = [p for p in added if p.name.endswith(suffixes) and not p.name.startswith(".")]
    return plan


def clean_plan(added: list[Path]) -> frozenset[str]:
    path = _requested(added, (".clean.requested",))
    plan = codecs.decode(CleanerPlan, path.read_bytes(), str(path))
    per_partition = plan.file_paths_to_be_deleted_per_partition or {}
    return frozenset(
        f"{partition}/{Path(str(info.file_path)).name}" if partition else Path(str(info.file_path)).name
        for partition, infos in per_partition.items()
        for info in infos
    )


def clustering_plan(added: list[Path]) -> frozenset[frozenset[tuple[str, str]]]:
    path = _requested(added, (".replacecommit.requested", ".clustering.requested"))
    requested = codecs.decode(RequestedReplaceMetadata, path.read_bytes(), str(path))
    groups = requested.clustering_plan.input_groups if requested.clustering_plan else None
    return frozenset(
        frozenset((s.partition_path or "", s.file_id or "") for s in group.slices or ())
        for group in groups or ()
    )


READ_PLAN: dict[str, Callable[[list[Path]], Plan]] = {
    "clean_schedule": clean_plan,
    "cluster_schedule": clustering_plan,
}


@dataclass(frozen=True)
class HudiRun:
    """One Hudi operation on one table: every round's seconds and peak MB, and its plan."""

    seconds: tuple[float, ...]
    peak_rss_mb: tuple[float, ...]
    plan: Plan

    def as_json(self) -> dict[str, Any]:
        return {
            "seconds": Spread.of(self.seconds).as_json(),
            "peak_rss_mb": Spread.of(self.peak_rss_mb).as_json(1),
            "rounds": {"seconds": list(self.seconds), "peak_rss_mb": list(self.peak_rss_mb)},
        }


def run_operation(hudi: ContenderProcess, base: Path, name: str, rounds: int) -> HudiRun:
    """An untimed warm round whose plan is kept, then `rounds` timed ones (each must plan the same),
    the timeline left as it was."""
    listed = _timeline_listing(base)
    seconds: list[float] = []
    peaks: list[float] = []
    plans: list[Plan] = []
    for index in range(rounds + 1):
        call, plan = planned_by_hudi(hudi, base, name)
        plans.append(plan)
        if index:
            seconds.append(float(call.result))
            peaks.append(peak_mb([call.peak_rss_bytes]))
    if len(set(plans)) != 1:
        raise RuntimeError(f"{base}: Hudi's {name} planned differently in different rounds")
    if _timeline_listing(base) != listed:
        raise RuntimeError(f"{base}: Hudi's {name} left its instant on the timeline")
    return HudiRun(tuple(seconds), tuple(peaks), plans[0])


def start_hudi(stack: ExitStack, work: Path, table_version: int) -> ContenderProcess:
    """Hudi's process for tables of `table_version`, closed with `stack`."""
    session = {
        "driver_memory": DRIVER_MEMORY,
        "hudi": BUNDLE_OF_VERSION[table_version],
        "work_dir": work / f"hudi-{table_version}-driver",
    }
    return stack.enter_context(ContenderProcess("hudi", session, work / f"hudi-{table_version}-driver.log"))
