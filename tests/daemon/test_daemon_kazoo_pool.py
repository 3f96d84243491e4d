"""A daemon owns its ZooKeeper clients: its stop closes them, and a tick still running after the stop
cannot open a new one (it would keep reconnecting, unowned, for the rest of the process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.errors import LockError
from service.lock.zookeeper import ZookeeperTableLock
from tests.clean.helpers import fid
from tests.support import leaks
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.zookeeper import ZookeeperServer

pytestmark = pytest.mark.zk


def _daemon(base: Path, zk: ZookeeperServer, lock_base_path: str) -> Daemon:
    config = parse_daemon_config(
        f"""
daemon:
  poll_interval_seconds: 60
  config_watch_seconds: 0
  metrics: {{port: 0}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk.connect_string}"
      hoodie.write.lock.zookeeper.base_path: "{lock_base_path}"
      hoodie.write.lock.zookeeper.lock_key: t
      hoodie.write.lock.wait_time_ms: 2000
tables:
  - name: t
    base_path: {base}
"""
    )
    return Daemon(config, registry=CollectorRegistry(), serve_http=False)


def test_a_tick_after_the_daemon_stopped_opens_no_zookeeper_client(
    tmp_path: Path, zookeeper_server: ZookeeperServer, lock_base_path: str
) -> None:
    table = FixtureTable(tmp_path / "t", name="t")
    table.commit(ts(1), [FileSpec("a", fid(1))])
    before = leaks.snapshot()
    daemon = _daemon(table.base, zookeeper_server, lock_base_path)
    runtime = daemon.runtimes["t"]
    _, lock, _ = runtime.open()
    with lock:  # the daemon's client connects and locks while it runs
        assert isinstance(lock, ZookeeperTableLock) and lock.is_held
    assert leaks.find_leaks(before, grace_s=0), "the daemon's ZooKeeper client is not running"
    assert daemon.stop(grace_seconds=0)
    assert leaks.find_leaks(before, grace_s=5) == []

    # A tick that passed its stopping check before stop() ran, now opening the table and locking
    # (a runtime reopened after a failure creates its lock anew): no client may come of it.
    runtime.forget_table()
    _, late_lock, _ = runtime.open()
    before = leaks.snapshot()
    with pytest.raises(LockError, match=r"client pool .* is closed"):
        late_lock.acquire(timeout_s=1)
    assert leaks.find_leaks(before, grace_s=1) == []
