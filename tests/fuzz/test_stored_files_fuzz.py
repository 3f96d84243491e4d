"""Fuzzed stored files: every kind of file the service reads, mutated (truncated, bit-flipped, huge
lengths, wrong types and schemas, paths leaving the table), under real tables Hudi 0.15 and Hudi 1.2
wrote.

Seeds (Hudi's own files): copy-on-write tables with the metadata table (`files` across its own
compaction; `column_stats` and `bloom_filters`), with Hudi's clean and rollback instants, a failed
write (its markers and heartbeat), a pending clustering Hudi scheduled; a merge-on-read table with
log files, a compaction Hudi executed and one it scheduled and left pending. Version 9 (Hudi 1.2.0,
`HUDI1_SEED_VERSION`): a copy-on-write table with the metadata table and its record index (Avro
commit metadata, completion times in the instant names, Hudi 1.x log files and HFiles), and a
merge-on-read table whose first instants Hudi archived into its LSM history. Each mutation goes
into a fresh copy of one seed, then the service reads it the ways it reads a table: `status`,
`clean --dry-run`, `cluster` and `compact` scheduling dry runs, a merged read of the slices a mutated
data file belongs to, and a real `clean` when the mutated file is under `.hoodie`.

For each: the command succeeds or fails with the product's error naming the mutated file (never
another exception, never a hang: the per-test timeout). The real clean keeps one commit
(`CLEAN_ARGS`), so the unmutated seeds' own cleans delete files (asserted per seed): the mutated
table's clean deletes nothing the unmutated seed's clean keeps, and when it succeeds it deletes
exactly what that clean deletes (the mutated file aside). Every `DAEMON_EVERY`-th mutated table is
also served by a daemon beside a healthy table: its cleaning tick on the mutated table never raises,
and the healthy table is cleaned as its unmutated seed is. `HTS_FUZZ_COUNT` sets the number of
mutations (1,000 in CI, 5,000 with HTS_LONG_TESTS=1; seed `HTS_FUZZ_SEED`); the count per kind is
printed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import random
import shutil
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from prometheus_client import CollectorRegistry

from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.errors import HudiTableServiceError
from service.table.log_format.merge import MergeConfig
from service.table.log_format.slice_reader import instant_filter, read_file_slice
from service.table.table import HudiTable
from tests.conftest import LONG_TESTS
from tests.fuzz.mutations import KINDS, describe, kind_of, mutate
from tests.support import hudi_tables as ht
from tests.support.histories import HistoryCache, HudiHistory
from tests.support.hudi1_histories import RLI_OPTIONS, SCHEMA, build_archived_history, rows, writer_options
from tests.support.hudi_jvm import HudiJvm, hudi_jvm
from tests.support.mdt_histories import MdtHistory
from tests.support.mor_tables import hudi_compaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

# CI runs 1,000 (issue 46 keeps at least that many per CI run); HTS_LONG_TESTS=1 runs 5,000;
# HTS_FUZZ_COUNT any number.
COUNT = int(os.environ.get("HTS_FUZZ_COUNT") or (5000 if LONG_TESTS else 1000))
SEED = int(os.environ.get("HTS_FUZZ_SEED", "20261128"))
DAEMON_EVERY = 50
# Who writes the version-9 seeds: the newest Hudi served here (1.1.1's tables are the interop modules').
HUDI1_SEED_VERSION = os.environ.get("HTS_FUZZ_HUDI1", "1.2.0")


@dataclass(frozen=True)
class Seed:
    name: str
    base: Path
    merge_on_read: bool
    files: tuple[tuple[str, str], ...]  # (path relative to base, kind)
    cleaned: frozenset[str]  # what a real clean of the unmutated table deletes (relative paths)


def _listing(base: Path) -> set[str]:
    return {str(p.relative_to(base)) for p in base.rglob("*") if p.is_file()}


# The real clean of every mutated table and of its unmutated seed: retention 1, so that the seeds'
# short histories have files to delete (at Hudi's default of 10 commits neither clean would delete
# anything and the comparison would hold on nothing); forced, so that the comparison is the planner's
# and not the volume breaker's (tests/clean cover the breaker).
CLEAN_ARGS = ("--force", "--hoodie-conf", "hoodie.cleaner.commits.retained=1")


def _seed(name: str, base: Path, merge_on_read: bool, scratch: Path) -> Seed:
    files = []
    for rel in sorted(_listing(base)):
        kind = kind_of(rel, (base / rel).read_bytes())
        if kind is not None:
            files.append((rel, kind))
    cleaned = _cleaned_by(base, scratch / f"reference-{name}", *CLEAN_ARGS)
    return Seed(name, base, merge_on_read, tuple(files), cleaned)


def _cleaned_by(base: Path, copy: Path, *clean_args: str) -> frozenset[str]:
    """What a real clean (`clean_args` added) deletes from a copy of the table at `base` (relative
    paths)."""
    shutil.copytree(base, copy, symlinks=True)
    before = _listing(copy)
    with _quiet():
        assert main(["clean", "--base-path", str(copy), "--timezone", "UTC", *clean_args]) == 0
    cleaned = frozenset(before - _listing(copy))
    shutil.rmtree(copy)
    return cleaned


@pytest.fixture(scope="module")
def seeds(
    spark: SparkSession,
    hudi_histories: HistoryCache,
    mdt_history_built: MdtHistory,
    mdt_indexes_built: HudiHistory,
    tmp_path_factory: pytest.TempPathFactory,
) -> list[Seed]:
    root = tmp_path_factory.mktemp("fuzz-seeds")
    out = []
    # Copy-on-write with column_stats and bloom_filters, a failed write left behind (inflight,
    # markers, heartbeat) and a clustering Hudi scheduled.
    cow = root / "cow_indexes"
    shutil.copytree(mdt_indexes_built.base_path, cow, symlinks=True)
    spark.sql(f"CALL run_clustering(path => '{cow}', op => 'schedule')").collect()
    # Inserts of new keys (updates of file groups in the pending clustering are refused).
    ht.write_failing(spark, cow, ht.generate(spark, range(5000, 5020), batch=9), "insert", "mdt_indexes",
                     partition_fields=[ht.PARTITION_FIELD])  # fmt: skip
    out.append(_seed("cow_indexes", cow, False, root))
    # The metadata table's `files` across its own compaction, Hudi's clean, rollback and replace.
    mdt = root / "mdt_files"
    shutil.copytree(mdt_history_built.history.base_path, mdt, symlinks=True)
    out.append(_seed("mdt_files", mdt, False, root))
    for name in ("with_clean", "with_rollback"):
        path = root / name
        history = hudi_histories.get(name).copy_to(path)
        if name == "with_clean":
            # Two commits after Hudi's last clean (retaining 2) rewriting the same file groups: a
            # clean retaining 1 is due, and the versions before them are its to delete.
            for batch in (9, 10):
                data = ht.generate(spark, range(0, 60, 7), batch=batch)
                history.write(spark, data, "upsert", {"hoodie.clean.automatic": "false"})
        out.append(_seed(name, path, False, root))
    # Merge-on-read: Hudi's compaction, an upsert into the compacted slices, then a compaction Hudi
    # scheduled and left pending (the slices before the first compaction are the clean's to delete).
    mor = root / "merge_on_read"
    history = hudi_histories.get("merge_on_read").copy_to(mor)
    hudi_compaction(spark, mor, "scheduleAndExecute")
    history.write(spark, ht.generate(spark, range(0, 120, 9), batch=9), "upsert")
    hudi_compaction(spark, mor, "schedule")
    out.append(_seed("merge_on_read", mor, True, root))
    with hudi_jvm(HUDI1_SEED_VERSION, root / "hudi1-jvm") as jvm:
        v9_cow = _v9_record_index_table(jvm, root)
        v9_archived = build_archived_history(jvm, root).history.base
    out.append(_seed("v9_record_index", v9_cow, False, root))
    out.append(_seed("v9_lsm_history", v9_archived, True, root))
    return out


def _v9_record_index_table(jvm: HudiJvm, root: Path) -> Path:
    """Version 9, copy-on-write, the metadata table with its record index: two inserts, then upserts
    rewriting file groups (the versions before them are a clean keeping 1 commit's to delete)."""
    name = "v9_record_index"
    base = root / name
    options = {**writer_options(name, "COPY_ON_WRITE", True), **RLI_OPTIONS}
    batches = ((range(0, 12), "insert"), (range(12, 24), "insert"), (range(4, 16), "upsert"),
               (range(0, 24, 2), "upsert"))  # fmt: skip
    for batch, (ids, operation) in enumerate(batches):
        jvm.write(base, rows(ids, batch), SCHEMA, {**options, "hoodie.datasource.write.operation": operation})
    return base


@contextlib.contextmanager
def _quiet() -> Iterator[list[logging.LogRecord]]:
    """Commands' stdout discarded; their ERROR log records collected."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Collect(level=logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield records
    finally:
        root.removeHandler(handler)


def _commands(seed: Seed, base: Path, rel: str) -> list[list[str]]:
    common = ["--base-path", str(base), "--timezone", "UTC", "--json"]
    out = [
        ["status", "--base-path", str(base), "--json"],
        ["clean", *common, "--dry-run"],
        ["cluster", *common, "--mode", "schedule", "--dry-run"],
    ]
    if seed.merge_on_read:
        out.append(["compact", *common, "--mode", "schedule", "--dry-run"])
    if rel.startswith(".hoodie/") and not rel.startswith(".hoodie/metadata/"):
        # The archiver reads what the others do not: every active instant it would move, and on
        # version 8/9 the LSM history's manifest and files it would write beside.
        out.append(["archive", *common, "--dry-run"])
    return out


def _names_the_file(message: str, rel: str) -> bool:
    """The error names the mutated file; for a file of the metadata table, naming the metadata table
    is enough (a truncated tail block is skipped as Hudi skips it, and what goes missing with it shows
    as the metadata table disagreeing with storage, naming the file it disagrees on)."""
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith(".hoodie/metadata/") and "the metadata table" in message:
        return True
    return name in message or rel in message


def _merged_read(base: Path, rel: str) -> None:
    """Read merged every latest slice of the mutated data file's partition, as the executors do."""
    partition = rel.rpartition("/")[0]
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    for group in table.load_view(timeline).live_file_groups:
        latest = group.latest_slice
        # The empty slice a pending compaction opens is not read by anything.
        if (
            group.partition_path == partition
            and latest is not None
            and (latest.base_file or latest.log_files)
        ):
            read_file_slice(table.storage, latest, instant_filter(timeline), config)


# The healthy table's retention: its clean deletes files, which the daemon's tick must delete too.
HEALTHY_RETENTION = "hoodie.cleaner.commits.retained"


@dataclass(frozen=True)
class Healthy:
    seed: Seed
    cleaned: frozenset[str]  # what a clean keeping 1 commit deletes (relative paths)


def _healthy(seeds: list[Seed], scratch: Path) -> Healthy:
    """The first seed a clean keeping 1 commit deletes files of, and what it deletes."""
    for seed in seeds:
        reference = scratch / f"healthy-reference-{seed.name}"
        cleaned = _cleaned_by(seed.base, reference, "--force", "--hoodie-conf", f"{HEALTHY_RETENTION}=1")
        if cleaned:
            return Healthy(seed, cleaned)
    raise AssertionError("no seed's clean deletes anything: the daemon check would prove nothing")


def _daemon_serves_the_healthy_table(mutated: Path, healthy: Healthy, scratch: Path) -> list[str]:
    """One daemon, the mutated table and a copy of `healthy`: a cleaning tick of each, mutated first."""
    copy = scratch / f"healthy-{healthy.seed.name}"
    shutil.copytree(healthy.seed.base, copy, symlinks=True)
    before = _listing(copy)
    text = f"""
daemon:
  lock: {{provider: in-process}}
  metrics: {{host: 127.0.0.1, port: 0}}
  failures: {{backoff_initial_seconds: 0, backoff_max_seconds: 0}}
  deletion: {{max_delete_fraction: 1.0}}
tables:
  - {{name: mutated, base_path: '{mutated}', timezone: UTC, clustering: {{enabled: false}}}}
  - {{name: healthy, base_path: '{copy}', timezone: UTC, clustering: {{enabled: false}},
     hoodie: {{{HEALTHY_RETENTION}: 1}}}}
"""
    try:
        with _quiet():
            daemon = Daemon(parse_daemon_config(text), registry=CollectorRegistry(), serve_http=False)
            now = datetime.now(UTC)
            for name in ("mutated", "healthy"):
                outcome = daemon.run_iteration(daemon.runtimes[name], TableService.CLEANING, now)
    except Exception as exc:  # the daemon must not fail because one of its tables is broken
        return [f"daemon: {type(exc).__name__}: {exc}"[:400]]
    if outcome is not Outcome.DONE:
        return [f"daemon: the healthy table's cleaning tick: {outcome}"]
    deleted = before - _listing(copy)
    if deleted != healthy.cleaned:
        return [f"daemon: the healthy table's clean deleted {len(deleted)} files, not {len(healthy.cleaned)}"]
    return []


def _stamps(base: Path) -> dict[str, tuple[int, int]]:
    stats = {str(p.relative_to(base)): p.stat() for p in base.rglob("*") if p.is_file()}
    return {rel: (st.st_size, st.st_mtime_ns) for rel, st in stats.items()}


def _working_copy(seed: Path, base: Path) -> None:
    """A copy of the seed to mutate and serve: the timelines and their folders copied (the services
    rewrite files there in place, `hoodie.properties` and heartbeats among them), the data files and the
    metadata table's partition files hard-linked (the services only create new ones, through
    `Storage.create_if_absent` for the metadata table's logs, and delete old ones, which unlinks the
    copy's name alone): copying was half of each mutation's time. The test's last assertion catches a
    write through a link."""

    def place(source: str, target: str) -> None:
        parts = Path(source).relative_to(seed).parts
        timeline = parts[0] == ".hoodie" and not (parts[1:2] == ("metadata",) and parts[2] != ".hoodie")
        if timeline:
            shutil.copy2(source, target)
        else:
            os.link(source, target)

    shutil.copytree(seed, base, symlinks=True, copy_function=place)


def _run_one(
    seed: Seed, rel: str, kind: str, index: int, scratch: Path, healthy: Healthy
) -> tuple[str, list[str]]:
    rng = random.Random(SEED * 1_000_003 + index)
    base = scratch / f"m{index}" / seed.name
    _working_copy(seed.base, base)
    label, data = mutate(kind, (base / rel).read_bytes(), rng)
    (base / rel).unlink()  # a new file: never write through a link into the seed
    (base / rel).write_bytes(data)
    problems: list[str] = []

    def check(what: str, call: Callable[[], int | None]) -> None:
        with _quiet() as errors:
            try:
                code = call()
            except HudiTableServiceError as exc:
                code, errors = 1, [logging.makeLogRecord({"msg": str(exc)})]
            except Exception as exc:
                frames = traceback.extract_tb(exc.__traceback__)
                ours = [f for f in frames if "/service/" in f.filename] or frames
                at = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"
                problems.append(f"{what}: {type(exc).__name__} at {at}: {exc}"[:400])
                return
        if code not in (0, 1, None):
            problems.append(f"{what}: exit {code}")
        elif code == 1 and not any(_names_the_file(r.getMessage(), rel) for r in errors):
            said = " | ".join(r.getMessage() for r in errors)[:400]
            problems.append(f"{what}: error does not name {rel}: {said}")

    for argv in _commands(seed, base, rel):
        check(argv[0], lambda argv=argv: main(argv))
    if index % DAEMON_EVERY == 0:
        problems += _daemon_serves_the_healthy_table(base, healthy, base.parent)
    if kind in ("parquet", "log") and not rel.startswith(".hoodie/"):
        check("merged read", lambda: _merged_read(base, rel))
    if rel.startswith(".hoodie/"):
        before = _listing(base)
        codes: list[int] = []

        def clean() -> int:
            codes.append(main(["clean", "--base-path", str(base), "--timezone", "UTC", *CLEAN_ARGS]))
            return codes[-1]

        check("clean", clean)
        deleted = before - _listing(base) - {rel}
        extra = sorted(deleted - seed.cleaned)
        if extra:
            problems.append(f"clean deleted {len(extra)} files the unmutated clean keeps: {extra[:5]}")
        elif codes == [0] and deleted != seed.cleaned - {rel}:
            missed = sorted(seed.cleaned - {rel} - deleted)
            problems.append(
                f"clean succeeded but kept {len(missed)} files the unmutated clean deletes: {missed[:5]}"
            )
    shutil.rmtree(base.parent, ignore_errors=True)
    return f"{seed.name}/{rel} ({kind}): {label}; {describe(data)}", problems


def test_mutated_stored_files_fail_clearly_and_delete_nothing(
    seeds: list[Seed], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    by_kind: dict[str, list[tuple[Seed, str]]] = {}
    for seed in seeds:
        for rel, kind in seed.files:
            by_kind.setdefault(kind, []).append((seed, rel))
    kinds = sorted(by_kind)
    healthy = _healthy(seeds, tmp_path)
    assert kinds == sorted(KINDS), f"the seeds hold no file of kind {sorted(set(KINDS) - set(kinds))}"
    # Each seed's own clean deletes files: the deletion oracle compares against something.
    assert all(seed.cleaned for seed in seeds), [seed.name for seed in seeds if not seed.cleaned]
    counts: Counter[str] = Counter()
    per_seed: Counter[str] = Counter()
    findings: list[str] = []
    untouched = {seed.name: _stamps(seed.base) for seed in seeds}
    for index in range(COUNT):
        kind = kinds[index % len(kinds)]
        seed, rel = rng.choice(by_kind[kind])
        what, problems = _run_one(seed, rel, kind, index, tmp_path, healthy)
        counts[kind] += 1
        per_seed[seed.name] += 1
        findings += [f"#{index} {what}: {p}" for p in problems]
    with capsys.disabled():
        print(f"\nfuzzed {sum(counts.values())} stored files (seed {SEED}): "
              + ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
              + "; by seed: " + ", ".join(f"{k} {n}" for k, n in sorted(per_seed.items())))  # fmt: skip
    # Every seed had its files mutated: a seed (the version-9 ones, say) is not there for show.
    assert sorted(per_seed) == sorted(seed.name for seed in seeds), per_seed
    assert not findings, f"{len(findings)} findings:\n" + "\n".join(findings[:40])
    # The working copies share the seeds' data files (`_working_copy`): none was written through.
    assert {seed.name: _stamps(seed.base) for seed in seeds} == untouched
