"""Scale: how planning's time and memory grow with a table's files (issue 49's cost curves).

Tables are the cleaning benchmark's (`bench.cleaning.build_table`: P partitions of 25 file groups, 4
versions each, every base file a copy of one tiny Parquet file, a commit history whose clean retaining
one commit deletes about half the files), at 10^4, 10^5, 10^6 (and with `--sizes 7`, 10^7) files: 100
to 100,000 partitions (`--sizes 3`, 10 partitions, is the smoke test's); table version 6 (JSON
commits, layout 1) and 9 (Avro commits, layout 2, completion times); no metadata table. Every
operation must exit 0, or the run fails.

Each operation runs as `hudi-table-service ...` in a child process of its own, started by a small
launcher (`measure_command`), so its peak resident memory is its own (`ru_maxrss` of a process forked
from the launcher, not from this one) and nothing is cached between operations:

- `clean --dry-run` with `hoodie.cleaner.incremental.mode` true and false (KEEP_LATEST_COMMITS, one
  commit retained): the clean's whole planning, listing, breaker and JSON report included;
- `cluster --mode schedule --dry-run` (every base file is small: the planner surveys every slice; a
  plan of every group, `ALL_GROUPS`);
- `status --json` (every live file group reported);
- `check --json` (every service's dry run: the clean's and the clustering's plans, the archival window,
  the blockers), with the cleans' and the clustering's settings.

Per (size, version, operation), `--rounds` rounds (default 3; the median is published, the range
beside it) after one untimed round warms the page cache. The two cleans' plans must name the same
files (`--json`'s file lists compared), or the run fails. Figures: `docs/results/scale.json`, the
chart `docs/results/scale.png` (log-log: seconds and peak MB against files).

With `--hudi`, Hudi plans the same tables schedule-only (`bench.scale_hudi`: a clean through its write
client's `scheduleTableService`, a clustering through `run_clustering(op => 'schedule')`), in a JVM of
its own per table, and its plans must equal ours (the full clean's files, the clustering's groups), or
the run fails; the figures go to `docs/results/scale-hudi.json` and `scale-hudi.png`.

Not yet here (issue 49): the metadata table on, compaction planning on merge-on-read tables.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.cleaning import TableShape, build_table
from bench.common import bench_parser, command_line, print_table, stopwatch, write_results
from bench.contenders import load_average

NAME = "scale"
GROUPS_PER_PARTITION = 25
VERSIONS = 4
# 10^k files: 10^(k-2) partitions of 25 groups x 4 versions, plus the small commits' rewrites.
SIZES = {3: 10, 4: 100, 5: 1_000, 6: 10_000, 7: 100_000}
DEFAULT_SIZES = (4, 5, 6)
QUICK_SIZES = (4,)
TABLE_VERSIONS = (6, 9)
# Goals of issue 49, reported as met or missed (never asserted by a test).
GOAL_PEAK_MB_AT_10M = 2048
GOAL_FULL_CLEAN_DRY_RUN_S_AT_1M = 10.0
GOAL_OURS_OVER_HUDI = 0.5  # our planning's seconds over Hudi's, at every size, with the same plan

CLEAN = (
    "--hoodie-conf",
    "hoodie.cleaner.policy=KEEP_LATEST_COMMITS",
    "--hoodie-conf",
    "hoodie.cleaner.commits.retained=1",
)
# A clustering plan of every group the table has (one a partition here), not the first 30 (Hudi's default,
# `PartitionAwareClusteringPlanStrategy` takes them in the order its listing gives partitions: on a local
# file system, the directory's order, which our planner's sorted order need not match).
ALL_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups=1000000"
OPERATIONS: dict[str, tuple[str, ...]] = {
    "clean_incremental": ("clean", "--dry-run", "--json", *CLEAN),
    "clean_full": (
        "clean",
        "--dry-run",
        "--json",
        *CLEAN,
        "--hoodie-conf",
        "hoodie.cleaner.incremental.mode=false",
    ),
    "cluster_schedule": ("cluster", "--mode", "schedule", "--dry-run", "--json", "--hoodie-conf", ALL_GROUPS),
    "status": ("status", "--json"),
    # Every service's dry run as `check` reports it, with the cleans' and the clustering's settings.
    "check": ("check", "--json", *CLEAN, "--hoodie-conf", ALL_GROUPS),
}


def base_file_bytes() -> bytes:
    """One tiny Parquet file with the table's columns (Hudi's meta columns, `id`, `ts`, `p`), the
    content of every base file: clustering's schedule reads the newest input's footer
    (`service.clustering.preflight`), which an empty placeholder fails."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
            "_hoodie_file_name")  # fmt: skip
    columns = {name: pa.array([""]) for name in meta}
    columns |= {"id": pa.array([0], pa.int64()), "ts": pa.array([0], pa.int64()), "p": pa.array([""])}
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    return bytes(sink.getvalue())


def shape_of(exponent: int) -> TableShape:
    partitions = SIZES[exponent]
    per_small = 2 if partitions >= 1_000 else 1
    return TableShape(partitions, GROUPS_PER_PARTITION, VERSIONS, 10, per_small)


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_rss_mb: float
    exit_code: int
    output: bytes


# A process's `ru_maxrss` is the most it was ever resident, under any program: a child this benchmark
# forked reports at least this process's size before its exec (Linux keeps the old memory's high-water
# mark across `execve`, and a fork starts from the parent's resident pages), and this process holds the
# table it just built. A small launcher is forked instead; it forks the command and reports its peak.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def measure(argv: Sequence[str], capture: bool = False) -> Measured:
    """`hudi-table-service argv` in a child process: wall seconds, its peak resident memory (MB)."""
    return measure_command([sys.executable, "-m", "service.cli", "--log-level", "ERROR", *argv], capture)


def measure_command(command: Sequence[str], capture: bool = False) -> Measured:
    """`command` (an executable's path first) run by the launcher: wall seconds, exit code, and its own
    peak resident memory, whatever this process holds."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-rusage-") as tmp:
        report = Path(tmp) / "rusage"
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(report), *command],
            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
            check=False,
        )
        seconds = time.perf_counter() - started
        if completed.returncode != 0 or not report.exists():
            raise SystemExit(f"the launcher of {' '.join(command)!r} failed (exit {completed.returncode})")
        exit_code, max_rss_kb = map(int, report.read_text().split())
    return Measured(seconds, max_rss_kb / 1024, exit_code, completed.stdout if capture else b"")


def _planned(report: Mapping[str, Any]) -> frozenset[str]:
    """The files a `clean --dry-run --json` would delete."""
    return frozenset(
        f"{f['partition_path']}/{f['file_name']}" for clean in report["cleans"] for f in clean["files"]
    )


def _cluster_plan(report: Mapping[str, Any]) -> frozenset[frozenset[tuple[str, str]]]:
    """The groups of `cluster --mode schedule --dry-run --json`, each the set of its (partition, file
    id) slices."""
    return frozenset(
        frozenset((g["partition_path"], s["file_id"]) for s in g["slices"]) for g in report["plan"]["groups"]
    )


# The operations whose plan is kept (from `--json`), and how it is read.
PLANS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "clean_incremental": _planned,
    "clean_full": _planned,
    "cluster_schedule": _cluster_plan,
}


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_table(
    base: Path, rounds: int, report: Callable[[str], None]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every operation on the table at `base`, and each one's plan (the warm-up round's)."""
    out: dict[str, Any] = {}
    plans: dict[str, Any] = {}
    for name, args in OPERATIONS.items():
        argv = [*args[:1], "--base-path", str(base), *args[1:]]
        warm = measure(argv, capture=name in PLANS)
        if name in PLANS:
            plans[name] = PLANS[name](json.loads(warm.output))
        runs = [measure(argv) for _ in range(rounds)]
        codes = sorted({r.exit_code for r in [warm, *runs]})
        if codes != [0]:
            raise SystemExit(f"{base}: `hudi-table-service {' '.join(argv)}` exited {codes}")
        out[name] = {
            "seconds": _spread([r.seconds for r in runs]),
            "peak_rss_mb": _spread([r.peak_rss_mb for r in runs]),
            "exit_codes": codes,
        }
        report(
            f"  {name}: {out[name]['seconds']['median']:.2f} s, "
            f"{out[name]['peak_rss_mb']['median']:.0f} MB (exit {codes})"
        )
    out["clean_files_planned"] = len(plans["clean_full"])
    out["cluster_groups_planned"] = len(plans["cluster_schedule"])
    return out, plans


def measure_hudi(
    base: Path, version: int, plans: Mapping[str, Any], rounds: int, work: Path, report: Callable[[str], None]
) -> dict[str, Any]:
    """Hudi's schedule-only planning of the table at `base` (`bench.scale_hudi`), in a JVM of its own
    warmed up on a small table; its plans compared with ours."""
    from bench import scale_hudi

    warm_up = work / f"warm-up-v{version}"
    if not warm_up.exists():
        build_table(warm_up, shape_of(3), version, base_file_bytes())
    out: dict[str, Any] = {"hudi_version": scale_hudi.HUDI_OF_VERSION[version], "operations": {}}
    with ExitStack() as stack:
        hudi = scale_hudi.start_hudi(stack, work, version)
        for name in scale_hudi.COMPARED:
            scale_hudi.run_operation(hudi, warm_up, name, 0)
        for name, ours in scale_hudi.COMPARED.items():
            measured = scale_hudi.run_operation(hudi, base, name, rounds)
            equal = measured.plan == plans[ours]
            out["operations"][name] = measured.as_json() | {"compared_with": ours, "plans_equal": equal}
            report(
                f"  Hudi {name}: {statistics.median(measured.seconds):.2f} s, "
                f"{statistics.median(measured.peak_rss_mb):.0f} MB, plan equal to our {ours}: {equal}"
            )
    return out


@contextmanager
def _work_dir(given: Path | None) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-scale-", dir=given) as tmp:
        yield Path(tmp)


def run(
    sizes: Sequence[int],
    table_versions: Sequence[int] = TABLE_VERSIONS,
    *,
    rounds: int = 3,
    quick: bool = False,
    work_dir: Path | None = None,
    results_dir: Path | None = None,
    chart: bool = True,
    hudi: bool = False,
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build each table in turn (one on disk at a time), measure (with `hudi`, Hudi's planning too),
    write `<results_dir>/scale.json` (with `hudi`, `scale-hudi.json`)."""
    points: list[dict[str, Any]] = []
    load_before = load_average()
    content = base_file_bytes()
    with _work_dir(work_dir) as work:
        for exponent in sizes:
            shape = shape_of(exponent)
            for version in table_versions:
                base = work / f"t{exponent}-v{version}"
                with stopwatch() as build:
                    build_table(base, shape, version, content)
                report(f"10^{exponent} files, version {version}: built {shape.data_files:,} files in "
                       f"{shape.partitions:,} partitions ({build.seconds:.0f} s)")  # fmt: skip
                load = load_average()
                operations, plans = measure_table(base, rounds, report)
                same = plans["clean_incremental"] == plans["clean_full"]
                point: dict[str, Any] = {
                    "files": shape.data_files,
                    "partitions": shape.partitions,
                    "table_version": version,
                    "metadata_table": False,
                    "shape": asdict(shape),
                    "build_s": build.seconds,
                    "load_before": load,
                    "plans_equal": same,
                    "operations": operations,
                }
                if hudi:
                    point["hudi"] = measure_hudi(base, version, plans, rounds, work, report)
                    point["hudi"]["ours_over_hudi"] = _ours_over_hudi(operations, point["hudi"]["operations"])
                shutil.rmtree(base)
                points.append(point)
                if not same:
                    raise SystemExit(f"10^{exponent}, version {version}: the two cleans planned other files")
                unequal = [
                    n
                    for n, op in point.get("hudi", {}).get("operations", {}).items()
                    if not op["plans_equal"]
                ]
                if unequal:
                    raise SystemExit(f"10^{exponent}, version {version}: Hudi planned otherwise: {unequal}")
    payload = {
        "quick": quick,
        "command": command_line(NAME, _argv(sizes, table_versions, rounds, quick, hudi)),
        "rounds": rounds,
        "load_before": load_before,
        "load_after": load_average(),
        "points": points,
        "goals": _goals(points),
    }
    # With Hudi beside: a result of its own, so a run of fewer sizes leaves the curves of ours alone.
    path = write_results(f"{NAME}-hudi" if hudi else NAME, payload, results_dir)
    _print(payload)
    if chart:
        from bench.scale_chart import draw

        report(f"chart: {draw(payload, path.with_suffix('.png'))}")
    report(f"results: {path}")
    return payload


def _ours_over_hudi(ours: Mapping[str, Any], hudi: Mapping[str, Any]) -> dict[str, float]:
    """Per Hudi operation, our compared operation's median seconds over Hudi's."""
    return {
        name: round(ours[op["compared_with"]]["seconds"]["median"] / op["seconds"]["median"], 3)
        for name, op in hudi.items()
    }


def _goals(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Issue 49's goals, met or missed where this run has the size (None: not measured)."""

    def at(files: int) -> list[Mapping[str, Any]]:
        return [p for p in points if p["files"] >= files and p["files"] < 10 * files]

    ten_million = at(10_000_000)
    million = at(1_000_000)
    peaks = [p["operations"][name]["peak_rss_mb"]["max"] for p in ten_million for name in OPERATIONS]
    peak = max(peaks, default=None)
    full = max((p["operations"]["clean_full"]["seconds"]["median"] for p in million), default=None)
    ratios = [r for p in points if "hudi" in p for r in p["hudi"]["ours_over_hudi"].values()]
    return {
        "ours_over_hudi_seconds": _goal(GOAL_OURS_OVER_HUDI, max(ratios, default=None)),
        "peak_mb_at_10m": _goal(GOAL_PEAK_MB_AT_10M, peak),
        "full_clean_dry_run_s_at_1m": _goal(GOAL_FULL_CLEAN_DRY_RUN_S_AT_1M, full),
    }


def _goal(goal: float, measured: float | None) -> dict[str, Any]:
    return {"goal": goal, "measured": measured, "met": None if measured is None else measured <= goal}


def _print(payload: Mapping[str, Any]) -> None:
    rows = []
    for p in payload["points"]:
        for name in OPERATIONS:
            op = p["operations"][name]
            rows.append(
                [f"{p['files']:,}", p["partitions"], p["table_version"], name,
                 op["seconds"]["median"], op["peak_rss_mb"]["median"]]
            )  # fmt: skip
    print_table(
        f"Planning cost against files (median of {payload['rounds']} rounds, each in its own process)",
        ["files", "partitions", "version", "operation", "seconds", "peak RSS MB"],
        rows,
    )


def _argv(sizes: Sequence[int], versions: Sequence[int], rounds: int, quick: bool, hudi: bool) -> list[str]:
    argv = ["--quick"] if quick else []
    if hudi:
        argv.append("--hudi")
    if tuple(sizes) != (QUICK_SIZES if quick else DEFAULT_SIZES):
        argv += ["--sizes", ",".join(map(str, sizes))]
    if tuple(versions) != TABLE_VERSIONS:
        argv += ["--table-versions", ",".join(map(str, versions))]
    if rounds != 3:
        argv += ["--rounds", str(rounds)]
    return argv


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, "10^4 files only")
    parser.add_argument("--sizes", help="exponents of ten, e.g. 4,5,6,7 (default 4,5,6)")
    parser.add_argument("--table-versions", default="6,9", help="table versions (default 6,9)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results-dir", type=Path)
    parser.add_argument("--hudi", action="store_true", help="Hudi's schedule-only planning beside ours")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (
        QUICK_SIZES if args.quick else DEFAULT_SIZES
    )  # fmt: skip
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"--sizes: {unknown} not among {sorted(SIZES)}")
    versions = tuple(int(v) for v in args.table_versions.split(","))
    run(sizes, versions, rounds=args.rounds, quick=args.quick, work_dir=args.work_dir,
        results_dir=args.results_dir, hudi=args.hudi)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
