"""Session-wide fixtures: one SparkSession with real Hudi, real Hudi histories built once, real ZooKeepers."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import close_default_pool
from tests.support.spark import SparkStart, start_spark
from tests.support.zookeeper import ZookeeperServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["tests.support.histories"]


@pytest.fixture(scope="session")
def spark_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStart]:
    """The started session and its start-up time; starts on first use, stops at session end."""
    started = start_spark(tmp_path_factory.mktemp("spark"))
    yield started
    started.session.stop()


@pytest.fixture(scope="session")
def spark(spark_start: SparkStart) -> SparkSession:
    return spark_start.session


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZookeeperServer]:
    """One ZooKeeper for the session; tests must not stop it (use `private_zookeeper` for that)."""
    yield from _running(ZookeeperServer(tmp_path_factory.mktemp("zookeeper")))


@pytest.fixture
def private_zookeeper(tmp_path: Path) -> Iterator[ZookeeperServer]:
    """A ZooKeeper of this test alone: stop, restart and expire sessions freely."""
    yield from _running(ZookeeperServer(tmp_path / "zookeeper"))


def _running(server: ZookeeperServer) -> Iterator[ZookeeperServer]:
    try:
        server.start()
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def _no_zookeeper_client_outlives_its_test() -> Iterator[None]:
    """Close the process-wide ZooKeeper clients after each test: one left open keeps reconnecting to
    its stopped server in the background (logging, and drawing on `random`, which hypothesis flags
    in whatever test runs next)."""
    yield
    close_default_pool()


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
    """A ZooKeeper lock base_path of this test alone, so tests never meet each other's lock nodes."""
    return f"/hudi/locks/{uuid.uuid4().hex[:12]}"
