"""Fixtures of the lock tests: a real ZooKeeper shared by the session, and private ones for outages."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from service.lock.kazoo_pool import KazooClientPool
from tests.support.zookeeper import ZookeeperServer


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZookeeperServer]:
    """One ZooKeeper for the session; tests must not stop it (use `private_zookeeper` for that)."""
    server = ZookeeperServer(tmp_path_factory.mktemp("zookeeper"))
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZookeeperServer]:
    """A ZooKeeper of this test alone: stop, restart and expire sessions freely."""
    server = ZookeeperServer(tmp_path / "zookeeper")
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture
def new_pool() -> Iterator[Callable[[], KazooClientPool]]:
    """Client pools closed at teardown; each pool is one ZooKeeper session, i.e. one 'process'."""
    pools: list[KazooClientPool] = []

    def make() -> KazooClientPool:
        pools.append(KazooClientPool())
        return pools[-1]

    yield make
    for pool in pools:
        pool.close()


@pytest.fixture
def lock_base_path() -> str:
    """A base_path of this test alone, so tests never meet each other's lock nodes."""
    return f"/hudi/locks/{uuid.uuid4().hex[:12]}"
