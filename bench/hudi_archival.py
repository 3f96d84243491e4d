"""Archival: ours next to Hudi's own archiver, on identical copies of a table with a long backlog.

The table is the cleaning benchmark's synthetic one (`bench.cleaning.build_table`) shaped as a backlog:
one partition a commit, so `--commits` completed commits (10,000 by default) and one clean sit on the
active timeline, as on a table whose writers handed their services over and nobody archived. Per round
it is copied twice: Hudi's `CALL archive_commits` (0.15.0's `HoodieTimelineArchiver` for version 6,
1.1.1's `TimelineArchiverV2` for version 9) archives one copy, `service.archival.archiver.archive` the
other, both with Hudi's default bounds (`hoodie.keep.min.commits` 20, `hoodie.keep.max.commits` 30,
10 commits retained by the cleaner). Each contender runs in a process of its own
(`bench.contenders`), both warmed up on a small backlog first; rounds alternate who goes first.
Recorded per round: wall seconds, the peak resident memory of the contender's process tree, the load
average before and after; the instant files left on the active timeline must be the same on both
copies in every round, or the run fails. Medians and min-max are published.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.cleaning import TableShape, build_table
from bench.common import (
    RESULTS_DIR,
    bench_parser,
    command_line,
    print_table,
    rerun_without_jvm,
    stopwatch,
    write_results,
)
from bench.contenders import (
    ContenderProcess,
    Spread,
    load_average,
    peak_mb,
    round_order,
    settle,
    start_contenders,
)
from service.archival.archiver import archive
from service.config.hoodie import HoodieConfig
from service.demo.hudi_writer import HUDI_BUNDLES
from service.lock.in_process import InProcessTableLock
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAME = "hudi-archival"
BUNDLE_OF_VERSION = {6: "0.15", 9: "1.1"}
CONTENDERS = ("hudi", "ours")
# Hudi's defaults, spelled out for both contenders.
MIN_COMMITS, MAX_COMMITS, RETAINED = 20, 30, 10
FULL_COMMITS, QUICK_COMMITS, TINY_COMMITS = 10_000, 1_000, 40


def backlog(commits: int) -> TableShape:
    """`commits` completed commits: a bulk insert, one commit a partition, a last full upsert."""
    return TableShape(
        partitions=commits - 2, file_groups_per_partition=1, versions=2, small_commits=commits - 2,
        partitions_per_small_commit=1,
    )  # fmt: skip


@dataclass(frozen=True)
class Options:
    commits: int = FULL_COMMITS
    table_version: int = 6
    rounds: int = 3
    work_dir: Path | None = None
    results_dir: Path | None = None
    driver_memory: str = "6g"


@dataclass(frozen=True)
class Rounds:
    hudi_seconds: tuple[float, ...]
    ours_seconds: tuple[float, ...]
    hudi_peak_rss_mb: tuple[float, ...]
    ours_peak_rss_mb: tuple[float, ...]
    first: tuple[str, ...]
    load: tuple[tuple[float, float], ...]
    active_before: int
    hudi_archived: int  # instant files gone from the active timeline
    ours_archived: int
    same_active_timeline: bool


def active_files(base: Path) -> set[str]:
    """The instant files of the active timeline (Hadoop's checksums left out)."""
    meta = base / ".hoodie"
    timeline = meta / "timeline" if (meta / "timeline").is_dir() else meta
    return {p.name for p in timeline.iterdir() if p.is_file() and p.name[:1].isdigit()}


def run_hudi(spark: SparkSession, base: str) -> float:
    call = (
        f"CALL archive_commits(path => '{base}', min_commits => {MIN_COMMITS}, "
        f"max_commits => {MAX_COMMITS}, retain_commits => {RETAINED})"
    )
    with stopwatch() as sw:
        spark.sql(call).collect()
    return sw.seconds


def run_ours(base: str) -> float:
    table = HudiTable.open(base)
    settings = {
        "hoodie.keep.min.commits": MIN_COMMITS,
        "hoodie.keep.max.commits": MAX_COMMITS,
        "hoodie.cleaner.commits.retained": RETAINED,
    }
    config = HoodieConfig.from_mapping(settings, table.name)
    with stopwatch() as sw:
        result = archive(table, config, InProcessTableLock(table.name, key=base), UTC)
    if not result.archived:
        raise RuntimeError(f"{base}: our archival archived nothing ({result.window.stops})")
    return sw.seconds


# What a contender's process runs (`bench.contender_child`): JSON in, seconds out.
def hudi_in_child(spark: SparkSession, base: str) -> float:
    return run_hudi(spark, base)


def ours_in_child(spark: None, base: str) -> float:
    return run_ours(base)


IN_CHILD = {"hudi": f"{__name__}:hudi_in_child", "ours": f"{__name__}:ours_in_child"}


def run_rounds(processes: Mapping[str, ContenderProcess], source: Path, work: Path, rounds: int) -> Rounds:
    before = active_files(source)
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    peaks: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    firsts, loads, left = [], [], {name: before for name in CONTENDERS}
    for index in range(rounds):
        order = round_order(CONTENDERS, index)
        copies = {name: work / f"{name}-round-{index}" for name in CONTENDERS}
        for copy in copies.values():
            shutil.copytree(source, copy)
        settle()
        loads.append((load_average(), 0.0))
        for name in order:
            call = processes[name].call(IN_CHILD[name], base=str(copies[name]))
            seconds[name].append(float(call.result))
            peaks[name].append(peak_mb([call.peak_rss_bytes]))
        loads[-1] = (loads[-1][0], load_average())
        firsts.append(order[0])
        left = {name: active_files(copy) for name, copy in copies.items()}
        for copy in copies.values():
            shutil.rmtree(copy)
        if left["hudi"] != left["ours"]:
            break  # reported: more rounds would not mend it
    return Rounds(
        hudi_seconds=tuple(seconds["hudi"]), ours_seconds=tuple(seconds["ours"]),
        hudi_peak_rss_mb=tuple(peaks["hudi"]), ours_peak_rss_mb=tuple(peaks["ours"]),
        first=tuple(firsts), load=tuple(loads), active_before=len(before),
        hudi_archived=len(before - left["hudi"]), ours_archived=len(before - left["ours"]),
        same_active_timeline=left["hudi"] == left["ours"],
    )  # fmt: skip


def run(options: Options, command: str | None = None) -> dict[str, Any]:
    """Build the backlog, archive copies of it with each contender, write the JSON."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-archival-", dir=options.work_dir))
    load_before = load_average()
    try:
        with contextlib.ExitStack() as stack:
            hudi = {"driver_memory": options.driver_memory, "hudi": BUNDLE_OF_VERSION[options.table_version]}
            processes = start_contenders(stack, work, {"hudi": hudi, "ours": None})
            source = work / "table"
            with stopwatch() as built:
                build_table(source, backlog(options.commits), options.table_version)
            print(f"built a backlog of {options.commits:,} commits ({built.seconds:.1f}s)", flush=True)
            warm = work / "warm-up"
            build_table(warm, backlog(TINY_COMMITS), options.table_version)
            run_rounds(processes, warm, work, 1)
            result = run_rounds(processes, source, work, options.rounds)
        payload = _payload(options, result, command)
        payload["load_before"] = load_before
        _print(payload)
        path = write_results(
            NAME if options.table_version == 6 else f"{NAME}-v9", payload, options.results_dir
        )
        print(f"\nwrote {path}", flush=True)
        payload["results_path"] = str(path)
        if not result.same_active_timeline:
            raise RuntimeError(f"Hudi's archiver and ours left different active timelines: {payload}")
        return payload
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _payload(options: Options, r: Rounds, command: str | None) -> dict[str, Any]:
    hudi, ours = Spread.of(r.hudi_seconds), Spread.of(r.ours_seconds)
    return {
        "command": command or f"bench.hudi_archival.run({options})",
        "commits": options.commits,
        "table_version": options.table_version,
        "hudi_version": HUDI_BUNDLES[BUNDLE_OF_VERSION[options.table_version]],
        "rounds": options.rounds,
        "settings": {"min_commits": MIN_COMMITS, "max_commits": MAX_COMMITS, "retain_commits": RETAINED},
        "result": asdict(r)
        | {
            "seconds": {"hudi": hudi.as_json(), "ours": ours.as_json()},
            "peak_rss_mb": {"hudi": max(r.hudi_peak_rss_mb), "ours": max(r.ours_peak_rss_mb)},
            "ours_over_hudi_seconds": round(ours.median / hudi.median, 3) if hudi.median else None,
        },
    }


def _print(payload: Mapping[str, Any]) -> None:
    r = payload["result"]
    seconds, memory = r["seconds"], r["peak_rss_mb"]
    row = [
        r["active_before"], r["hudi_archived"], r["ours_archived"],
        "yes" if r["same_active_timeline"] else "NO", seconds["hudi"]["median"],
        seconds["ours"]["median"], memory["hudi"], memory["ours"],
    ]  # fmt: skip
    title = f"Archival of {payload['commits']:,} commits, ours vs Hudi {payload['hudi_version']}"
    headers = ["active files", "Hudi archived", "ours archived", "same left", "Hudi s", "ours s"]
    print_table(title, [*headers, "Hudi MB", "ours MB"], [row])


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, f"{QUICK_COMMITS:,} commits")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    parser.add_argument("--commits", type=int, default=None, help=f"the backlog (default {FULL_COMMITS:,})")
    parser.add_argument(
        "--table-version", type=int, choices=sorted(BUNDLE_OF_VERSION), default=6,
        help="6: against Hudi 0.15.0; 9: against Hudi 1.1.1",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians reported)")
    args = parser.parse_args(list(argv))
    if (status := rerun_without_jvm(NAME, argv)) is not None:
        return status
    commits = args.commits or (QUICK_COMMITS if args.quick else FULL_COMMITS)
    options = Options(
        commits=commits, table_version=args.table_version, rounds=args.rounds, work_dir=args.work_dir,
        results_dir=args.results_dir,
    )  # fmt: skip
    run(options, command=command_line(NAME, argv))
    return 0
