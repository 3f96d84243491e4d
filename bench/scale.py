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
- `cluster --mode schedule --dry-run` (every base file is small: the planner surveys every slice);
- `status --json` (every live file group reported).

Per (size, version, operation), `--rounds` rounds (default 3; the median is published, the range
beside it) after one untimed round warms the page cache. The two cleans' plans must name the same
files (`--json`'s file lists compared), or the run fails. Figures: `docs/results/scale.json`, the
chart `docs/results/scale.png` (log-log: seconds and peak MB against files).

Not yet here (issue 49): Hudi's own schedule-only planning beside ours on the same tables, the
metadata table on, compaction planning on merge-on-read tables, `check`.
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
from contextlib import contextmanager
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

CLEAN = (
    "--hoodie-conf",
    "hoodie.cleaner.policy=KEEP_LATEST_COMMITS",
    "--hoodie-conf",
    "hoodie.cleaner.commits.retained=1",
)
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
    "cluster_schedule": ("cluster", "--mode", "schedule", "--dry-run", "--json"),
    "status": ("status", "--json"),
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


def _planned(output: bytes) -> frozenset[str]:
    """The files a `clean --dry-run --json` would delete."""
    report = json.loads(output)
    return frozenset(
        f"{f['partition_path']}/{f['file_name']}" for clean in report["cleans"] for f in clean["files"]
    )


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def measure_table(base: Path, rounds: int, report: Callable[[str], None]) -> tuple[dict[str, Any], bool]:
    """Every operation on the table at `base`; and whether both cleans planned the same files."""
    out: dict[str, Any] = {}
    plans: dict[str, frozenset[str]] = {}
    for name, args in OPERATIONS.items():
        argv = [*args[:1], "--base-path", str(base), *args[1:]]
        warm = measure(argv, capture=name.startswith("clean"))
        if name.startswith("clean"):
            plans[name] = _planned(warm.output)
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
    same = plans["clean_incremental"] == plans["clean_full"]
    out["clean_files_planned"] = len(plans["clean_full"])
    return out, same


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
    report: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Build each table in turn (one on disk at a time), measure, write `<results_dir>/scale.json`."""
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
                operations, same = measure_table(base, rounds, report)
                shutil.rmtree(base)
                points.append(
                    {
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
                )
                if not same:
                    raise SystemExit(f"10^{exponent}, version {version}: the two cleans planned other files")
    payload = {
        "quick": quick,
        "command": command_line(NAME, _argv(sizes, table_versions, rounds, quick)),
        "rounds": rounds,
        "load_before": load_before,
        "load_after": load_average(),
        "points": points,
        "goals": _goals(points),
    }
    path = write_results(NAME, payload, results_dir)
    _print(payload)
    if chart:
        from bench.scale_chart import draw

        report(f"chart: {draw(payload, path.with_suffix('.png'))}")
    report(f"results: {path}")
    return payload


def _goals(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Issue 49's goals, met or missed where this run has the size (None: not measured)."""

    def at(files: int) -> list[Mapping[str, Any]]:
        return [p for p in points if p["files"] >= files and p["files"] < 10 * files]

    ten_million = at(10_000_000)
    million = at(1_000_000)
    peaks = [p["operations"][name]["peak_rss_mb"]["max"] for p in ten_million for name in OPERATIONS]
    peak = max(peaks, default=None)
    full = max((p["operations"]["clean_full"]["seconds"]["median"] for p in million), default=None)
    return {
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


def _argv(sizes: Sequence[int], versions: Sequence[int], rounds: int, quick: bool) -> list[str]:
    argv = ["--quick"] if quick else []
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
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (
        QUICK_SIZES if args.quick else DEFAULT_SIZES
    )  # fmt: skip
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"--sizes: {unknown} not among {sorted(SIZES)}")
    versions = tuple(int(v) for v in args.table_versions.split(","))
    run(sizes, versions, rounds=args.rounds, quick=args.quick, work_dir=args.work_dir,
        results_dir=args.results_dir)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
