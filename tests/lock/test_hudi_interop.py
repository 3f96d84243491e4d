"""Our ZooKeeper lock and Hudi 0.15.0's ZookeeperBasedLockProvider (Curator) exclude each other, both ways.

The Java side is Hudi's own provider in a JVM (`tests/support/java/HudiZkLock.java`), synchronised on
its stdout replies. Each direction also has the waiter queue behind the holder before the release,
which is where stock kazoo naming would let both sides hold the lock (docs/format.md, "The ZooKeeper lock").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from service.errors import LockError
from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import ZookeeperTableLock
from tests.lock.contender import Contender, hudi_contender
from tests.lock.zk_helpers import inspector_client, wait_until, zk_settings
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.zk, pytest.mark.hudi]

CURATOR_NODE = re.compile(r"_c_[0-9a-f-]{36}-lock-\d{10}")


@pytest.fixture
def java_lock(zookeeper_server: ZookeeperServer, lock_base_path: str, tmp_path: Path) -> Iterator[Contender]:
    log = tmp_path / "java.log"
    with hudi_contender(zookeeper_server.connect_string, lock_base_path, "trips", log) as java:
        assert java.expect(timeout_s=60) == "READY"
        yield java


@pytest.fixture
def inspector(zookeeper_server: ZookeeperServer) -> Iterator[KazooClient]:
    client = inspector_client(zookeeper_server)
    yield client
    client.stop()
    client.close()


def test_hudi_java_lock_waits_for_python_holder(
    zookeeper_server: ZookeeperServer,
    lock_base_path: str,
    new_pool: Callable[[], KazooClientPool],
    java_lock: Contender,
    inspector: KazooClient,
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    lock = ZookeeperTableLock(settings, "trips", pool=new_pool())
    lock.acquire(5)

    assert java_lock.request("LOCK 1000").startswith("TIMEOUT")
    assert len(inspector.get_children(settings.lock_path)) == 1  # Curator removed its node on timeout

    java_lock.send("LOCK 20000")
    wait_until(lambda: len(inspector.get_children(settings.lock_path)) == 2, what="Hudi to queue behind us")
    children = inspector.get_children(settings.lock_path)
    java_node = next(c for c in children if f"{settings.lock_path}/{c}" != lock.node_path)
    assert CURATOR_NODE.fullmatch(java_node)
    lock.check_held()  # Hudi queued behind our node, not beside it
    lock.release()
    assert java_lock.expect(timeout_s=20) == "ACQUIRED"
    assert inspector.get_children(settings.lock_path) == [java_node]

    with pytest.raises(LockError, match="timed out"):
        lock.acquire(0.5)
    assert java_lock.request("UNLOCK") == "RELEASED"
    lock.acquire(5)
    lock.release()


def test_python_lock_waits_for_hudi_java_holder(
    zookeeper_server: ZookeeperServer,
    lock_base_path: str,
    new_pool: Callable[[], KazooClientPool],
    java_lock: Contender,
    inspector: KazooClient,
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    lock = ZookeeperTableLock(settings, "trips", pool=new_pool())
    assert java_lock.request("LOCK 5000") == "ACQUIRED"

    with pytest.raises(LockError, match="timed out") as raised:
        lock.acquire(0.5)
    java_node = inspector.get_children(settings.lock_path)
    assert len(java_node) == 1 and java_node[0] in str(raised.value)

    errors: list[BaseException] = []

    def acquire() -> None:
        try:
            lock.acquire(20)
        except BaseException as error:
            errors.append(error)

    waiter = threading.Thread(target=acquire)
    waiter.start()
    wait_until(lambda: len(inspector.get_children(settings.lock_path)) == 2, what="us to queue behind Hudi")
    assert not lock.is_held
    assert java_lock.request("UNLOCK") == "RELEASED"
    waiter.join(20)
    assert errors == []
    lock.check_held()

    assert java_lock.request("LOCK 1000").startswith("TIMEOUT")
    lock.release()
    assert java_lock.request("LOCK 5000") == "ACQUIRED"
    assert java_lock.request("UNLOCK") == "RELEASED"
