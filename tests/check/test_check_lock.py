"""`check` on the lock: what a real ZooKeeper shows of the znode the services would lock, beside Hudi
0.15's own `ZookeeperBasedLockProvider` (in a JVM) holding it, holding another key, or nobody at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from tests.clean.helpers import fid
from tests.lock.contender import hudi_contender
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.ports import free_port
from tests.support.zookeeper import ZookeeperServer

pytestmark = [pytest.mark.zk, pytest.mark.hudi]

OCC = "hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL"


def _check(
    capsys: pytest.CaptureFixture[str], base: Path, url: str, lock_base: str, *conf: str
) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    keys = "hoodie.write.lock.zookeeper."
    settings = (
        f"{keys}url={url}",
        f"{keys}base_path={lock_base}",
        f"{keys}connection_timeout_ms=2000",
        *conf,
    )
    argv = ["check", "--base-path", str(base), "--lock-provider", "zookeeper", "--timezone", "UTC", "--json"]
    code = main(argv + [a for s in settings for a in ("--hoodie-conf", s)])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    t = FixtureTable(tmp_path / "orders", name="orders")
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    return t.base


def test_check_sees_whether_the_writers_lock_the_znode_the_services_would(
    table: Path,
    zookeeper_server: ZookeeperServer,
    lock_base_path: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = zookeeper_server.connect_string
    code, report = _check(capsys, table, url, lock_base_path, OCC)
    lock = report["lock"]
    assert code == 0 and lock["provider"] == "zookeeper"
    assert lock["zookeeper"]["lock_path"] == f"{lock_base_path}/orders"  # lock_key: hoodie.table.name
    assert lock["zookeeper"]["lock_node_exists"] is False and lock["zookeeper"]["other_locks"] == []
    assert any(n.startswith("nobody has locked") and "base_path" in n for n in lock["notes"])

    # A writer whose hoodie.table.name (so its inferred lock_key) is another name locks elsewhere.
    with hudi_contender(url, lock_base_path, "orders_v2", tmp_path / "java-other.log") as writer:
        assert writer.expect(timeout_s=60) == "READY" and writer.request("LOCK 10000") == "ACQUIRED"
        code, report = _check(capsys, table, url, lock_base_path, OCC)
        assert report["lock"]["zookeeper"]["other_locks"] == ["orders_v2"]
        assert any("orders_v2" in n and "lock_key" in n for n in report["lock"]["notes"])

    # Hudi's provider on the table's own key: the same znode, held now.
    with hudi_contender(url, lock_base_path, "orders", tmp_path / "java.log") as writer:
        assert writer.expect(timeout_s=60) == "READY" and writer.request("LOCK 10000") == "ACQUIRED"
        code, report = _check(capsys, table, url, lock_base_path, OCC)
        found = report["lock"]["zookeeper"]
        assert code == 0 and found["lock_node_exists"] is True and found["contenders"] == 1
        assert any("writers using these settings are excluded" in n for n in report["lock"]["notes"])
        assert writer.request("UNLOCK") == "RELEASED"


def test_check_says_an_unreachable_zookeeper_and_writers_that_take_no_lock(
    table: Path, lock_base_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _check(capsys, table, f"127.0.0.1:{free_port()}", lock_base_path)
    lock = report["lock"]
    assert code == 1, "the services could not lock: an error, not a refusal"
    assert lock["zookeeper"]["reachable"] is False
    assert any(n.startswith("ZooKeeper not reachable") for n in lock["notes"])
    assert lock["writers_concurrency_mode"] == "SINGLE_WRITER"
    assert any("take no lock" in n and "OPTIMISTIC_CONCURRENCY_CONTROL" in n for n in lock["notes"])
