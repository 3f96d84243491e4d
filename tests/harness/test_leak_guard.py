"""The leak guard of tests/conftest.py catches what a test leaves running, and only that.

Each case leaks on purpose, asks `find_leaks` directly (so the suite does not fail), then cleans up
and sees the leak gone before the autouse guard runs its own check.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from apscheduler.schedulers.background import BackgroundScheduler
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry
from prometheus_client import CollectorRegistry

from service.metrics import MetricsServer
from tests.support import leaks
from tests.support.ports import free_port


@contextmanager
def _leaked(cleanup: Callable[[], None]) -> Iterator[leaks.Snapshot]:
    before = leaks.snapshot()
    try:
        yield before
    finally:
        cleanup()
        assert leaks.find_leaks(before, grace_s=10) == []


def test_guard_catches_a_kazoo_client_left_reconnecting() -> None:
    # Nothing listens on the port: the client keeps reconnecting, as one left open after its
    # ZooKeeper stopped does (the Hypothesis failure of issue 10).
    client = KazooClient(
        hosts=f"127.0.0.1:{free_port()}", connection_retry=KazooRetry(max_tries=-1, max_delay=0.2)
    )

    def close() -> None:
        client.stop()
        client.close()

    before = leaks.snapshot()
    with _leaked(close):
        client.start_async()
        found = leaks.find_leaks(before, grace_s=0.5)
        assert found and {leak.kind for leak in found} == {"kazoo (ZooKeeper client) thread"}


def test_guard_catches_a_metrics_http_server_left_serving() -> None:
    server = MetricsServer(CollectorRegistry(), "127.0.0.1", 0, lambda: True)
    with _leaked(server.stop) as before:
        server.start()
        found = leaks.find_leaks(before, grace_s=0.5)
        assert [(leak.kind, "metrics-http" in leak.description) for leak in found] == [
            ("HTTP/socket server thread", True)
        ]


def test_guard_catches_an_apscheduler_left_running() -> None:
    scheduler = BackgroundScheduler()
    with _leaked(lambda: scheduler.shutdown(wait=True)) as before:
        scheduler.start()
        found = leaks.find_leaks(before, grace_s=0.5)
        assert [leak.kind for leak in found] == ["APScheduler thread"]


def test_guard_catches_a_child_process_left_running() -> None:
    process = subprocess.Popen(["sleep", "60"])

    def kill() -> None:
        process.kill()
        process.wait()

    before = leaks.Snapshot(leaks.snapshot().threads, leaks.snapshot().pids - {process.pid})
    with _leaked(kill):
        found = leaks.find_leaks(before, grace_s=0.5)
        assert [(leak.kind, f"pid {process.pid}: sleep 60" in leak.description) for leak in found] == [
            ("child process", True)
        ]


def test_guard_expects_session_resources_by_identity_not_by_name() -> None:
    registered = BackgroundScheduler()
    before = leaks.snapshot()
    registered.start()
    leaks.expect_started_since(before)  # as a session fixture registers what it started
    try:
        assert leaks.find_leaks(before, grace_s=0) == []
        # A second scheduler: a thread of the same name ("APScheduler") and kind, not registered.
        twin = BackgroundScheduler()
        with _leaked(lambda: twin.shutdown(wait=True)) as twin_before:
            twin.start()
            found = leaks.find_leaks(twin_before, grace_s=0.5)
            assert [leak.kind for leak in found] == ["APScheduler thread"]
    finally:
        registered.shutdown(wait=True)
