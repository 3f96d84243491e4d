"""End to end (issue 5): Hudi's Spark writer and the daemon share one real ZooKeeper lock on one table.

The writer commits small batches with optimistic concurrency (ZookeeperBasedLockProvider, LAZY failed
writes, updates allowed into file groups under a pending clustering plan) and retries a batch Hudi
rejects with a write conflict, leaving the rejected attempt pending as Hudi does under LAZY; one batch
fails outright after writing its files. Meanwhile the daemon schedules and executes clustering, cleans,
and rolls back the writer's failed attempts once their heartbeats expire (nobody else does).
Whatever interleaving happens, Hudi and hudi-rs must read every record exactly once with its latest value.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.executor import SparkExecutor
from service.rollback import find_completed_rollback
from service.table import codecs
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.waiting import wait_until
from tests.support.zookeeper import ZookeeperServer

T = TypeVar("T")

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.zk, pytest.mark.slow]

TABLE = "e2e_zk"
ALLOW_UPDATES = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
NEW_IDS_PER_BATCH = 12
COMPLETED_ACTIONS = ("commit", "replacecommit", "clean", "rollback")
# Short heartbeats, the same for the writer and the daemon: a dead attempt counts as failed after 10 s.
HEARTBEAT = {
    "hoodie.client.heartbeat.interval_in_ms": "2000",
    "hoodie.client.heartbeat.tolerable.misses": "5",
}


class Writer:
    """Hudi's Spark writer under OCC on the ZooKeeper lock; remembers each id's latest batch."""

    def __init__(self, spark: Any, base: Path, zk_connect: str, lock_base_path: str) -> None:
        self.spark = spark
        self.base = base
        self.opts = {
            **ht.occ_zookeeper_options(zk_connect, lock_base_path, TABLE),
            "hoodie.clustering.updates.strategy": ALLOW_UPDATES,
            "hoodie.write.lock.wait_time_ms": "60000",
            **HEARTBEAT,
        }
        self.latest: dict[int, int] = {}
        self.failed: list[str] = []  # attempts Hudi rejected or that failed, left pending (LAZY)

    def batch_ids(self, batch: int) -> list[int]:
        """New ids plus an update of every third earlier id (a different third each batch)."""
        new = range(batch * NEW_IDS_PER_BATCH, (batch + 1) * NEW_IDS_PER_BATCH)
        updates = [i for i in self.latest if i % 3 == batch % 3]
        return sorted([*new, *updates])

    def write_batch(self, batch: int) -> None:
        ids = self.batch_ids(batch)

        def write() -> str:
            df = ht.generate(self.spark, ids, batch)
            return ht.write(self.spark, self.base, df, "upsert", TABLE, **self._target())

        self._until_accepted(write)
        self.latest.update(dict.fromkeys(ids, batch))

    def write_failing_batch(self, batch: int) -> str:
        """A batch that fails after writing its data files; its records must never become visible."""

        def write() -> str:
            df = ht.generate(self.spark, self.batch_ids(batch), batch)
            return ht.write_failing(self.spark, self.base, df, "upsert", TABLE, **self._target())

        instant = self._until_accepted(write)
        self.failed.append(instant)
        return instant

    def _target(self) -> dict[str, Any]:
        return {"partition_fields": [ht.PARTITION_FIELD], "extra_opts": self.opts}

    def _until_accepted(self, attempt: Callable[[], T], timeout_s: float = 120.0) -> T:
        """Run a write again while Hudi rejects it for the daemon (see `_retryable`), as a streaming
        writer retries a failed batch."""
        from py4j.protocol import Py4JJavaError

        deadline = time.monotonic() + timeout_s
        while True:
            before = _pending_commits(self.base)
            try:
                return attempt()
            except Py4JJavaError as err:
                if not _retryable(str(err)) or time.monotonic() > deadline:
                    raise
                # Hudi leaves the rejected attempt pending (LAZY): the daemon's cleaning rolls it back.
                self.failed.extend(sorted(_pending_commits(self.base) - before))
                time.sleep(1.0)  # let the clustering that conflicted finish before trying again

    def expected_rows(self) -> list[dict[str, Any]]:
        return [ht.expected_row(i, b) for i, b in sorted(self.latest.items())]


def _daemon(base: Path, zk_connect: str, lock_base_path: str, spark: Any, extra_lock: str = "") -> Daemon:
    config = parse_daemon_config(
        f"""
daemon:
  poll_interval_seconds: 1
  shutdown_grace_seconds: 120
  config_watch_seconds: 0
  metrics: {{port: 0}}
  failures: {{backoff_initial_seconds: 0.5, backoff_max_seconds: 2, quarantine_after: 1000}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk_connect}"
      hoodie.write.lock.zookeeper.base_path: "{lock_base_path}"
      hoodie.write.lock.zookeeper.lock_key: {TABLE}{extra_lock}
defaults:
  hoodie.clustering.async.max.commits: 2
  hoodie.cleaner.commits.retained: 2
  hoodie.cleaner.policy.failed.writes: LAZY
  hoodie.client.heartbeat.interval_in_ms: {HEARTBEAT["hoodie.client.heartbeat.interval_in_ms"]}
  hoodie.client.heartbeat.tolerable.misses: {HEARTBEAT["hoodie.client.heartbeat.tolerable.misses"]}
tables:
  - name: {TABLE}
    base_path: {base}
    timezone: UTC  # Hudi wrote a LOCAL timeline in the JVM's zone, UTC on this machine
"""
    )
    return Daemon(
        config, registry=CollectorRegistry(), executor=SparkExecutor(session=spark), serve_http=False
    )


def _instant_states(base: Path) -> dict[str, set[str]]:
    """Instant time -> the suffixes of its files (`commit.requested`, `inflight`, `replacecommit`, ...)."""
    states: dict[str, set[str]] = {}
    if not (base / ".hoodie").is_dir():
        return states
    for name in ht.timeline_files(base):
        time_part, _, suffix = name.partition(".")
        states.setdefault(time_part, set()).add(suffix)
    return states


def _pending_instants(base: Path) -> list[str]:
    return sorted(t for t, s in _instant_states(base).items() if not s & set(COMPLETED_ACTIONS))


def _pending_commits(base: Path) -> set[str]:
    """Pending instants of the commit action: only the writer makes them (the daemon's are replacecommits)."""
    return {t for t, s in _instant_states(base).items() if s <= {"commit.requested", "inflight"}}


def _retryable(error: str) -> bool:
    """A write Hudi rejected for a concurrent table service: a conflict, or a clustering plan the daemon
    rolled back (after a conflict of its own) between the writer listing and reading the timeline; Hudi's
    own writers delete a plan they give up on the same way (docs/operations.md)."""
    return "HoodieWriteConflictException" in error or ("replacecommit.requested does not exist" in error)


def _clusterings(base: Path) -> list[str]:
    """Completed replacecommits whose commit metadata says CLUSTER."""
    out = []
    for instant in ht.instants_with_action(base, "replacecommit"):
        name = f"{instant}.replacecommit"
        metadata = codecs.decode(codecs.ReplaceCommitMetadata, (base / ".hoodie" / name).read_bytes(), name)
        if metadata.operation_type is codecs.WriteOperationType.CLUSTER:
            out.append(instant)
    return out


def _assert_readers_see(base: Path, spark: Any, writer: Writer) -> None:
    expected = writer.expected_rows()
    assert ht.normalise_rows(ht.read_snapshot(spark, base)) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == expected


def _assert_only_a_plan_pending(base: Path) -> None:
    states = _instant_states(base)
    for instant in _pending_instants(base):
        assert states[instant] == {"replacecommit.requested"}, f"unexpected pending instant {instant}"


def _assert_rolled_back_by_the_daemon(base: Path, instants: list[str]) -> None:
    """Each failed attempt is gone: a completed rollback names it and none of its data files remain."""
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    for instant in instants:
        assert find_completed_rollback(table, timeline, instant) is not None, f"{instant} not rolled back"
        assert not list(base.glob(f"*/*_{instant}.parquet")), f"files of failed write {instant} remain"


def test_e2e_writer_and_daemon_share_zookeeper_lock(
    tmp_path: Path, spark: Any, private_zookeeper: ZookeeperServer, lock_base_path: str
) -> None:
    base = tmp_path / TABLE
    zk_connect = private_zookeeper.connect_string
    writer = Writer(spark, base, zk_connect, lock_base_path)
    writer.write_batch(0)  # creates the table before the daemon opens it
    daemon = _daemon(base, zk_connect, lock_base_path, spark)
    daemon.start()
    try:
        for batch in range(1, 5):
            writer.write_batch(batch)
        dead = writer.write_failing_batch(99)  # a writer dies after writing its files
        dead_files = list(base.glob(f"*/*_{dead}.parquet"))
        assert dead_files
        for batch in range(5, 9):
            writer.write_batch(batch)
        wait_until(lambda: bool(_clusterings(base)), 150, "a completed clustering")
        wait_until(lambda: bool(ht.instants_with_action(base, "clean")), 60, "a completed clean")
        # Nobody but the daemon rolls back the writer's failed attempts (LAZY, heartbeats expired).
        wait_until(lambda: not _pending_commits(base), 90, "the writer's failed attempts rolled back")
    finally:
        assert daemon.stop(grace_seconds=120)

    clusterings = _clusterings(base)
    assert clusterings and ht.instants_with_action(base, "clean")
    commits = ht.instants_with_action(base, "commit")
    assert len(commits) == 9  # every batch committed exactly once
    assert commits[-1] > clusterings[0]  # the writer went on committing around the clusterings
    assert dead in writer.failed
    _assert_rolled_back_by_the_daemon(base, writer.failed)
    assert not any(p.exists() for p in dead_files)
    _assert_only_a_plan_pending(base)
    _assert_readers_see(base, spark, writer)


def test_e2e_zookeeper_outage_commits_nothing_then_recovers(
    tmp_path: Path, spark: Any, private_zookeeper: ZookeeperServer, lock_base_path: str
) -> None:
    base = tmp_path / TABLE
    zookeeper = private_zookeeper
    writer = Writer(spark, base, zookeeper.connect_string, lock_base_path)
    for batch in range(3):  # clustering (2 commits) and cleaning (upserts) are both due
        writer.write_batch(batch)
    daemon = _daemon(
        base, zookeeper.connect_string, lock_base_path, spark,
        extra_lock="\n      hoodie.write.lock.zookeeper.connection_timeout_ms: 2000"
        "\n      hoodie.write.lock.wait_time_ms: 3000",
    )  # fmt: skip
    zookeeper.stop()
    before = ht.timeline_files(base)
    daemon.start()
    try:
        runtime = daemon.runtimes[TABLE]
        wait_until(lambda: len(runtime.errors) >= 2, 60, "failed ticks while ZooKeeper is down")
        time.sleep(3)
        # Without the lock nothing is planned or committed.
        assert ht.timeline_files(base) == before
        zookeeper.restart()
        wait_until(lambda: bool(_clusterings(base)), 150, "a completed clustering after the restart")
        # The writer goes on; once the clustering's replaced file groups fall out of the retained
        # commits (hoodie.cleaner.commits.retained=2) the daemon cleans them.
        for batch in range(3, 6):
            writer.write_batch(batch)
        wait_until(lambda: bool(ht.instants_with_action(base, "clean")), 90, "a clean after the restart")
        wait_until(lambda: not _pending_commits(base), 90, "the writer's failed attempts rolled back")
    finally:
        assert daemon.stop(grace_seconds=120)
    _assert_only_a_plan_pending(base)
    _assert_readers_see(base, spark, writer)
