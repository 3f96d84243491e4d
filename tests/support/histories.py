"""Real Hudi histories, built once per test session and copied into each test that asks for one.

Each history is written by Hudi's Spark writer the first time a test requests it (a session-scoped
fixture), into a session temp dir; the per-test fixture copies it into the test's `tmp_path`, so
tests may change their copy freely. `HudiHistory` records what the builder did, so tests can assert
against it and keep writing with the same table settings.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import hudi_tables as ht

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BATCH_ROWS = 60  # 20 rows per partition per insert: small files


@dataclass(frozen=True)
class HudiHistory:
    """A table written by real Hudi, and what was written.

    `latest_batch` maps every live record id to the batch whose values it holds (see
    `hudi_tables.expected_row`); `instants` lists (instant time, action) of the builder's writes,
    cleans and rollbacks in timeline order; `writer_opts` are the extra options the writes used.
    """

    name: str
    base_path: Path
    table_name: str
    partition_fields: tuple[str, ...]
    latest_batch: Mapping[int, int]
    instants: tuple[tuple[str, str], ...]
    writer_opts: Mapping[str, str] = field(default_factory=dict)
    build_seconds: float = 0.0
    record_key: str = ht.RECORD_KEY
    precombine: str = ht.PRECOMBINE

    def write(
        self, spark: SparkSession, df: DataFrame, operation: str, extra_opts: Mapping[str, str] | None = None
    ) -> str:
        """Write one more batch with the history's table settings; returns the completed instant."""
        opts = {**self.writer_opts, **(extra_opts or {})}
        return ht.write(
            spark,
            self.base_path,
            df,
            operation,
            self.table_name,
            self.record_key,
            self.precombine,
            self.partition_fields,
            opts,
        )

    def expected_rows(self) -> list[dict[str, object]]:
        """The data columns every reader must return for the latest snapshot, sorted by id."""
        return [ht.expected_row(i, b) for i, b in sorted(self.latest_batch.items())]

    def copy_to(self, dest: Path) -> HudiHistory:
        shutil.copytree(self.base_path, dest, symlinks=True)
        return replace(self, base_path=dest)


class _Builder:
    """Writes one history step by step, tracking the expected latest batch of each id."""

    def __init__(
        self,
        spark: SparkSession,
        name: str,
        base_path: Path,
        partitioned: bool,
        opts: Mapping[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.name = name
        self.base_path = base_path
        self.partition_fields: tuple[str, ...] = (ht.PARTITION_FIELD,) if partitioned else ()
        self.opts = dict(opts or {})
        self.latest: dict[int, int] = {}
        self.started = time.monotonic()

    def write(
        self, operation: str, ids: range | list[int], batch: int, extra: Mapping[str, str] | None = None
    ) -> str:
        df = ht.generate(self.spark, ids, batch)
        instant = ht.write(
            self.spark,
            self.base_path,
            df,
            operation,
            self.name,
            ht.RECORD_KEY,
            ht.PRECOMBINE,
            self.partition_fields,
            {**self.opts, **(extra or {})},
        )
        if operation == "delete":
            for i in ids:
                self.latest.pop(i, None)
        elif operation == "insert_overwrite_table":
            self.latest = dict.fromkeys(ids, batch)
        elif operation == "insert_overwrite":
            regions = {ht.PARTITIONS[i % len(ht.PARTITIONS)] for i in ids}
            self.latest = {
                i: b for i, b in self.latest.items() if ht.PARTITIONS[i % len(ht.PARTITIONS)] not in regions
            }
            self.latest.update(dict.fromkeys(ids, batch))
        else:
            self.latest.update(dict.fromkeys(ids, batch))
        return instant

    def finish(self) -> HudiHistory:
        return HudiHistory(
            name=self.name,
            base_path=self.base_path,
            table_name=self.name,
            partition_fields=self.partition_fields,
            latest_batch=dict(self.latest),
            instants=tuple(_timeline(self.base_path)),
            writer_opts=dict(self.opts),
            build_seconds=time.monotonic() - self.started,
        )


def _timeline(base_path: Path) -> list[tuple[str, str]]:
    """(instant, action) of every completed instant file under `.hoodie`."""
    out = []
    for name in ht.timeline_files(base_path):
        instant, _, action = name.partition(".")
        if action in ("commit", "deltacommit", "replacecommit", "clean", "rollback"):
            out.append((instant, action))
    return sorted(out)


def batch_ids(k: int) -> range:
    """The ids of insert batch `k`: `BATCH_ROWS` ids after those of batches 0..k-1."""
    return range(k * BATCH_ROWS, (k + 1) * BATCH_ROWS)


def build_many_commits(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Partitioned; 6 commits: 3 inserts (3 file groups per partition) and 3 upserts."""
    b = _Builder(spark, "many_commits", base_path, partitioned=True)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    b.write("upsert", list(range(0, 30)), batch=2)
    b.write("insert", batch_ids(2), batch=3)
    b.write("upsert", list(range(60, 75)) + list(range(120, 135)), batch=4)
    b.write("upsert", list(range(0, 180, 7)), batch=5)
    return b.finish()


def build_with_replace(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Partitioned; insert, insert, insert_overwrite of partition `asia` (a replacecommit), upsert."""
    b = _Builder(spark, "with_replace", base_path, partitioned=True)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    asia = [i for i in range(1000, 1030) if ht.PARTITIONS[i % 3] == "asia"]
    b.write("insert_overwrite", asia, batch=2)
    b.write("upsert", list(range(0, 60, 5)), batch=3)
    return b.finish()


def build_with_rollback(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Partitioned; insert, upsert, a failed upsert (data files written, never committed), then an
    upsert whose EAGER failed-writes policy makes Hudi roll the failed one back (`T.rollback`)."""
    b = _Builder(spark, "with_rollback", base_path, partitioned=True)
    b.write("insert", batch_ids(0), batch=0)
    b.write("upsert", list(range(0, 20)), batch=1)
    ht.write_failing(
        spark,
        base_path,
        ht.generate(spark, range(10, 40), batch=2),
        "upsert",
        b.name,
        partition_fields=b.partition_fields,
    )
    b.write("upsert", list(range(40, 50)), batch=3, extra={"hoodie.cleaner.policy.failed.writes": "EAGER"})
    return b.finish()


def build_with_clean(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Partitioned; Hudi's own automatic cleaning (KEEP_LATEST_COMMITS, 2 retained) after 6 writes,
    so the timeline holds Hudi-written clean plans and clean metadata."""
    opts = {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2"}
    b = _Builder(spark, "with_clean", base_path, partitioned=True, opts=opts)
    b.write("insert", batch_ids(0), batch=0)
    for batch in range(1, 6):
        b.write("upsert", list(range(batch, BATCH_ROWS, 4)), batch=batch)
    return b.finish()


def build_nonpartitioned(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Non-partitioned; insert, insert, upsert."""
    b = _Builder(spark, "nonpartitioned", base_path, partitioned=False)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    b.write("upsert", list(range(0, 120, 3)), batch=2)
    return b.finish()


MERGE_ON_READ_OPTIONS = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def build_merge_on_read(spark: SparkSession, base_path: Path) -> HudiHistory:
    """Partitioned MERGE_ON_READ; insert, insert, then two upserts that Hudi writes as deltacommits
    appending log files to existing file groups (no compaction: inline compaction is off)."""
    b = _Builder(spark, "merge_on_read", base_path, partitioned=True, opts=MERGE_ON_READ_OPTIONS)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    b.write("upsert", list(range(0, 60, 3)), batch=2)
    b.write("upsert", list(range(60, 120, 5)), batch=3)
    return b.finish()


BUILDERS: dict[str, Callable[[SparkSession, Path], HudiHistory]] = {
    "many_commits": build_many_commits,
    "with_replace": build_with_replace,
    "with_rollback": build_with_rollback,
    "with_clean": build_with_clean,
    "nonpartitioned": build_nonpartitioned,
    "merge_on_read": build_merge_on_read,
}


class HistoryCache:
    """Builds each history on first use, into one session directory."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self._spark = spark
        self._root = root
        self._built: dict[str, HudiHistory] = {}

    def get(self, name: str) -> HudiHistory:
        if name not in self._built:
            self._built[name] = BUILDERS[name](self._spark, self._root / name)
        return self._built[name]

    def build_times(self) -> dict[str, float]:
        return {name: h.build_seconds for name, h in self._built.items()}


@pytest.fixture(scope="session")
def hudi_histories(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> HistoryCache:
    return HistoryCache(spark, tmp_path_factory.mktemp("hudi-histories"))


def _copy(cache: HistoryCache, name: str, tmp_path: Path) -> HudiHistory:
    return cache.get(name).copy_to(tmp_path / name)


@pytest.fixture
def history_many_commits(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "many_commits", tmp_path)


@pytest.fixture
def history_with_replace(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "with_replace", tmp_path)


@pytest.fixture
def history_with_rollback(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "with_rollback", tmp_path)


@pytest.fixture
def history_with_clean(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "with_clean", tmp_path)


@pytest.fixture
def history_nonpartitioned(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "nonpartitioned", tmp_path)


@pytest.fixture
def history_merge_on_read(hudi_histories: HistoryCache, tmp_path: Path) -> HudiHistory:
    return _copy(hudi_histories, "merge_on_read", tmp_path)
