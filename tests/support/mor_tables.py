"""Merge-on-read tables written by real Hudi 0.15.0, built once per test session.

Each history exercises the log format and merge rules a reader must get right: updates in log
files (Avro blocks by default, Parquet blocks with `hoodie.logfile.data.block.format=parquet`),
log-vs-log updates with a lower and an equal ordering value, a base-vs-log update with a lower
ordering value, a datasource delete (a delete block), `_hoodie_is_deleted`, and a failed
deltacommit that the next writer rolls back (a rollback command block). Compaction stays off so
every update stays in the logs.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support import hudi_tables as ht

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

IS_DELETED = "_hoodie_is_deleted"
_PAYLOAD_PACKAGE = "org.apache.hudi.common.model"


def completed_deltacommits(base_path: Path) -> list[str]:
    meta = base_path / ".hoodie"
    return sorted(p.name.split(".")[0] for p in meta.glob("*.deltacommit")) if meta.exists() else []


def mor_options(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.compact.inline": "false",
        "hoodie.compact.schedule.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        **(extra or {}),
    }


def rows(spark: SparkSession, ids: Sequence[int], tag: int, ts: int, deleted: bool = False) -> DataFrame:
    """`hudi_tables.generate` rows for (ids, tag) with ordering value `ts` and `_hoodie_is_deleted`."""
    from pyspark.sql import functions as F

    df = ht.generate(spark, ids, batch=tag)
    return df.withColumn("ts", F.lit(ts).cast("long")).withColumn(IS_DELETED, F.lit(deleted))


@dataclass(frozen=True)
class MorHistory:
    """A MOR table written by Hudi, and the keys of each case it holds (record key strings)."""

    name: str
    base_path: Path
    partitioned: bool
    cases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    failed_instant: str = ""  # a failed deltacommit; for the compaction histories, the pending compaction
    build_seconds: float = 0.0


class _MorBuilder:
    def __init__(
        self, spark: SparkSession, name: str, base_path: Path, partitioned: bool, opts: Mapping[str, str]
    ):
        self.spark = spark
        self.name = name
        self.base_path = base_path
        self.partition_fields = (ht.PARTITION_FIELD,) if partitioned else ()
        self.opts = mor_options(opts)
        self.cases: dict[str, tuple[str, ...]] = {}
        self.started = time.monotonic()

    def write(
        self, op: str, ids: Sequence[int], tag: int, ts: int, deleted: bool = False, **extra: str
    ) -> str:
        """One Hudi write; returns the deltacommit it completed (`hudi_tables.write` waits for COW
        commits only)."""
        df = rows(self.spark, ids, tag, ts, deleted)
        opts = ht.writer_options(self.name, ht.RECORD_KEY, ht.PRECOMBINE, self.partition_fields)
        opts.update({**self.opts, "hoodie.datasource.write.operation": op, **extra})
        before = set(completed_deltacommits(self.base_path))
        df.write.format("hudi").options(**opts).mode("append").save(str(self.base_path))
        added = sorted(set(completed_deltacommits(self.base_path)) - before)
        if not added:
            raise AssertionError(f"Hudi {op} on {self.base_path} completed no deltacommit")
        return added[-1]

    def write_failing(self, ids: Sequence[int], tag: int, ts: int) -> str:
        """A deltacommit whose log blocks are written but which never completes (a pre-commit
        validator that never passes, as `hudi_tables.write_failing` does for COW)."""
        from py4j.protocol import Py4JJavaError

        meta = self.base_path / ".hoodie"
        before = {p.name for p in meta.glob("*.deltacommit.inflight")}
        try:
            self.write("upsert", ids, tag, ts, **ht.FAILING_WRITE_OPTIONS)
        except Py4JJavaError as err:
            if not ht.failed_by_the_validator(err):
                raise
        else:
            raise AssertionError(f"the failing write on {self.base_path} completed")
        left = sorted({p.name for p in meta.glob("*.deltacommit.inflight")} - before)
        completed = set(completed_deltacommits(self.base_path))
        left = [n for n in left if n.split(".")[0] not in completed]
        if len(left) != 1:
            raise AssertionError(f"expected one failed deltacommit, found {left}")
        return left[0].split(".")[0]

    def finish(self, failed: str) -> MorHistory:
        return MorHistory(
            self.name,
            self.base_path,
            bool(self.partition_fields),
            dict(self.cases),
            failed,
            time.monotonic() - self.started,
        )


def hudi_write(
    spark: SparkSession,
    history: MorHistory,
    op: str,
    ids: Sequence[int],
    tag: int,
    ts: int,
    base_path: Path | None = None,
    **extra: str,
) -> str:
    """One more Hudi write to `history`'s table (or its copy at `base_path`), as the history's own
    writes; returns the deltacommit it completed."""
    builder = _MorBuilder(spark, history.name, base_path or history.base_path, history.partitioned, {})
    return builder.write(op, ids, tag, ts, False, **extra)


def _keys(ids: Sequence[int]) -> tuple[str, ...]:
    return tuple(str(i) for i in ids)


def build_mor(
    spark: SparkSession, base_path: Path, name: str, partitioned: bool, opts: Mapping[str, str]
) -> MorHistory:
    b = _MorBuilder(spark, name, base_path, partitioned, opts)
    b.write("insert", range(0, 48), tag=0, ts=10)
    b.write("upsert", range(0, 24), tag=1, ts=20)
    # log vs log: a lower ordering value (the earlier log record stays), an equal one (Hudi's tie rule)
    b.write("upsert", range(0, 12), tag=2, ts=20)
    b.write("upsert", range(0, 6), tag=3, ts=15)
    b.cases["log_lower_ordering"] = _keys(range(0, 6))
    b.cases["log_equal_ordering"] = _keys(range(6, 12))
    # base vs log: a lower ordering value than the base record's
    b.write("upsert", range(24, 30), tag=4, ts=5)
    b.cases["base_higher_ordering"] = _keys(range(24, 30))
    b.write("delete", range(12, 16), tag=5, ts=30)
    b.cases["deleted"] = _keys(range(12, 16))
    b.write("upsert", range(16, 18), tag=6, ts=30, deleted=True)
    b.cases["is_deleted"] = _keys(range(16, 18))
    failed = b.write_failing(range(18, 24), tag=7, ts=99)
    b.cases["failed_write"] = _keys(range(18, 24))
    # The next writer rolls the failed deltacommit back (EAGER): a rollback command block. Its
    # INSTANT_TIME is the rollback instant, later than this write's own instant.
    b.write("upsert", range(30, 33), tag=8, ts=40, **{"hoodie.cleaner.policy.failed.writes": "EAGER"})
    b.cases["after_rollback"] = _keys(range(30, 33))
    return b.finish(failed)


def build_failed_pending(spark: SparkSession, base_path: Path, name: str) -> MorHistory:
    """A failed deltacommit left pending, its heartbeat expired: what a killed writer under
    `hoodie.cleaner.policy.failed.writes=LAZY` leaves for the next clean to roll back. The failing
    write runs with EAGER (Hudi's default: no heartbeat file, which counts as expired) and no writer
    follows it. It appends log blocks to existing file groups and creates a new one (a base file).
    The metadata table is on (Hudi's default), so a rollback must keep it in sync."""
    b = _MorBuilder(spark, name, base_path, True, {"hoodie.metadata.enable": "true"})
    b.write("insert", range(0, 24), tag=0, ts=10)
    b.write("upsert", range(0, 12), tag=1, ts=20)
    failed = b.write_failing([*range(6, 18), *range(100, 106)], tag=2, ts=99)
    b.cases["failed_updates"] = _keys(range(6, 18))
    b.cases["failed_inserts"] = _keys(range(100, 106))
    return b.finish(failed)


def build_default_payload(spark: SparkSession, base_path: Path, name: str) -> MorHistory:
    """Non-partitioned, `DefaultHoodieRecordPayload`: base vs log compares ordering values."""
    payload = {"hoodie.datasource.write.payload.class": f"{_PAYLOAD_PACKAGE}.DefaultHoodieRecordPayload"}
    b = _MorBuilder(spark, name, base_path, False, payload)
    b.write("insert", range(0, 24), tag=0, ts=10)
    b.write("upsert", range(0, 8), tag=1, ts=5)
    b.cases["base_higher_ordering"] = _keys(range(0, 8))
    b.write("upsert", range(8, 16), tag=2, ts=10)
    b.cases["base_equal_ordering"] = _keys(range(8, 16))
    b.write("upsert", range(16, 24), tag=3, ts=20)
    b.write("upsert", range(16, 24), tag=4, ts=20)
    b.cases["log_equal_ordering"] = _keys(range(16, 24))
    return b.finish("")


COMPACT_EVERY_DELTACOMMIT = "hoodie.compact.inline.max.delta.commits=1"


def hudi_compaction(spark: SparkSession, base_path: Path, op: str) -> str:
    """`CALL run_compaction(op => 'schedule' | 'run')` with Hudi's own planner; returns the instant
    it scheduled (or ran). Every deltacommit counts as a trigger, so one is always due."""
    call = (
        f"CALL run_compaction(op => '{op}', path => '{base_path}', options => '{COMPACT_EVERY_DELTACOMMIT}')"
    )
    before = {p.name.split(".")[0] for p in (base_path / ".hoodie").glob("*.compaction.requested")}
    spark.sql(call).collect()
    added = {p.name.split(".")[0] for p in (base_path / ".hoodie").glob("*.compaction.requested")} - before
    if len(added) != 1:
        raise AssertionError(f"Hudi's run_compaction({op}) on {base_path} scheduled {sorted(added)}")
    return added.pop()


def build_pending_compaction(spark: SparkSession, source: MorHistory, base_path: Path) -> MorHistory:
    """A copy of `source` with a compaction scheduled by Hudi and left pending, then an upsert into
    one partition's group, which appends to the new slice (log files named with the compaction
    instant, `HoodieAppendHandle.init`); the other groups' new slices stay empty."""
    shutil.copytree(source.base_path, base_path, symlinks=True)
    b = _MorBuilder(spark, source.name, base_path, source.partitioned, {})
    compaction = hudi_compaction(spark, base_path, "schedule")
    one_partition = range(0, 24, len(ht.PARTITIONS)) if source.partitioned else range(0, 8)
    b.write("upsert", one_partition, tag=20, ts=100)
    b.cases["after_compaction_scheduled"] = _keys(one_partition)
    history = b.finish("")
    return MorHistory(history.name, base_path, history.partitioned, history.cases, compaction)


def build_compacted(spark: SparkSession, base_path: Path, name: str) -> MorHistory:
    """Partitioned, several slices per file group: Hudi compactions completed between deltacommits
    (old slices the cleaner may delete, base and logs), new file groups, and a compaction scheduled by
    Hudi and left pending with a deltacommit appended after it (slices the cleaner must keep)."""
    b = _MorBuilder(spark, name, base_path, True, {})
    b.write("insert", range(0, 48), tag=0, ts=10)
    b.write("upsert", range(0, 24), tag=1, ts=20)
    b.write("upsert", range(12, 36), tag=2, ts=30)
    hudi_compaction(spark, base_path, "run")
    b.write("upsert", range(0, 48, 2), tag=3, ts=40)
    b.write("insert", range(100, 130), tag=4, ts=40)
    b.write("upsert", range(1, 48, 3), tag=5, ts=50)
    hudi_compaction(spark, base_path, "run")
    b.write("upsert", range(0, 48, 5), tag=6, ts=60)
    b.write("delete", range(40, 44), tag=7, ts=70)
    pending = hudi_compaction(spark, base_path, "schedule")
    b.write("upsert", range(3, 48, 4), tag=8, ts=80)
    history = b.finish("")
    return MorHistory(history.name, base_path, True, history.cases, pending)


MOR_BUILDS: dict[str, tuple[bool, dict[str, str]]] = {
    "mor_partitioned_avro": (True, {}),
    "mor_nonpartitioned_parquet": (False, {"hoodie.logfile.data.block.format": "parquet"}),
}


class MorHistoryCache:
    def __init__(self, spark: SparkSession, root: Path) -> None:
        self._spark = spark
        self._root = root
        self._built: dict[str, MorHistory] = {}

    def get(self, name: str) -> MorHistory:
        if name not in self._built:
            if name == "mor_default_payload":
                self._built[name] = build_default_payload(self._spark, self._root / name, name)
            elif name == "mor_pending_compaction":
                source = self.get("mor_partitioned_avro")
                self._built[name] = build_pending_compaction(self._spark, source, self._root / name)
            elif name == "mor_failed_pending":
                self._built[name] = build_failed_pending(self._spark, self._root / name, name)
            elif name == "mor_compacted":
                self._built[name] = build_compacted(self._spark, self._root / name, name)
            else:
                partitioned, opts = MOR_BUILDS[name]
                self._built[name] = build_mor(self._spark, self._root / name, name, partitioned, opts)
        return self._built[name]


@pytest.fixture(scope="session")
def mor_histories(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> MorHistoryCache:
    return MorHistoryCache(spark, tmp_path_factory.mktemp("mor-histories"))


@dataclass(frozen=True, order=True)
class HudiSlice:
    """A file slice as Hudi's view returns it: log file names oldest first (Java lists them newest
    first, `FileSlice.getLogFiles`; reversed here to compare with readers' order)."""

    partition: str
    file_id: str
    base_instant: str
    base_file: str
    log_files: tuple[str, ...]


def _java_slice(partition: str, file_slice: Any) -> HudiSlice:
    base = file_slice.getBaseFile()
    logs = []
    it = file_slice.getLogFiles().iterator()
    while it.hasNext():
        logs.append(it.next().getFileName())
    return HudiSlice(
        partition,
        file_slice.getFileId(),
        file_slice.getBaseInstantTime(),
        base.get().getFileName() if base.isPresent() else "",
        tuple(reversed(logs)),
    )


def hudi_view_slices(spark: SparkSession, base_path: Path) -> tuple[list[HudiSlice], list[HudiSlice]]:
    """(latest slices, every slice of every file group) from Hudi's `HoodieTableFileSystemView`
    over completed and compaction instants (`FileSystemViewManager`'s in-memory view), via py4j."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(
        spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
    )
    meta = jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
    meta = meta.setConf(conf).setBasePath(str(base_path)).build()
    timeline = meta.getActiveTimeline().filterCompletedAndCompactionInstants()
    view = jvm.org.apache.hudi.common.table.view.HoodieTableFileSystemView(meta, timeline)
    latest: list[HudiSlice] = []
    every: list[HudiSlice] = []
    try:
        for partition in ht.partition_paths(base_path):
            it = view.getLatestFileSlices(partition).iterator()
            while it.hasNext():
                latest.append(_java_slice(partition, it.next()))
            groups = view.getAllFileGroups(partition).iterator()
            while groups.hasNext():
                slices = groups.next().getAllFileSlices().iterator()
                while slices.hasNext():
                    every.append(_java_slice(partition, slices.next()))
    finally:
        view.close()
    return sorted(latest), sorted(every)


def compacted_snapshot(
    history: MorHistory, snapshot: list[dict[str, Any]], hudi_rs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Hudi's snapshot read once the table is compacted, from the reads before (normalised rows):
    the same rows, but for the write after the rolled-back one. Before, Hudi's read stopped at the
    rollback command block (its instant is later than the read instant; see
    tests/log_format/test_merged_read_hudi.py); a compaction reads up to the rollback, as Java's,
    and hudi-rs never stops there, so those rows are hudi-rs's."""
    keys = {int(k) for k in history.cases.get("after_rollback", ())}
    later = {r["id"]: r for r in hudi_rs if r["id"] in keys}
    return [later.get(r["id"], r) for r in snapshot]


def copy_and_schedule_ours(history: MorHistory, base_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A copy of `history` at `base_path` with a compaction scheduled by our CLI; returns its instant."""
    import json

    from service.cli import main

    shutil.copytree(history.base_path, base_path, symlinks=True)
    assert main(["compact", "--base-path", str(base_path), "--mode", "schedule", "--json"]) == 0
    instant: str = json.loads(capsys.readouterr().out)["instant_time"]
    return instant
