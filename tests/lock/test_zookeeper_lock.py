from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss

from service.errors import LockError
from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import ZookeeperTableLock
from tests.lock.contender import python_contender
from tests.lock.zk_helpers import inspector_client, wait_until, zk_settings
from tests.support.zookeeper import ZookeeperServer

pytestmark = pytest.mark.zk

CURATOR_NODE = re.compile(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}")
NewPool = Callable[[], KazooClientPool]


def _inspector(server: ZookeeperServer) -> Iterator[KazooClient]:
    client = inspector_client(server)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def inspector(zookeeper_server: ZookeeperServer) -> Iterator[KazooClient]:
    """A plain kazoo client to look at the lock znodes from outside."""
    yield from _inspector(zookeeper_server)


def _children(client: KazooClient, path: str) -> list[str]:
    return client.get_children(path) if client.exists(path) else []


def _node_paths(client: KazooClient, path: str) -> list[str]:
    return [f"{path}/{child}" for child in _children(client, path)]


def _acquire_in_thread(
    lock: ZookeeperTableLock, timeout_s: float
) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            lock.acquire(timeout_s)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


@pytest.mark.parametrize("sessions", ["one shared session", "a session per lock"])
def test_zookeeper_lock_excludes_other_threads(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, sessions: str
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    pools = [new_pool()] if sessions == "one shared session" else [new_pool() for _ in range(3)]
    guard = threading.Lock()
    inside, entered, overlaps = 0, 0, []

    def worker(index: int) -> None:
        nonlocal inside, entered
        lock = ZookeeperTableLock(settings, "trips", pool=pools[index % len(pools)])
        for _ in range(6):
            with lock:
                with guard:
                    inside += 1
                    entered += 1
                    if inside != 1:
                        overlaps.append(inside)
                time.sleep(0.003)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert (overlaps, entered) == ([], 18)


def test_zookeeper_lock_excludes_another_process(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, tmp_path: Path
) -> None:
    lock = ZookeeperTableLock(zk_settings(zookeeper_server, lock_base_path), "trips", pool=new_pool())
    log = tmp_path / "python.log"
    with python_contender(zookeeper_server.connect_string, lock_base_path, "trips", log) as other:
        assert other.expect() == "READY"
        assert other.request("LOCK 5000") == "ACQUIRED"
        with pytest.raises(LockError, match="timed out"):
            lock.acquire(0.5)
        assert other.request("UNLOCK") == "RELEASED"
        lock.acquire(5)
        assert other.request("LOCK 500").startswith("TIMEOUT")
        lock.release()
        assert other.request("LOCK 5000") == "ACQUIRED"
        assert other.request("CHECK") == "HELD"
        assert other.request("UNLOCK") == "RELEASED"


def test_zookeeper_lock_timeout_names_table_and_path_and_removes_its_node(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, inspector: KazooClient
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    holder = ZookeeperTableLock(settings, "trips", pool=new_pool())
    waiter = ZookeeperTableLock(settings, "trips", pool=new_pool())
    with holder:
        with pytest.raises(LockError) as raised:
            waiter.acquire(0.4)
        message = str(raised.value)
        assert "timed out after 0.4 s" in message
        assert "table 'trips'" in message
        assert f"znode {lock_base_path}/trips" in message
        assert zookeeper_server.connect_string in message
        assert holder.node_path is not None and holder.node_path.rsplit("/", 1)[1] in message
        assert waiter.last_wait_seconds is not None and 0.4 <= waiter.last_wait_seconds < 3
        assert not waiter.is_held
        assert _node_paths(inspector, settings.lock_path) == [holder.node_path]


def test_zookeeper_lock_nodes_are_named_like_curator_and_deleted_on_release(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, inspector: KazooClient
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    lock = ZookeeperTableLock(settings, "trips", pool=new_pool())
    lock.acquire(5)
    children = _children(inspector, settings.lock_path)
    assert len(children) == 1 and CURATOR_NODE.fullmatch(children[0])
    _, stat = inspector.get(f"{settings.lock_path}/{children[0]}")
    assert stat.ephemeralOwner != 0
    lock.check_held()
    lock.release()
    assert _children(inspector, settings.lock_path) == []
    assert lock.last_hold_seconds is not None


def test_zookeeper_lock_finds_its_node_after_connection_loss_on_create(
    zookeeper_server: ZookeeperServer,
    lock_base_path: str,
    new_pool: NewPool,
    inspector: KazooClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    inspector.ensure_path(settings.lock_path)  # so kazoo's makepath does not add parent creates
    pool = new_pool()
    client = pool.get(settings).client
    real_create = client.create_async
    creates: list[str] = []

    def create_then_lose_reply(path: str, *args: Any, **kwargs: Any) -> Any:
        result = real_create(path, *args, **kwargs)
        creates.append(path)
        if len(creates) > 1:
            return result
        result.get(timeout=5)  # the node exists, but the reply is "lost"
        failed = client.handler.async_result()
        failed.set_exception(ConnectionLoss())
        return failed

    monkeypatch.setattr(client, "create_async", create_then_lose_reply)
    lock = ZookeeperTableLock(settings, "trips", pool=pool)
    lock.acquire(5)
    assert len(creates) == 1
    assert _node_paths(inspector, settings.lock_path) == [lock.node_path]
    lock.release()
    assert _children(inspector, settings.lock_path) == []


def test_zookeeper_lock_records_wait_seconds(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, inspector: KazooClient
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    holder = ZookeeperTableLock(settings, "trips", pool=new_pool())
    waiter = ZookeeperTableLock(settings, "trips", pool=new_pool())
    holder.acquire(5)
    thread, errors = _acquire_in_thread(waiter, 10)
    wait_until(lambda: len(_children(inspector, settings.lock_path)) == 2, what="the waiter to queue")
    time.sleep(0.3)  # the hold the waiter must measure
    holder.release()
    thread.join(10)
    assert errors == []
    assert waiter.is_held
    assert waiter.last_wait_seconds is not None and 0.3 <= waiter.last_wait_seconds < 5
    assert holder.last_hold_seconds is not None and holder.last_hold_seconds >= 0.3
    waiter.release()


def test_zookeeper_lock_lost_on_session_expiry(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, inspector: KazooClient
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    pool = new_pool()
    holder = ZookeeperTableLock(settings, "trips", pool=pool)
    waiter = ZookeeperTableLock(settings, "trips", pool=new_pool())
    holder.acquire(5)
    thread, errors = _acquire_in_thread(waiter, 15)
    wait_until(lambda: len(_children(inspector, settings.lock_path)) == 2, what="the waiter to queue")

    zookeeper_server.expire_session(pool.get(settings).client)

    thread.join(15)
    assert errors == []
    assert waiter.is_held
    waiter.check_held()
    assert not holder.is_held
    with pytest.raises(LockError, match="suspended or lost while held"):
        holder.check_held()
    holder.release()  # nothing left to delete: no error
    assert _node_paths(inspector, settings.lock_path) == [waiter.node_path]
    waiter.release()
    holder.acquire(5)  # the pooled client reconnected with a new session
    holder.check_held()
    holder.release()


def test_zookeeper_lock_check_held_detects_a_deleted_node(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool, inspector: KazooClient
) -> None:
    lock = ZookeeperTableLock(zk_settings(zookeeper_server, lock_base_path), "trips", pool=new_pool())
    lock.acquire(5)
    assert lock.node_path is not None
    inspector.delete(lock.node_path)
    with pytest.raises(LockError, match="is gone"):
        lock.check_held()
    lock.release()


def test_zookeeper_lock_check_held_raises_when_the_pool_closes(
    zookeeper_server: ZookeeperServer, lock_base_path: str
) -> None:
    pool = KazooClientPool()
    lock = ZookeeperTableLock(zk_settings(zookeeper_server, lock_base_path), "trips", pool=pool)
    lock.acquire(5)
    pool.close()
    assert not lock.is_held
    with pytest.raises(LockError):
        lock.check_held()
    lock.release()


def test_zookeeper_lock_opens_no_client_once_its_pool_is_closed(
    zookeeper_server: ZookeeperServer, lock_base_path: str
) -> None:
    """A tick still running at shutdown must not start a client nobody would ever close (it would
    reconnect forever in the background)."""
    created: list[KazooClient] = []

    def factory(settings: Any) -> KazooClient:
        created.append(KazooClient(hosts=settings.connect_string))
        return created[-1]

    pool = KazooClientPool(client_factory=factory)
    lock = ZookeeperTableLock(zk_settings(zookeeper_server, lock_base_path), "trips", pool=pool)
    pool.close()
    with pytest.raises(LockError, match="closed"):
        lock.acquire(2)
    assert created == []


@pytest.fixture
def private_inspector(private_zookeeper: ZookeeperServer) -> Iterator[KazooClient]:
    yield from _inspector(private_zookeeper)


def test_zookeeper_lock_outage_fails_check_held_then_reacquires_after_restart(
    private_zookeeper: ZookeeperServer, lock_base_path: str, new_pool: NewPool, private_inspector: KazooClient
) -> None:
    settings = zk_settings(private_zookeeper, lock_base_path)
    lock = ZookeeperTableLock(settings, "trips", pool=new_pool())
    other = ZookeeperTableLock(settings, "trips", pool=new_pool())
    lock.acquire(5)
    private_zookeeper.stop()
    with pytest.raises(LockError):
        lock.check_held()
    assert not lock.is_held
    started = time.monotonic()
    lock.release()  # ZooKeeper is down: the node is deleted once it is back
    assert time.monotonic() - started < 1

    private_zookeeper.start()
    # Our session survived the restart, so only our orphan clean-up lets another session in.
    other.acquire(10)
    other.check_held()
    other.release()
    lock.acquire(10)
    lock.check_held()
    lock.release()
    wait_until(lambda: private_inspector.connected, what="the inspector to reconnect")
    assert _children(private_inspector, settings.lock_path) == []


def test_zookeeper_lock_suspension_taints_the_hold_even_if_the_session_survives(
    private_zookeeper: ZookeeperServer, lock_base_path: str, new_pool: NewPool, private_inspector: KazooClient
) -> None:
    settings = zk_settings(private_zookeeper, lock_base_path)
    pool = new_pool()
    lock = ZookeeperTableLock(settings, "trips", pool=pool)
    lock.acquire(5)
    node = lock.node_path
    client = pool.get(settings).client
    private_zookeeper.restart()
    wait_until(lambda: client.connected and private_inspector.connected, what="clients to reconnect")
    assert private_inspector.exists(node) is not None  # same session: the node survived
    assert not lock.is_held
    with pytest.raises(LockError, match="suspended or lost while held"):
        lock.check_held()
    lock.release()
    assert _children(private_inspector, settings.lock_path) == []


def test_zookeeper_lock_unreachable_server_fails_within_connection_timeout(
    lock_base_path: str, new_pool: NewPool, tmp_path: Path
) -> None:
    nowhere = ZookeeperServer(tmp_path / "never-started")  # a free port nobody listens on
    settings = replace(zk_settings(nowhere, lock_base_path), connection_timeout_ms=500)
    lock = ZookeeperTableLock(settings, "trips", pool=new_pool())
    started = time.monotonic()
    with pytest.raises(LockError, match=f"cannot connect to ZooKeeper {nowhere.connect_string} within 0.5 s"):
        lock.acquire(0)
    assert time.monotonic() - started < 5
    assert not lock.is_held


def test_zookeeper_lock_try_acquire_with_zero_timeout(
    zookeeper_server: ZookeeperServer, lock_base_path: str, new_pool: NewPool
) -> None:
    settings = zk_settings(zookeeper_server, lock_base_path)
    first = ZookeeperTableLock(settings, "trips", pool=new_pool())
    second = ZookeeperTableLock(settings, "trips", pool=new_pool())
    first.acquire(0)  # connecting does not count against the wait
    with pytest.raises(LockError, match="timed out after 0 s"):
        second.acquire(0)
    first.release()
    second.acquire(0)
    second.release()
