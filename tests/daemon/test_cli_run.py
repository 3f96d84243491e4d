"""`hudi-table-service run --config FILE` as a process: serves, cleans, exits on SIGTERM in bounded time."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.paths import REPO_ROOT
from tests.support.ports import free_port


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def _table(root: Path, name: str) -> FixtureTable:
    table = FixtureTable(root / name, name=name)
    for i in (1, 2, 3):
        table.commit(ts(i), [FileSpec("a", fid(1))])
    return table


def _config(port: int, tables: list[FixtureTable]) -> str:
    entries = "".join(
        f"\n  - {{name: {t.name}, base_path: '{t.base}', clustering: {{enabled: false}}}}" for t in tables
    )
    return f"""
daemon:
  poll_interval_seconds: 0.2
  shutdown_grace_seconds: 5
  config_watch_seconds: 0  # only SIGHUP reloads
  metrics: {{host: 127.0.0.1, port: {port}}}
defaults:
  hoodie.cleaner.commits.retained: 1
tables:{entries}
"""


def _start(config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "service.cli", "run", "--config", str(config)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _cleaned(table: FixtureTable) -> bool:
    return bool(list((table.base / ".hoodie").glob("*.clean")))


def test_cli_run_cleans_and_stops_on_sigterm(tmp_path: Path) -> None:
    table = _table(tmp_path, "t")
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(_config(port, [table]))
    process = _start(config)
    try:
        deadline = time.monotonic() + 30
        base = f"http://127.0.0.1:{port}"
        while not (_status(base + "/readyz") == 200 and list((table.base / ".hoodie").glob("*.clean"))):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the daemon did not become ready and clean in time"
            time.sleep(0.1)
        assert _status(base + "/healthz") == 200
        with urllib.request.urlopen(base + "/metrics", timeout=2) as response:
            assert 'hudi_table_service_deleted_files_total{table="t"} 1.0' in response.read().decode()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "signal SIGTERM: shutting down" in stderr and "daemon stopped" in stderr
    assert _status(base + "/healthz") is None


def test_cli_run_reloads_on_sighup(tmp_path: Path) -> None:
    first, second = _table(tmp_path, "first"), _table(tmp_path, "second")
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(_config(port, [first]))
    process = _start(config)
    try:
        deadline = time.monotonic() + 30
        while not _cleaned(first):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the first table was not cleaned in time"
            time.sleep(0.1)
        config.write_text(_config(port, [first, second]))
        time.sleep(0.5)  # with the file watch off, only the signal may pick the change up
        assert not _cleaned(second)
        process.send_signal(signal.SIGHUP)
        while not _cleaned(second):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the added table was not cleaned after SIGHUP"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "config reload: table second added" in stderr
