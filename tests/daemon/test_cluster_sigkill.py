"""Replicas as processes (`hudi-table-service run`) on a real ZooKeeper: one is SIGKILLed, so it
releases nothing; its tables move once its session expired, and come back when it restarts."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.ports import free_port
from tests.support.replicas import ReplicaProcess
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.zk, pytest.mark.slow]

TABLES = [f"t{i:02d}" for i in range(30)]
SESSION_TIMEOUT_S = 4.0
SETTLE_S = 1.0
POLL_S = 2.0  # the membership loop's own poll
SLACK_S = 8.0  # process start-up and a loaded 2-core machine


def _replica(root: Path, zk: ZookeeperServer, path: str, replica_id: str) -> ReplicaProcess:
    port = free_port()
    off = "clustering: {enabled: false}, cleaning: {enabled: false}"
    entries = "\n".join(f"  - {{name: {t}, base_path: '{root / t}', {off}}}" for t in TABLES)
    config = root / f"{replica_id}.yaml"
    config.write_text(
        f"""
daemon:
  config_watch_seconds: 0
  shutdown_grace_seconds: 2
  metrics: {{host: 127.0.0.1, port: {port}}}
  cluster: {{enabled: true, path: {path}, replica_id: {replica_id}, settle_seconds: {SETTLE_S}}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk.connect_string}"
      hoodie.write.lock.zookeeper.base_path: /hudi/locks/{uuid.uuid4().hex[:8]}
      hoodie.write.lock.zookeeper.session_timeout_ms: {int(SESSION_TIMEOUT_S * 1000)}
tables:
{entries}
"""
    )
    return ReplicaProcess(replica_id, config, port)


@pytest.fixture
def replicas(tmp_path: Path, zookeeper_server: ZookeeperServer) -> Iterator[list[ReplicaProcess]]:
    for name in TABLES:
        FixtureTable(tmp_path / name, name=name).commit(ts(1), [FileSpec("a", fid(1))])
    path = f"/hudi-table-service/{uuid.uuid4().hex[:12]}/members"
    started = [_replica(tmp_path, zookeeper_server, path, f"r{i}") for i in range(3)]
    try:
        yield started
    finally:
        for replica in started:
            replica.kill()


def _wait_divided(replicas: list[ReplicaProcess], timeout_s: float) -> tuple[float, list[set[str]]]:
    """Wait until every table is held by exactly one of `replicas`, all ready; (seconds, shares)."""
    started = time.monotonic()
    while True:
        shares = [replica.held() for replica in replicas]
        held = [t for share in shares if share is not None for t in share]
        if None not in shares and sorted(held) == TABLES:
            return time.monotonic() - started, [share for share in shares if share is not None]
        for replica in replicas:
            assert replica.process is not None and replica.process.poll() is None, replica.replica_id
        assert time.monotonic() - started < timeout_s, f"not divided within {timeout_s} s: {shares}"
        time.sleep(0.1)


def test_a_sigkilled_replicas_tables_move_after_its_session_expires_and_come_back(
    replicas: list[ReplicaProcess],
) -> None:
    for replica in replicas:
        replica.start()
    _, shares = _wait_divided(replicas, 90)
    assert sorted(len(share) for share in shares) == [10, 10, 10]

    dead, survivors = replicas[2], replicas[:2]
    dead.kill()  # no release, no party leave: its nodes live until the server expires its session
    took, shares = _wait_divided(survivors, SESSION_TIMEOUT_S + SETTLE_S + POLL_S + SLACK_S)
    assert sorted(len(share) for share in shares) == [15, 15]
    # The survivors waited for the session to expire: the dead replica's locks held until then.
    assert took >= SESSION_TIMEOUT_S / 2, took

    dead.start()  # same replica id, a new process and session
    _, shares = _wait_divided(replicas, 90)
    assert sorted(len(share) for share in shares) == [10, 10, 10]
