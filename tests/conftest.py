"""Session-wide fixtures: one SparkSession with real Hudi, real Hudi histories built once, real ZooKeepers."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import close_default_pool
from tests.support import jvm_archive, leaks
from tests.support.spark import SparkStart, start_spark
from tests.support.zookeeper import ZookeeperServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = [
    "tests.support.histories",
    "tests.support.mdt_histories",
    "tests.support.no_skips",
    "tests.faults.tables",
]

# Threads take a moment to end after close(): kazoo's connection thread waits out its select.
LEAK_GRACE_SECONDS = 5.0
# pytest-timeout's limit for tests marked `slow` or `spark` (pyproject's `timeout` is the default):
# the slowest of them take a few minutes on a loaded 2-core machine, session fixtures included.
SLOW_TEST_TIMEOUT_S = 900


# Long variants (`@pytest.mark.long`) run only with HTS_LONG_TESTS=1; CI runs one representative of
# each check within its time budget, the variants beside it (another Hudi version, another kill
# point) are deselected, never skipped.
LONG_TESTS = os.environ.get("HTS_LONG_TESTS", "") == "1"


def _is_long(item: pytest.Item) -> bool:
    """`@pytest.mark.long` marks every variant; `@pytest.mark.long(hudi1="1.0.2", step=(...))` those whose
    parameters all take one of the given values; several such marks: any of them. Hudi 1.2.0's
    variants (the newest oracle, table version 9 like 1.1.1) are long unless the test is marked
    `hudi_1_2_in_ci`: CI checks a representative of each kind of check on it."""
    params = getattr(item, "callspec", None)
    values = params.params if params is not None else {}
    if values.get("hudi1") == "1.2.0" and item.get_closest_marker("hudi_1_2_in_ci") is None:
        return True

    def matches(marker: pytest.Mark) -> bool:
        return all(
            values.get(name) in (wanted if isinstance(wanted, tuple) else (wanted,))
            for name, wanted in marker.kwargs.items()
        )

    return any(matches(marker) for marker in item.iter_markers("long"))


def _inapplicable(item: pytest.Item) -> bool:
    """`@pytest.mark.hudi1_only("1.2.0")`: a behaviour only those versions of Hudi have (another
    version's variant would check nothing); deselected, never skipped."""
    marker = item.get_closest_marker("hudi1_only")
    params = getattr(item, "callspec", None)
    return marker is not None and params is not None and params.params.get("hudi1") not in marker.args


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `slow` or `spark` get `SLOW_TEST_TIMEOUT_S` unless they set their own timeout;
    long variants are deselected unless HTS_LONG_TESTS=1, variants of versions a test does not apply
    to always."""
    inapplicable = [item for item in items if _inapplicable(item)]
    if inapplicable:
        config.hook.pytest_deselected(items=inapplicable)
        items[:] = [item for item in items if not _inapplicable(item)]
    if not LONG_TESTS:
        long_items = [item for item in items if _is_long(item)]
        if long_items:
            config.hook.pytest_deselected(items=long_items)
            items[:] = [item for item in items if not _is_long(item)]
    for item in items:
        if item.get_closest_marker("timeout") is None and (
            item.get_closest_marker("slow") is not None or item.get_closest_marker("spark") is not None
        ):
            item.add_marker(pytest.mark.timeout(SLOW_TEST_TIMEOUT_S))


def pytest_collection_finish(session: pytest.Session) -> None:
    """A run that starts Spark drivers gives them the class-data archive (`tests.support.jvm_archive`)
    before the first starts; a run of pure tests records none."""
    starts_spark = ("spark", "hudi", "slow")
    if any(item.get_closest_marker(m) is not None for item in session.items for m in starts_spark):
        jvm_archive.use_archive(jvm_archive.ensure_archive())


@pytest.fixture(scope="session")
def spark_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStart]:
    """The started session and its start-up time; starts on first use, stops at session end."""
    before = leaks.snapshot()
    started = start_spark(tmp_path_factory.mktemp("spark"))
    leaks.expect_started_since(before)  # its JVM and py4j threads live for the session
    yield started
    started.session.stop()


@pytest.fixture(scope="session")
def spark(spark_start: SparkStart) -> SparkSession:
    return spark_start.session


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZookeeperServer]:
    """One ZooKeeper for the session; tests must not stop it (use `private_zookeeper` for that)."""
    server = ZookeeperServer(tmp_path_factory.mktemp("zookeeper"))
    before = leaks.snapshot()
    try:
        server.start()
        leaks.expect_started_since(before)  # its process and proxy threads live for the session
        yield server
    finally:
        server.close()


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
def _nothing_outlives_its_test() -> Iterator[None]:
    """Fail the test that leaves a ZooKeeper client, HTTP server, scheduler or Spark gateway thread,
    or a ZooKeeper/Prometheus/other child process, running after it (see tests/support/leaks.py).

    The process-wide ZooKeeper clients of in-process CLI runs (`cluster`, `clean`) are closed first:
    a CLI process closes them at exit (atexit), a test plays one process.
    """
    before = leaks.snapshot()
    yield
    close_default_pool()
    found = leaks.find_leaks(before, grace_s=LEAK_GRACE_SECONDS)
    if found:
        pytest.fail(
            f"left running after the test ({LEAK_GRACE_SECONDS:g} s grace): "
            + "; ".join(str(leak) for leak in found),
            pytrace=False,
        )


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
