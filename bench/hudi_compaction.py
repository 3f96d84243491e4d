"""Compaction: ours next to Hudi's own compactor, on identical copies of one merge-on-read table.

The table is written once by Hudi's Spark writer (`MERGE_ON_READ`, Avro log blocks, compaction off):
`insert_batches` inserts of new file groups in the three regions (small-file handling off, so every
batch adds groups), then `upserts` rounds each updating one in `upsert_every` keys, so every file
group has a base file and a log file per round. Per contender the table is copied: Hudi's
`CALL run_compaction(op => 'run')` (`RunCompactionProcedure`: schedule with Hudi's planner, then
`SparkRDDWriteClient.compact`) compacts one copy, our `schedule_compaction` + `execute_compaction`
(the operations as Spark tasks through `SparkExecutor`) the other. Both compact every file slice
(`hoodie.compact.inline.max.delta.commits=1`, Hudi's default strategy).

Each contender runs in a process of its own with its own SparkSession, configured alike
(`bench.contenders`): warmed up once by an untimed compaction of a table a twentieth the size, then
called once per round on a fresh copy, the rounds (`--rounds`, default 3) alternating who goes
first. Recorded per round: each contender's wall seconds, the peak resident memory of its process
tree (Python driver, JVM, Python workers) while it compacted, the load average before and after,
and the row digest of each output as Hudi's snapshot reader reads it (in this process's session,
which also built the table); the run fails when the digests differ. Medians and min-max are published.

`--hudi 1.1` runs the same with Hudi 1.1.1 (bundle, writer, procedure and reader): the table is of
version 9, with Hudi 1.1's metadata-table defaults (`column_stats`, `partition_stats`) and the record
index, which both compactions keep; results go to `hudi-compaction-v9.json`.
"""

from __future__ import annotations

import contextlib
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
    def warm_up(self) -> TableShape | None:
        """The untimed warm-up's table: the same shape with a twentieth of the rows (a tiny table left
        Hudi's first timed round half as slow again as the others); none for a tiny run."""
        if self.rows <= TINY_ROWS:
            return None
        return replace(self, rows=max(TINY_ROWS, self.rows // 20))

    @property
    def updated_rows(self) -> int:
        every = self.upsert_every
        return sum(len(range(r % every, self.rows, every)) for r in range(self.upserts))


TINY_ROWS = 600
TINY = TableShape(rows=TINY_ROWS, insert_batches=1, upserts=2, upsert_every=3)
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
    """One round: both contenders on fresh copies of the input, `first` first."""

    input_files: int
    input_bytes: int
    log_files: int
    hudi: Contender
    ours: Contender
    first: str
    peak_rss_bytes: dict[str, int]  # contender -> its process tree's peak while it compacted
    digests: dict[str, RowDigest]  # contender -> its output as Hudi's reader reads it
    load_before: float
    load_after: float

    @property
    def same_rows(self) -> bool:
        return self.digests["hudi"] == self.digests["ours"]

    @property
    def rows(self) -> int:
        return self.digests["hudi"].rows


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


def run_hudi(spark: SparkSession, base: Path | str, extra: Mapping[str, str] | None = None) -> Contender:
    options = ",".join(f"{k}={v}" for k, v in {**EVERY_DELTACOMMIT, **(extra or {})}.items())
    call = f"CALL run_compaction(op => 'run', path => '{base}', options => '{options}')"
    with stopwatch() as sw:
        spark.sql(call).collect()
    return _contender("hudi", base, sw.seconds, None)


def run_ours(spark: SparkSession, base: Path | str) -> Contender:
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


def _contender(name: str, base: Path | str, seconds: float, schedule_seconds: float | None) -> Contender:
    """The figures of the one compaction commit on `base`, from its commit metadata."""
    from service.table import codecs
    from service.table.instant import Action

    table = HudiTable.open(str(base))
    [commit] = [i for i in table.load_timeline().completed() if i.action is Action.COMMIT]
    stats = table.facts_reader.metadata(commit, codecs.CommitMetadata).write_stats
    return Contender(name, seconds, schedule_seconds, len(stats), sum(s.file_size_in_bytes for s in stats))


# What a contender's process runs (`bench.contender_child`): JSON in, JSON out.
def hudi_in_child(spark: SparkSession, base: str, extra: dict[str, str]) -> dict[str, Any]:
    return asdict(run_hudi(spark, base, extra))


def ours_in_child(spark: SparkSession, base: str, extra: dict[str, str]) -> dict[str, Any]:
    return asdict(run_ours(spark, base))


CONTENDERS = ("hudi", "ours")
IN_CHILD = {"hudi": f"{__name__}:hudi_in_child", "ours": f"{__name__}:ours_in_child"}


def run_once(
    spark: SparkSession,
    processes: Mapping[str, ContenderProcess],
    source: Path,
    work: Path,
    extra: Mapping[str, str],
    order: Sequence[str] = CONTENDERS,
) -> Run:
    """One round on fresh copies, the contenders in `order` (whoever runs second meets a page cache the
    first one filled, so rounds alternate); `spark` reads both outputs for their digests."""
    files, size, logs = _input_files(source)
    copies = {name: work / f"{name}-copy" for name in CONTENDERS}
    for copy in copies.values():
        shutil.copytree(source, copy)
    settle()
    load_before = load_average()
    done: dict[str, Contender] = {}
    peaks: dict[str, int] = {}
    for name in order:
        call = processes[name].call(IN_CHILD[name], base=str(copies[name]), extra=dict(extra))
        done[name], peaks[name] = Contender(**call.result), call.peak_rss_bytes
    load_after = load_average()
    digests = {name: row_digest(spark, copies[name]) for name in CONTENDERS}
    for copy in copies.values():
        shutil.rmtree(copy)
    return Run(
        files, size, logs, done["hudi"], done["ours"], order[0], peaks, digests, load_before, load_after
    )


def run(options: Options, spark: SparkSession | None = None, command: str | None = None) -> dict[str, Any]:
    """Build the table, compact copies of it with each contender in its own process, write the JSON."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-hudi-compaction-", dir=options.work_dir))
    session: SparkSession | None = spark
    load_before = load_average()
    try:
        if session is None:
            from bench.hudi_clustering import start_session

            session = start_session(work, options.driver_memory, hudi=options.hudi)
        extra = options.hudi_options
        with stopwatch() as built:
            build_table(session, work / "table", options.shape, extra)
        print(f"built {options.shape.rows:,} rows ({built.seconds:.1f}s)", flush=True)
        warm_up = options.shape.warm_up
        if warm_up is not None:
            build_table(session, work / "warm-up", warm_up, extra)
        rounds: list[Run] = []
        with contextlib.ExitStack() as stack:
            # Each contender's own driver, configured alike.
            driver = {"driver_memory": options.driver_memory, "hudi": options.hudi}
            processes = start_contenders(stack, work, dict.fromkeys(CONTENDERS, driver))
            if warm_up is not None:  # untimed: JIT and first-use costs out of the rounds
                for name, process in processes.items():
                    shutil.copytree(work / "warm-up", work / f"warm-up-{name}")
                    process.call(IN_CHILD[name], base=str(work / f"warm-up-{name}"), extra=dict(extra))
            for number in range(options.rounds):
                order = round_order(CONTENDERS, number)
                rounds.append(run_once(session, processes, work / "table", work, extra, order))
                r = rounds[-1]
                said = ", ".join(
                    f"{name} {getattr(r, name).seconds:.1f}s {r.peak_rss_bytes[name] / 2**20:,.0f} MB"
                    for name in order
                )
                print(f"round {number + 1}: {said}", flush=True)
                if not r.same_rows:
                    break  # reported below; more rounds would not mend it
        payload = _payload(options, rounds, command, load_before)
        _print(payload)
        path = write_results(options.results_name, payload, options.results_dir)
        print(f"\nwrote {path}", flush=True)
        payload["results_path"] = str(path)
        if not payload["run"]["same_rows"]:
            raise RuntimeError(f"Hudi's compaction and ours left different rows: {payload['rounds']}")
        return payload
    finally:
        if spark is None and session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)


def _payload(
    options: Options, rounds: Sequence[Run], command: str | None, load_before: float
) -> dict[str, Any]:
    last = rounds[-1]
    times = {name: Spread.of([getattr(r, name).seconds for r in rounds]) for name in CONTENDERS}
    medians = {name: replace(getattr(last, name), seconds=times[name].median) for name in CONTENDERS}
    schedule = [r.ours.schedule_seconds for r in rounds if r.ours.schedule_seconds is not None]
    if schedule:
        medians["ours"] = replace(medians["ours"], schedule_seconds=statistics.median(schedule))
    ratio = times["ours"].median / times["hudi"].median if times["hudi"].median else None
    return {
        "command": command or f"bench.hudi_compaction.run({options})",
        "shape": asdict(options.shape) | {"updated_rows": options.shape.updated_rows},
        "hudi": options.hudi,
        "settings": {**EVERY_DELTACOMMIT, **options.hudi_options},
        "load_before": load_before,
        "rounds": [
            {
                "first": r.first,
                **{f"{name}_seconds": round(getattr(r, name).seconds, 3) for name in CONTENDERS},
                **{f"{name}_peak_rss_mb": peak_mb([r.peak_rss_bytes[name]]) for name in CONTENDERS},
                **{f"{name}_rows": r.digests[name].text for name in CONTENDERS},
                "same_rows": r.same_rows,
                "load_before": r.load_before,
                "load_after": r.load_after,
            }
            for r in rounds
        ],
        "seconds": {name: times[name].as_json() for name in CONTENDERS},
        # Each contender's highest over the rounds.
        "peak_rss_mb": {name: peak_mb([r.peak_rss_bytes[name] for r in rounds]) for name in CONTENDERS},
        "run": {
            "input_files": last.input_files,
            "input_bytes": last.input_bytes,
            "log_files": last.log_files,
            **{name: asdict(medians[name]) for name in CONTENDERS},
            "same_rows": all(r.same_rows for r in rounds),
            "rows": last.rows,
            "ours_over_hudi_seconds": round(ratio, 3) if ratio else None,
        },
    }


def _print(payload: Mapping[str, Any]) -> None:
    run_ = payload["run"]
    rows = [
        [
            c["name"], c["output_files"], c["output_bytes"], round(c["seconds"], 2),
            "" if c["schedule_seconds"] is None else round(c["schedule_seconds"], 2),
            "{min:.2f}-{max:.2f}".format(**payload["seconds"][c["name"]]), payload["peak_rss_mb"][c["name"]],
        ]
        for c in (run_["hudi"], run_["ours"])
    ]  # fmt: skip
    print_table(
        f"Compaction, ours vs Hudi's run_compaction ({run_['input_files']:,} files, "
        f"{run_['log_files']:,} log files, {run_['input_bytes']:,} bytes; same rows: {run_['same_rows']}; "
        f"ours/Hudi {run_['ours_over_hudi_seconds']})",
        ["contender", "files", "bytes", "seconds (median)", "of which scheduling", "min-max", "peak RSS MB"],
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
