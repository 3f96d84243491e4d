"""Two locks of one table connecting through the pool while ZooKeeper is down.

The daemon's cleaning and clustering ticks of a table share one pooled client. When the first
caller's start times out, kazoo stops the client and the pool drops the entry; a second caller that
already holds the entry must not start that client again, or it would run outside the pool and keep
reconnecting after `KazooClientPool.close` (the leak the daemon's ZooKeeper outage test showed).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from kazoo.client import KazooClient

from service.config.locking import ZookeeperLockSettings
from service.errors import LockError
from service.lock.kazoo_pool import KazooClientPool, PooledClient, new_kazoo_client
from tests.lock.zk_helpers import zk_settings
from tests.support.zookeeper import ZookeeperServer

pytestmark = pytest.mark.zk


class _FirstStartHeld(KazooClient):
    """A real client whose first start, after it really timed out, waits for the test to bring
    ZooKeeper back: the moment the second caller's start would then succeed."""

    def __init__(self, release: threading.Event, entered: threading.Event, **kwargs: Any):
        super().__init__(**kwargs)
        self._release = release
        self._entered = entered
        self.starts = 0

    def start(self, timeout: float = 15) -> None:
        self.starts += 1
        if self.starts > 1:
            super().start(timeout)
            return
        try:
            super().start(timeout)
        except Exception:
            self._entered.set()  # timed out for real (ZooKeeper is down), still in the entry's start
            self._release.wait(60)
            raise


def test_second_caller_does_not_restart_a_client_the_pool_dropped(
    private_zookeeper: ZookeeperServer, lock_base_path: str
) -> None:
    settings = zk_settings(private_zookeeper, lock_base_path)
    settings = dataclasses.replace(settings, connection_timeout_ms=1_000)
    made: list[KazooClient] = []
    release, entered = threading.Event(), threading.Event()

    def factory(s: ZookeeperLockSettings) -> KazooClient:
        plain = new_kazoo_client(s)
        client = _FirstStartHeld(
            release, entered, hosts=s.connect_string, timeout=s.session_timeout_ms / 1000,
            connection_retry=plain._conn_retry, command_retry=plain.retry,
        )  # fmt: skip
        plain.close()
        made.append(client)
        return client

    pool = KazooClientPool(client_factory=factory)
    outcomes: dict[str, PooledClient | LockError] = {}

    def get(name: str) -> None:
        try:
            outcomes[name] = pool.get(settings)
        except LockError as error:
            outcomes[name] = error

    private_zookeeper.stop()
    first = threading.Thread(target=get, args=("first",))
    second = threading.Thread(target=get, args=("second",))
    try:
        first.start()
        assert entered.wait(30)
        second.start()  # takes the same entry, then waits for the first caller's start to end
        private_zookeeper.restart()
        release.set()
        first.join(30)
        second.join(30)
        assert isinstance(outcomes["first"], LockError)
        assert not first.is_alive() and not second.is_alive()
    finally:
        release.set()
        pool.close()
    # Whatever the second caller got, nothing the pool made may still run once the pool is closed.
    running = [c.connected for c in made]
    for client in made:  # so that a failure here leaves no thread behind
        client.stop()
        client.close()
    assert running == [False] * len(made)
