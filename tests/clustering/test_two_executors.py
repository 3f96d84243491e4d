"""One executor per clustering instant, with real processes on Hudi-written tables (issue 10 item 3).

Two `hudi-table-service cluster --mode execute` processes on one plan: one commits, the other refuses.
A SIGKILLed owner is taken over only once its heartbeat expired. Hudi's own LAZY writer, cleaning and
rolling back failed writes beside a clustering we keep inflight, never rolls it back. Every outcome is
read back through Hudi's reader and hudi-rs: every record exactly once, with its latest value.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.errors import InstantOwnedError
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import ZookeeperTableLock
from service.rollback import find_completed_rollback
from service.table.heartbeat import HeartbeatSettings, heartbeat_path, judge
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.lock.zk_helpers import zk_settings
from tests.support import hudi_tables as ht
from tests.support.clustering_checks import GatedExecutor, assert_readers_see, clustering_state, live_outputs
from tests.support.histories import HudiHistory
from tests.support.paths import REPO_ROOT
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def _schedule(table: HudiTable) -> str:
    config = HoodieConfig.from_mapping({}, table.name)
    lock = InProcessTableLock(table.name)
    instant = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC).instant_time
    assert instant is not None
    return instant


def _cli(base: Path, instant: str, interval_ms: int, log: Path) -> subprocess.Popen[bytes]:
    """`hudi-table-service cluster --mode execute` of this worktree, in its own process group."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.cli", "cluster", "--base-path", str(base), "--mode", "execute",
             "--instant-time", instant, "--timezone", "UTC", "--spark-master", "local[1]",
             "--hoodie-conf", f"hoodie.client.heartbeat.interval_in_ms={interval_ms}"],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _wait(
    predicate: Callable[[], bool], timeout_s: float, what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"timed out waiting for {what}; process log:\n{log.read_text()[-4000:]}")
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def _assert_only_committed_outputs(base: Path, instant: str) -> None:
    """No file of `instant` outside the committed ones: a loser's or a dead attempt's files are gone."""
    on_disk, live = live_outputs(base, instant)
    assert on_disk == live and on_disk


def test_two_cli_executors_on_one_plan_one_commits_the_other_refuses(
    history_many_commits: HudiHistory, spark: Any, tmp_path: Path
) -> None:
    history = history_many_commits
    base = history.base_path
    table = HudiTable.open(str(base))
    instant = _schedule(table)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _cli(base, instant, 5000, first_log)
    try:
        _wait(
            lambda: clustering_state(table, instant) is State.INFLIGHT,
            180,
            "the first to claim",
            first,
            first_log,
        )
        # The first process is only starting Spark now: the second meets a live attempt.
        second = _cli(base, instant, 5000, second_log)
        assert second.wait(timeout=180) == 1
        refusal = second_log.read_text()
        assert f"not executing replacecommit {instant} (inflight): another executor owns it" in refusal
        assert "heartbeat" in refusal and "s old" in refusal
        assert first.poll() is None, "the first finished before the second met it: no overlap"
        assert first.wait(timeout=300) == 0, first_log.read_text()[-4000:]
    finally:
        _stop(first)
    assert clustering_state(table, instant) is State.COMPLETED
    assert find_completed_rollback(table, table.load_timeline(), instant) is None  # nobody rolled it back
    assert not (base / heartbeat_path(instant)).exists()  # stopped and deleted
    _assert_only_committed_outputs(base, instant)
    assert_readers_see(history, spark)


def test_sigkilled_owner_is_taken_over_only_after_its_heartbeat_expired(
    history_many_commits: HudiHistory, spark: Any, tmp_path: Path
) -> None:
    history = history_many_commits
    base = history.base_path
    table = HudiTable.open(str(base))
    instant = _schedule(table)
    interval_ms = 3000  # x 2 tolerable misses: expired 6 s after the last beat
    log = tmp_path / "owner.log"
    owner = _cli(base, instant, interval_ms, log)
    markers = base / ".hoodie" / ".temp" / instant
    try:
        # Killed mid-execution: once its Spark tasks have started writing data files.
        _wait(lambda: markers.is_dir() and any(markers.iterdir()), 240, "the first data file", owner, log)
        os.killpg(owner.pid, signal.SIGKILL)  # the process and its JVM, as a lost machine
        owner.wait(timeout=60)
    finally:
        _stop(owner)
    assert clustering_state(table, instant) is State.INFLIGHT, "the owner committed before it was killed"
    assert (base / heartbeat_path(instant)).exists()  # a dead owner deletes nothing

    config = HoodieConfig.from_mapping({"hoodie.client.heartbeat.interval_in_ms": interval_ms}, table.name)
    executor = SparkExecutor(session=spark)
    lock = InProcessTableLock(table.name)
    before = sorted(p.name for p in (base / ".hoodie").iterdir())
    with pytest.raises(InstantOwnedError, match=rf"replacecommit {instant} .*heartbeat \d\.\d s old"):
        execute_clustering(table, instant, config, executor.run_group, lock, zone=UTC)
    assert sorted(p.name for p in (base / ".hoodie").iterdir()) == before  # nothing touched meanwhile

    settings = HeartbeatSettings.from_config(config)
    inflight = table.load_timeline().find(instant, Action.REPLACE_COMMIT)
    assert inflight is not None
    deadline = time.monotonic() + 30
    while judge(table.storage, table.layout, inflight, settings, time.time()).alive:
        assert time.monotonic() < deadline, "the dead owner's heartbeat never expired"
        time.sleep(0.2)
    result = execute_clustering(table, instant, config, executor.run_group, lock, zone=UTC)
    assert result.committed
    # The dead attempt was rolled back (its files by markers) before the plan ran again.
    assert find_completed_rollback(table, table.load_timeline(), instant) is not None
    _assert_only_committed_outputs(base, instant)
    assert_readers_see(history, spark)


@pytest.mark.zk
def test_hudi_lazy_writer_never_rolls_back_a_clustering_being_executed(
    history_many_commits: HudiHistory,
    spark: Any,
    zookeeper_server: ZookeeperServer,
    new_pool: Callable[[], KazooClientPool],
    lock_base_path: str,
) -> None:
    history = history_many_commits
    base = history.base_path
    table = HudiTable.open(str(base))
    lazy_writer = {
        **ht.occ_zookeeper_options(zookeeper_server.connect_string, lock_base_path, history.table_name),
        # Short heartbeats: Hudi judges its failed write dead 2 s after its last beat.
        "hoodie.client.heartbeat.interval_in_ms": "1000",
        "hoodie.client.heartbeat.tolerable.misses": "2",
        # Every commit runs Hudi's clean, which first rolls back failed writes (LAZY).
        "hoodie.clean.automatic": "true",
        "hoodie.clean.async": "false",
    }
    lock = ZookeeperTableLock(
        zk_settings(zookeeper_server, lock_base_path, lock_key=history.table_name), history.table_name,
        pool=new_pool(),
    )  # fmt: skip
    config = HoodieConfig.from_mapping({"hoodie.client.heartbeat.interval_in_ms": 5000}, table.name)
    instant = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC).instant_time
    assert instant is not None
    runner = GatedExecutor(spark)
    outcome: list[Any] = []

    def cluster() -> None:
        try:
            outcome.append(execute_clustering(table, instant, config, runner.run_group, lock, zone=UTC))
        except BaseException as exc:  # re-raised by the test thread below
            outcome.append(exc)

    thread = threading.Thread(target=cluster, name="clustering")
    thread.start()
    try:
        assert runner.entered.wait(120), "the clustering never started executing"
        assert clustering_state(table, instant) is State.INFLIGHT
        # A failed Hudi write (left pending, as under LAZY) whose heartbeat then expires...
        failed = ht.write_failing(
            spark, base, ht.generate(spark, range(500, 510), batch=7), "upsert", history.table_name,
            partition_fields=history.partition_fields, extra_opts={**history.writer_opts, **lazy_writer},
        )  # fmt: skip
        time.sleep(3)  # past Hudi's 2 s window for its failed write
        # ...is rolled back by Hudi's clean after the next commits; our clustering is not.
        for batch, ids in ((8, range(600, 612)), (9, range(612, 624))):
            history.write(spark, ht.generate(spark, ids, batch=batch), "insert", lazy_writer)
            history = _with(history, ids, batch)
        timeline = table.load_timeline()
        assert find_completed_rollback(table, timeline, failed) is not None, "Hudi rolled back nothing"
        assert clustering_state(table, instant) is State.INFLIGHT
        assert find_completed_rollback(table, timeline, instant) is None
    finally:
        runner.gate.set()
        thread.join(300)
    [result] = outcome
    if isinstance(result, BaseException):
        raise result
    assert result.committed
    assert find_completed_rollback(table, table.load_timeline(), instant) is None
    assert_readers_see(history, spark)


def _with(history: HudiHistory, ids: range, batch: int) -> HudiHistory:
    from dataclasses import replace

    return replace(history, latest_batch={**history.latest_batch, **dict.fromkeys(ids, batch)})
