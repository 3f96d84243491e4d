"""Cleaning: ours next to Hudi's own cleaner, on identical copies of one table with many file versions.

The table is the cleaning benchmark's (`bench.cleaning.build_table`: P partitions of G file groups, V
versions each, empty placeholder base files; its commits carry the table schema so Hudi can register
it), at table version 6 (against Hudi 0.15.0, in this process's SparkSession) or 9 (against Hudi
1.1.1, in a child process: one bundle per JVM). Per policy and round it is copied twice: Hudi's
`CALL run_clean` (`RunCleanProcedure`: plan and execute in one `SparkRDDWriteClient.clean`) cleans
one copy, `service.cleaning.Cleaner` the other. The files left on both copies must be the same
(asserted); wall seconds of each round, their medians and the ratio are recorded. Hudi runs without
the metadata table (the table has none). Ours runs with `force`: Hudi has no volume breaker, and a
policy retaining one version deletes most of this table.
"""

from __future__ import annotations

import itertools
import shutil
import statistics
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
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
from service.cleaning import Cleaner, CleanOptions
from service.config.hoodie import HoodieConfig
from service.lock.in_process import InProcessTableLock
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.hudi_jvm import HudiJvm

NAME = "hudi-cleaning"
# policy -> (run_clean argument, our hoodie.* key)
RETAINED = {
    "KEEP_LATEST_COMMITS": ("retain_commits", "hoodie.cleaner.commits.retained"),
    "KEEP_LATEST_FILE_VERSIONS": ("file_versions_retained", "hoodie.cleaner.fileversions.retained"),
}


HUDI_OF_VERSION = {6: "0.15.0", 9: "1.1.1"}


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


HudiClean = Callable[[Path, str, int], float]  # (copy, policy, retained) -> seconds of run_clean


def hudi_in_process(spark: SparkSession) -> HudiClean:
    return lambda base, policy, retained: run_hudi(spark, base, policy, retained)


def hudi_in_child(jvm: HudiJvm) -> HudiClean:
    """Hudi 1.x's `run_clean` in the child's SparkSession; registering the table is untimed."""
    names = itertools.count()

    def clean(base: Path, policy: str, retained: int) -> float:
        name = f"bench_clean_{next(names)}"
        jvm.sql(f"create table {name} using hudi location '{base}'")
        call = (
            f"CALL run_clean(table => '{name}', clean_policy => '{policy}', "
            f"{RETAINED[policy][0]} => {retained}, options => 'hoodie.metadata.enable=false')"
        )
        with stopwatch() as sw:
            rows = jvm.sql(call)
        if len(rows) != 1:
            raise RuntimeError(f"{base}: run_clean returned {rows}")
        return sw.seconds

    return clean


def run_hudi(spark: SparkSession, base: Path, policy: str, retained: int) -> float:
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


def run_ours(base: Path, policy: str, retained: int) -> float:
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


def run_policy(
    hudi: HudiClean, source: Path, work: Path, policy: str, retained: int, rounds: int = 1
) -> PolicyRun:
    before = data_files(source)
    hudi_rounds, ours_rounds = [], []
    left: dict[str, set[str]] = {}
    for _ in range(rounds):
        copies = {name: work / f"{name}-{policy}" for name in ("hudi", "ours")}
        for copy in copies.values():
            shutil.copytree(source, copy)
        hudi_rounds.append(hudi(copies["hudi"], policy, retained))
        ours_rounds.append(run_ours(copies["ours"], policy, retained))
        left = {name: data_files(copy) for name, copy in copies.items()}
        for copy in copies.values():
            shutil.rmtree(copy)
        if left["hudi"] != left["ours"]:
            break  # reported below; more rounds would not mend it
    return PolicyRun(
        policy=policy, retained=retained, files_before=len(before),
        hudi_seconds=statistics.median(hudi_rounds), ours_seconds=statistics.median(ours_rounds),
        hudi_rounds=tuple(hudi_rounds), ours_rounds=tuple(ours_rounds),
        hudi_deleted=len(before - left["hudi"]), ours_deleted=len(before - left["ours"]),
        same_files_left=left["hudi"] == left["ours"],
        only_hudi_left=tuple(sorted(left["hudi"] - left["ours"])[:5]),
        only_ours_left=tuple(sorted(left["ours"] - left["hudi"])[:5]),
    )  # fmt: skip


def run(options: Options, spark: SparkSession | None = None, command: str | None = None) -> dict[str, Any]:
    """Build the table, clean copies of it per policy with each contender, write the JSON."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-cleaning-", dir=options.work_dir))
    try:
        with _hudi_contender(options, spark, work) as hudi:
            source = work / "table"
            with stopwatch() as built:
                build_table(source, options.shape, options.table_version)
            print(f"built {options.shape.data_files:,} files ({built.seconds:.1f}s)", flush=True)
            # Untimed warm-up of both contenders on a tiny table: JIT and first-use costs out of the figures.
            warm = work / "warm-up"
            build_table(warm, TINY, options.table_version)
            run_policy(hudi, warm, work / "warm-up-copies", "KEEP_LATEST_COMMITS", 1)
            runs = []
            for policy, retained in options.policies:
                result = run_policy(hudi, source, work, policy, retained, options.rounds)
                runs.append(result)
                print(
                    f"  {policy} {retained}: Hudi {result.hudi_seconds:.1f}s, "
                    f"ours {result.ours_seconds:.1f}s (medians of {len(result.hudi_rounds)}), "
                    f"same files left: {result.same_files_left}",
                    flush=True,
                )
        payload = _payload(options, runs, command)
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


@contextmanager
def _hudi_contender(options: Options, spark: SparkSession | None, work: Path) -> Iterator[HudiClean]:
    if options.table_version == 6:
        if spark is not None:
            yield hudi_in_process(spark)
            return
        from bench.hudi_clustering import start_session

        session = start_session(work, options.driver_memory)
        try:
            yield hudi_in_process(session)
        finally:
            session.stop()
        return
    from tests.support.hudi_jvm import hudi_jvm

    version = HUDI_OF_VERSION[options.table_version]
    with hudi_jvm(version, work / "hudi-jvm", options.driver_memory) as jvm:
        yield hudi_in_child(jvm)


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
        help="6: against Hudi 0.15.0 in this process; 9: against Hudi 1.1.1 in a child process",
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
