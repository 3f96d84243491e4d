"""Small helpers of the ZooKeeper lock tests."""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from service.config.locking import ZookeeperLockSettings
from tests.support.waiting import wait_until
from tests.support.zookeeper import ZookeeperServer

__all__ = ["inspector_client", "wait_until", "zk_settings"]


def zk_settings(server: ZookeeperServer, base_path: str, lock_key: str = "trips") -> ZookeeperLockSettings:
    """Hudi's keys with test-sized timeouts. Sessions (20 s) outlive a ZooKeeper restart on a loaded
    machine; tests that need an expiry force it with `ZookeeperServer.expire_session`."""
    return ZookeeperLockSettings(
        connect_string=server.connect_string,
        base_path=base_path,
        lock_key=lock_key,
        session_timeout_ms=20_000,
        connection_timeout_ms=5_000,
        wait_time_ms=10_000,
        retry_wait_time_ms=100,
        retry_max_wait_time_ms=1_000,
        num_retries=3,
    )


def inspector_client(server: ZookeeperServer) -> KazooClient:
    """A started plain kazoo client that reconnects fast after a restart, to look at znodes from outside."""
    client = KazooClient(
        hosts=server.connect_string, connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2)
    )
    client.start(timeout=10)
    return client
