"""Cleaning: ours next to Hudi's own cleaner, on identical copies of one table with many file versions.

The table is the cleaning benchmark's (`bench.cleaning.build_table`: P partitions of G file groups, V
versions each, empty placeholder base files; its commits carry the table schema so Hudi can register
it), at table version 6 (against Hudi 0.15.0) or 9 (against Hudi 1.1.1). Per policy and round it is
copied twice: Hudi's `CALL run_clean` (`RunCleanProcedure`: plan and execute in one
`SparkRDDWriteClient.clean`) cleans one copy, `service.cleaning.Cleaner` the other. Hudi runs without
the metadata table (the table has none). Ours runs with `force`: Hudi has no volume breaker, and a
policy retaining one version deletes most of this table.

Each contender runs in a process of its own (`bench.contenders`): Hudi's with a SparkSession carrying
its bundle (`local[2]`), ours with none (the cleaner plans and deletes from Python). Both are warmed
up by an untimed clean of a tiny table; then per policy `--rounds` rounds (default 3) alternate who
goes first. Recorded per round: each contender's wall seconds, the peak resident memory of its
process tree while it cleaned, the load average before and after; the files left on both copies
must be the same in every round, or the run fails. Medians and min-max are published.
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

from bench.cleaning import FULL, NOW, QUICK, TINY, TableShape, build_table
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
from service.cleaning import Cleaner, CleanOptions
from service.config.hoodie import HoodieConfig
from service.demo.hudi_writer import HUDI_BUNDLES
from service.lock.in_process import InProcessTableLock
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAME = "hudi-cleaning"
# policy -> (run_clean argument, our hoodie.* key)
RETAINED = {
    "KEEP_LATEST_COMMITS": ("retain_commits", "hoodie.cleaner.commits.retained"),
    "KEEP_LATEST_FILE_VERSIONS": ("file_versions_retained", "hoodie.cleaner.fileversions.retained"),
}


BUNDLE_OF_VERSION = {6: "0.15", 9: "1.1"}  # the Hudi of each table version (`start_session`'s `hudi`)
HUDI_OF_VERSION = {version: HUDI_BUNDLES[bundle] for version, bundle in BUNDLE_OF_VERSION.items()}
CONTENDERS = ("hudi", "ours")


@dataclass(frozen=True)
class Options:
    shape: TableShape
    # (policy, commits or file versions retained)
    policies: tuple[tuple[str, int], ...] = (("KEEP_LATEST_COMMITS", 1), ("KEEP_LATEST_FILE_VERSIONS", 2))
    work_dir: Path | None = None
    results_dir: Path | None = None
    driver_memory: str = "6g"
    table_version: int = 6
    rounds: int = 1


@dataclass(frozen=True)
class PolicyRun:
    policy: str
    retained: int
    files_before: int
    hudi_seconds: float  # median over the rounds
    ours_seconds: float
    hudi_rounds: tuple[float, ...]
    ours_rounds: tuple[float, ...]
    first: tuple[str, ...]  # who went first, every round
    hudi_peak_rss_mb: tuple[float, ...]  # the process tree's peak while it cleaned, every round
    ours_peak_rss_mb: tuple[float, ...]
    load: tuple[tuple[float, float], ...]  # the 1-minute load average before and after every round
    hudi_deleted: int
    ours_deleted: int
    same_files_left: bool
    only_hudi_left: tuple[str, ...]  # a few examples when the copies differ
    only_ours_left: tuple[str, ...]


def data_files(base: Path) -> set[str]:
    """Base-relative paths of data files (no timeline, partition metafiles or Hadoop checksums)."""
    out = set()
    for path in base.rglob("*"):
        relative = path.relative_to(base)
        if not path.is_file() or ".hoodie" in relative.parts or path.name.endswith(".crc"):
            continue
        if path.name.startswith(PARTITION_METAFILE_PREFIX):
            continue
        out.add(relative.as_posix())
    return out


def run_hudi(spark: SparkSession, base: Path | str, policy: str, retained: int) -> float:
    """`CALL run_clean` on `base` registered as a catalog table (0.15's procedure takes only a table
    name); registration is outside the timed part."""
    from tests.support.hudi_tables import registered_table

    argument = RETAINED[policy][0]
    with registered_table(spark, base) as name:
        call = (
            f"CALL run_clean(table => '{name}', clean_policy => '{policy}', {argument} => {retained}, "
            "options => 'hoodie.metadata.enable=false')"
        )
        with stopwatch() as sw:
            rows = spark.sql(call).collect()
    if len(rows) != 1:
        raise RuntimeError(f"{base}: run_clean returned {rows}")
    return sw.seconds


def run_ours(base: Path | str, policy: str, retained: int) -> float:
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping(
        {"hoodie.cleaner.policy": policy, RETAINED[policy][1]: retained}, table.name
    )
    lock = InProcessTableLock(table.name, key=str(base))
    cleaner = Cleaner(table, config, lock, UTC, CleanOptions(force=True), now=lambda: NOW)
    with stopwatch() as sw:
        result = cleaner.run()
    if len(result.cleans) != 1:
        raise RuntimeError(f"{base}: our clean ran {len(result.cleans)} cleans ({result.skipped_reason})")
    return sw.seconds


# What a contender's process runs (`bench.contender_child`): JSON in, seconds out.
def hudi_in_child(spark: SparkSession, base: str, policy: str, retained: int) -> float:
    return run_hudi(spark, base, policy, retained)


def ours_in_child(spark: None, base: str, policy: str, retained: int) -> float:
    return run_ours(base, policy, retained)


IN_CHILD = {"hudi": f"{__name__}:hudi_in_child", "ours": f"{__name__}:ours_in_child"}


def run_policy(
    processes: Mapping[str, ContenderProcess],
    source: Path,
    work: Path,
    policy: str,
    retained: int,
    rounds: int = 1,
) -> PolicyRun:
    before = data_files(source)
    seconds: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    peaks: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    firsts: list[str] = []
    loads: list[tuple[float, float]] = []
    left: dict[str, set[str]] = {}
    for index in range(rounds):
        order = round_order(CONTENDERS, index)
        copies = {name: work / f"{name}-{policy}" for name in CONTENDERS}
        for copy in copies.values():
            shutil.copytree(source, copy)
        settle()
        load_before = load_average()
        for name in order:
            call = processes[name].call(
                IN_CHILD[name], base=str(copies[name]), policy=policy, retained=retained
            )
            seconds[name].append(float(call.result))
            peaks[name].append(peak_mb([call.peak_rss_bytes]))
        loads.append((load_before, load_average()))
        firsts.append(order[0])
        left = {name: data_files(copy) for name, copy in copies.items()}
        for copy in copies.values():
            shutil.rmtree(copy)
        if left["hudi"] != left["ours"]:
            break  # reported below; more rounds would not mend it
    return PolicyRun(
        policy=policy, retained=retained, files_before=len(before),
        hudi_seconds=Spread.of(seconds["hudi"]).median, ours_seconds=Spread.of(seconds["ours"]).median,
        hudi_rounds=tuple(seconds["hudi"]), ours_rounds=tuple(seconds["ours"]), first=tuple(firsts),
        hudi_peak_rss_mb=tuple(peaks["hudi"]), ours_peak_rss_mb=tuple(peaks["ours"]), load=tuple(loads),
        hudi_deleted=len(before - left["hudi"]), ours_deleted=len(before - left["ours"]),
        same_files_left=left["hudi"] == left["ours"],
        only_hudi_left=tuple(sorted(left["hudi"] - left["ours"])[:5]),
        only_ours_left=tuple(sorted(left["ours"] - left["hudi"])[:5]),
    )  # fmt: skip


def run(options: Options, command: str | None = None) -> dict[str, Any]:
    """Build the table, clean copies of it per policy with each contender, write the JSON."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-cleaning-", dir=options.work_dir))
    load_before = load_average()
    try:
        with contextlib.ExitStack() as stack:
            # Hudi's driver with the bundle of the table's version; ours without Spark.
            hudi = {"driver_memory": options.driver_memory, "hudi": BUNDLE_OF_VERSION[options.table_version]}
            processes = start_contenders(stack, work, {"hudi": hudi, "ours": None})
            source = work / "table"
            with stopwatch() as built:
                build_table(source, options.shape, options.table_version)
            print(f"built {options.shape.data_files:,} files ({built.seconds:.1f}s)", flush=True)
            # Untimed warm-up of both contenders on a tiny table: JIT and first-use costs out of the figures.
            warm = work / "warm-up"
            build_table(warm, TINY, options.table_version)
            run_policy(processes, warm, work / "warm-up-copies", "KEEP_LATEST_COMMITS", 1)
            runs = []
            for policy, retained in options.policies:
                result = run_policy(processes, source, work, policy, retained, options.rounds)
                runs.append(result)
                print(
                    f"  {policy} {retained}: Hudi {result.hudi_seconds:.1f}s "
                    f"{max(result.hudi_peak_rss_mb):,.0f} MB, ours {result.ours_seconds:.1f}s "
                    f"{max(result.ours_peak_rss_mb):,.0f} MB (medians of {len(result.hudi_rounds)}), "
                    f"same files left: {result.same_files_left}",
                    flush=True,
                )
        payload = _payload(options, runs, command)
        payload["load_before"] = load_before
        _print(payload)
        path = write_results(_result_name(options), payload, options.results_dir)
        print(f"\nwrote {path}", flush=True)
        payload["results_path"] = str(path)
        if not all(r.same_files_left for r in runs):
            raise RuntimeError(f"Hudi's cleaner and ours left different files: {payload['runs']}")
        return payload
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _result_name(options: Options) -> str:
    """`hudi-cleaning.json` for version 6 (the figures published before), `hudi-cleaning-v9.json`."""
    return NAME if options.table_version == 6 else f"{NAME}-v{options.table_version}"


def _payload(options: Options, runs: Sequence[PolicyRun], command: str | None) -> dict[str, Any]:
    shape = options.shape
    return {
        "command": command or f"bench.hudi_cleaning.run({options})",
        "shape": asdict(shape) | {"data_files": shape.data_files, "file_groups": shape.file_groups},
        "table_version": options.table_version,
        "hudi_version": HUDI_OF_VERSION[options.table_version],
        "rounds": options.rounds,
        "hudi_settings": {"hoodie.metadata.enable": "false"},
        "ours_options": {"force": True},
        "runs": [
            asdict(r)
            | {
                "hudi_seconds": round(r.hudi_seconds, 3),
                "ours_seconds": round(r.ours_seconds, 3),
                "seconds": {
                    "hudi": Spread.of(r.hudi_rounds).as_json(),
                    "ours": Spread.of(r.ours_rounds).as_json(),
                },
                "peak_rss_mb": {"hudi": max(r.hudi_peak_rss_mb), "ours": max(r.ours_peak_rss_mb)},
                "ours_over_hudi_seconds": round(r.ours_seconds / r.hudi_seconds, 3)
                if r.hudi_seconds
                else None,
            }
            for r in runs
        ],
    }


def _print(payload: Mapping[str, Any]) -> None:
    rows = [
        [
            r["policy"], r["retained"], r["files_before"], r["hudi_deleted"], r["ours_deleted"],
            "yes" if r["same_files_left"] else "NO", r["hudi_seconds"], r["ours_seconds"],
            r["ours_over_hudi_seconds"],
        ]
        for r in payload["runs"]
    ]  # fmt: skip
    print_table(
        f"Cleaning, ours vs Hudi's run_clean ({payload['shape']['data_files']:,} data files)",
        [
            "policy",
            "retained",
            "files",
            "Hudi deleted",
            "ours deleted",
            "same left",
            "Hudi s",
            "ours s",
            "ours/Hudi s",
        ],
        rows,
    )


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, "100 partitions, ~10k files")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    parser.add_argument(
        "--table-version", type=int, choices=sorted(HUDI_OF_VERSION), default=6,
        help="6: against Hudi 0.15.0; 9: against Hudi 1.1.1",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="rounds per policy (medians reported)")
    args = parser.parse_args(list(argv))
    if (status := rerun_without_jvm(NAME, argv)) is not None:
        return status
    options = Options(
        shape=QUICK if args.quick else FULL, work_dir=args.work_dir, results_dir=args.results_dir,
        table_version=args.table_version, rounds=args.rounds,
    )  # fmt: skip
    run(options, command=command_line(NAME, argv))
    return 0
