"""Compaction: ours next to Hudi's own compactor, on identical copies of one merge-on-read table.

The table is written once by Hudi's Spark writer (`MERGE_ON_READ`, Avro log blocks, compaction off):
`insert_batches` inserts of new file groups in the three regions (small-file handling off, so every
batch adds groups), then `upserts` rounds each updating one in `upsert_every` keys, so every file
group has a base file and a log file per round. Per contender the table is copied: Hudi's
`CALL run_compaction(op => 'run')` (`RunCompactionProcedure`: schedule with Hudi's planner, then
`SparkRDDWriteClient.compact`) compacts one copy, our `schedule_compaction` + `execute_compaction`
(the operations as Spark tasks through `SparkExecutor`, in the same session) the other. Both
compact every file slice (`hoodie.compact.inline.max.delta.commits=1`, Hudi's default strategy).
Hudi's snapshot reads of both copies must hold the same rows (asserted); wall seconds of each and
the ratio are recorded, as the medians of `--rounds` rounds (default 3, each on fresh copies; every
round's seconds are kept). An untimed warm-up on a tiny table takes JIT and first-use costs out.

`--hudi 1.1` runs the same with Hudi 1.1.1 (bundle, writer, procedure and reader): the table is of
version 9, with Hudi 1.1's metadata-table defaults (`column_stats`, `partition_stats`) and the record
index, which both compactions keep; results go to `hudi-compaction-v9.json`.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import (
    RESULTS_DIR,
    bench_parser,
    command_line,
    print_table,
    rerun_without_jvm,
    stopwatch,
    write_results,
)
from service.compaction.executor import execute_compaction
from service.compaction.scheduler import schedule_compaction
from service.config.hoodie import HoodieConfig
from service.demo.hudi_writer import DEFAULT_HUDI, HUDI_BUNDLES, RECORD_INDEX_OPTIONS
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NAME = "hudi-compaction"
TABLE = "bench_mor"
EVERY_DELTACOMMIT = {"hoodie.compact.inline.max.delta.commits": "1"}
# What a Hudi 1.1 table gets besides the 0.15 writer's options: the record index (kept by every Hudi
# writer and procedure that is told so; one that is not drops it) and instants in UTC.
HUDI_1_OPTIONS = {**RECORD_INDEX_OPTIONS, "hoodie.table.timeline.timezone": "UTC"}


@dataclass(frozen=True)
class TableShape:
    rows: int
    insert_batches: int
    upserts: int
    upsert_every: int  # each upsert round updates the keys with id % upsert_every == round

    @property
    def updated_rows(self) -> int:
        every = self.upsert_every
        return sum(len(range(r % every, self.rows, every)) for r in range(self.upserts))


TINY = TableShape(rows=600, insert_batches=1, upserts=2, upsert_every=3)
QUICK = TableShape(rows=60_000, insert_batches=2, upserts=3, upsert_every=5)
FULL = TableShape(rows=3_000_000, insert_batches=4, upserts=4, upsert_every=5)


@dataclass(frozen=True)
class Options:
    shape: TableShape
    work_dir: Path | None = None
    results_dir: Path | None = None
    driver_memory: str = "6g"
    hudi: str = DEFAULT_HUDI  # the Hudi of the writer, the contender and the reads: 0.15 or 1.1
    rounds: int = 1

    @property
    def hudi_options(self) -> dict[str, str]:
        return {} if self.hudi == DEFAULT_HUDI else dict(HUDI_1_OPTIONS)

    @property
    def results_name(self) -> str:
        return NAME if self.hudi == DEFAULT_HUDI else f"{NAME}-v9"


@dataclass(frozen=True)
class Contender:
    name: str
    seconds: float
    schedule_seconds: float | None  # ours only: Hudi's procedure does not say
    output_files: int  # one per compacted file slice
    output_bytes: int


@dataclass(frozen=True)
class Run:
    input_files: int
    input_bytes: int
    log_files: int
    hudi: Contender
    ours: Contender
    same_rows: bool
    rows: int


def build_table(
    spark: SparkSession, base: Path, shape: TableShape, extra: Mapping[str, str] | None = None
) -> None:
    """The merge-on-read input, written by Hudi (see the module docstring); `extra` writer options."""
    from pyspark.sql import functions as F

    from tests.support import hudi_tables as ht
    from tests.support.mor_tables import mor_options

    options = ht.writer_options(TABLE, ht.RECORD_KEY, ht.PRECOMBINE, (ht.PARTITION_FIELD,))
    options.update(mor_options({"hoodie.parquet.small.file.limit": "0"}))
    options.update(extra or {})

    def rows(start: int, end: int, batch: int) -> DataFrame:
        return ht.rows_for_ids(spark.range(start, end), batch)

    def write(df: DataFrame, operation: str) -> None:
        opts = {**options, "hoodie.datasource.write.operation": operation}
        df.write.format("hudi").options(**opts).mode("append").save(str(base))

    per_batch = -(-shape.rows // shape.insert_batches)
    for batch in range(shape.insert_batches):
        write(rows(batch * per_batch, min(shape.rows, (batch + 1) * per_batch), 0), "insert")
    for round_ in range(shape.upserts):
        updated = rows(0, shape.rows, round_ + 1).where(
            F.col("id") % shape.upsert_every == round_ % shape.upsert_every
        )
        write(updated, "upsert")


def _input_files(base: Path) -> tuple[int, int, int]:
    files = [p for p in base.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(base).parts]
    data = [p for p in files if not p.name.endswith(".crc") and (".parquet" in p.name or ".log." in p.name)]
    return len(data), sum(p.stat().st_size for p in data), sum(1 for p in data if ".log." in p.name)


def run_hudi(spark: SparkSession, base: Path, extra: Mapping[str, str] | None = None) -> Contender:
    options = ",".join(f"{k}={v}" for k, v in {**EVERY_DELTACOMMIT, **(extra or {})}.items())
    call = f"CALL run_compaction(op => 'run', path => '{base}', options => '{options}')"
    with stopwatch() as sw:
        spark.sql(call).collect()
    return _contender("hudi", base, sw.seconds, None)


def run_ours(spark: SparkSession, base: Path) -> Contender:
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping(EVERY_DELTACOMMIT, table.name)
    lock = InProcessTableLock(table.name, key=str(base))
    executor = SparkExecutor(session=spark)
    with stopwatch() as sw:
        with stopwatch() as scheduling:
            outcome = schedule_compaction(table, config, lock, now=datetime.now(UTC), zone=UTC)
        if outcome.instant_time is None:
            raise RuntimeError(f"{base}: we scheduled no compaction ({outcome.reason})")
        execute_compaction(table, config, lock, outcome.instant_time, executor.run_compaction, zone=UTC)
    return _contender("ours", base, sw.seconds, scheduling.seconds)


def _contender(name: str, base: Path, seconds: float, schedule_seconds: float | None) -> Contender:
    """The figures of the one compaction commit on `base`, from its commit metadata."""
    from service.table import codecs
    from service.table.instant import Action

    table = HudiTable.open(str(base))
    [commit] = [i for i in table.load_timeline().completed() if i.action is Action.COMMIT]
    stats = table.facts_reader.metadata(commit, codecs.CommitMetadata).write_stats
    return Contender(name, seconds, schedule_seconds, len(stats), sum(s.file_size_in_bytes for s in stats))


def same_rows(spark: SparkSession, left: Path, right: Path) -> tuple[bool, int]:
    """Whether Hudi's snapshot reads of both copies hold the same rows (all but `_hoodie_file_name`)."""
    frames = [spark.read.format("hudi").load(str(p)).drop("_hoodie_file_name") for p in (left, right)]
    count = frames[0].count()
    same = count == frames[1].count() and frames[0].exceptAll(frames[1]).isEmpty()
    return same and frames[1].exceptAll(frames[0]).isEmpty(), count


def run_once(
    spark: SparkSession,
    source: Path,
    work: Path,
    extra: Mapping[str, str] | None = None,
    ours_first: bool = False,
) -> Run:
    """One round on fresh copies; `ours_first` swaps the order (whoever runs second meets a JVM the
    first one warmed and a page cache it filled, so rounds alternate)."""
    files, size, logs = _input_files(source)
    copies = {name: work / f"{name}-copy" for name in ("hudi", "ours")}
    for copy in copies.values():
        shutil.copytree(source, copy)
    if ours_first:
        ours = run_ours(spark, copies["ours"])
        hudi = run_hudi(spark, copies["hudi"], extra)
    else:
        hudi = run_hudi(spark, copies["hudi"], extra)
        ours = run_ours(spark, copies["ours"])
    same, rows = same_rows(spark, copies["hudi"], copies["ours"])
    for copy in copies.values():
        shutil.rmtree(copy)
    return Run(files, size, logs, hudi, ours, same, rows)


def run(options: Options, spark: SparkSession | None = None, command: str | None = None) -> dict[str, Any]:
    """Build the table, compact a copy with each contender, write the JSON."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-compaction-", dir=options.work_dir))
    session: SparkSession | None = spark
    try:
        if session is None:
            from bench.hudi_clustering import start_session

            session = start_session(work, options.driver_memory, hudi=options.hudi)
        extra = options.hudi_options
        with stopwatch() as built:
            build_table(session, work / "table", options.shape, extra)
        print(f"built {options.shape.rows:,} rows ({built.seconds:.1f}s)", flush=True)
        if options.shape != TINY:  # untimed warm-up
            build_table(session, work / "warm-up", TINY, extra)
            run_once(session, work / "warm-up", work / "warm-up-copies", extra)
        rounds: list[Run] = []
        for number in range(options.rounds):
            ours_first = number % 2 == 1
            rounds.append(run_once(session, work / "table", work, extra, ours_first=ours_first))
            r = rounds[-1]
            first = "ours" if ours_first else "Hudi"
            said = f"Hudi {r.hudi.seconds:.1f}s, ours {r.ours.seconds:.1f}s ({first} first)"
            print(f"round {number + 1}: {said}", flush=True)
            if not r.same_rows:
                break  # reported below; more rounds would not mend it
        payload = _payload(options, rounds, command)
        _print(payload)
        path = write_results(options.results_name, payload, options.results_dir)
        print(f"\nwrote {path}", flush=True)
        payload["results_path"] = str(path)
        if not payload["run"]["same_rows"]:
            raise RuntimeError(f"Hudi's compaction and ours left different rows: {payload['run']}")
        return payload
    finally:
        if spark is None and session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)


def _median(contenders: Sequence[Contender]) -> Contender:
    """The contender's figures with the median seconds of its rounds (outputs are alike in each)."""
    schedule = [c.schedule_seconds for c in contenders if c.schedule_seconds is not None]
    return replace(
        contenders[-1],
        seconds=statistics.median(c.seconds for c in contenders),
        schedule_seconds=statistics.median(schedule) if schedule else None,
    )


def _payload(options: Options, rounds: Sequence[Run], command: str | None) -> dict[str, Any]:
    result = replace(
        rounds[-1],
        hudi=_median([r.hudi for r in rounds]),
        ours=_median([r.ours for r in rounds]),
        same_rows=all(r.same_rows for r in rounds),
    )
    ratio = result.ours.seconds / result.hudi.seconds if result.hudi.seconds else None
    return {
        "command": command or f"bench.hudi_compaction.run({options})",
        "shape": asdict(options.shape) | {"updated_rows": options.shape.updated_rows},
        "hudi": options.hudi,
        "settings": {**EVERY_DELTACOMMIT, **options.hudi_options},
        "rounds": [
            {
                "first": "ours" if n % 2 == 1 else "hudi",
                "hudi_seconds": round(r.hudi.seconds, 3),
                "ours_seconds": round(r.ours.seconds, 3),
                "same_rows": r.same_rows,
            }
            for n, r in enumerate(rounds)
        ],
        # The spread beside the medians in `run`: each contender's fastest and slowest round.
        "seconds_min_max": {
            name: [round(min(times), 3), round(max(times), 3)]
            for name, times in (
                ("hudi", [r.hudi.seconds for r in rounds]),
                ("ours", [r.ours.seconds for r in rounds]),
            )
        },
        "run": asdict(result) | {"ours_over_hudi_seconds": round(ratio, 3) if ratio else None},
    }


def _print(payload: Mapping[str, Any]) -> None:
    run_ = payload["run"]
    rows = [
        [
            c["name"], c["output_files"], c["output_bytes"], round(c["seconds"], 2),
            "" if c["schedule_seconds"] is None else round(c["schedule_seconds"], 2),
        ]
        for c in (run_["hudi"], run_["ours"])
    ]  # fmt: skip
    print_table(
        f"Compaction, ours vs Hudi's run_compaction ({run_['input_files']:,} files, "
        f"{run_['log_files']:,} log files, {run_['input_bytes']:,} bytes; same rows: {run_['same_rows']}; "
        f"ours/Hudi {run_['ours_over_hudi_seconds']})",
        ["contender", "files", "bytes", "seconds", "of which scheduling"],
        rows,
    )


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, f"{QUICK.rows:,} rows instead of {FULL.rows:,}")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    parser.add_argument(
        "--hudi", choices=tuple(HUDI_BUNDLES), default=DEFAULT_HUDI, help="1.1: a version-9 table, Hudi 1.1.1"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians reported)")
    args = parser.parse_args(list(argv))
    if (status := rerun_without_jvm(NAME, argv)) is not None:
        return status
    options = Options(
        shape=QUICK if args.quick else FULL,
        work_dir=args.work_dir,
        results_dir=args.results_dir,
        hudi=args.hudi,
        rounds=args.rounds,
    )
    run(options, command=command_line(NAME, argv))
    return 0
