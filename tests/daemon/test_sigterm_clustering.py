"""SIGTERM while the daemon process is clustering: readers never see a change, the restart finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.paths import REPO_ROOT
from tests.support.ports import free_port

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def _rows(rows: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Full rows without `_hoodie_file_name` (the one column clustering rewrites)."""
    return sorted(tuple(str(r[k]) for k in sorted(r) if k != "_hoodie_file_name") for r in rows)


def _config(path: Path, base: Path) -> Path:
    path.write_text(
        f"""
daemon:
  poll_interval_seconds: 0.5
  shutdown_grace_seconds: 1     # far shorter than a clustering: the process ends mid-run
  config_watch_seconds: 0
  spark: {{master: "local[2]"}}
  metrics: {{host: 127.0.0.1, port: {free_port()}}}
defaults:
  hoodie.clustering.async.max.commits: 1
  hoodie.clustering.plan.strategy.sort.columns: qty,price
  hoodie.layout.optimize.strategy: HILBERT
  hoodie.client.heartbeat.interval_in_ms: 1000  # the killed attempt is abandoned 2 s after its last beat
tables:
  - {{name: {base.name}, base_path: '{base}', timezone: UTC, cleaning: {{enabled: false}}}}
"""
    )
    return path


def _daemon(config: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.cli", "run", "--config", str(config)],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip


def _wait(predicate: Any, timeout_s: float, what: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"timed out waiting for {what}; daemon log:\n{log.read_text()[-3000:]}")
        time.sleep(0.1)


def test_sigterm_mid_clustering_then_restart_completes(
    history_many_commits: HudiHistory, spark: Any, tmp_path: Path
) -> None:
    base = history_many_commits.base_path
    before = _rows(ht.read_snapshot(spark, base))
    before_rs = _rows(ht.hudi_rs_snapshot(base).to_pylist())
    table = HudiTable.open(str(base))
    config, log = _config(tmp_path / "daemon.yaml", base), tmp_path / "daemon.log"

    def inflight() -> bool:
        return any(
            i.action is Action.REPLACE_COMMIT and i.state is State.INFLIGHT for i in table.load_timeline()
        )

    proc = _daemon(config, log)
    try:
        _wait(inflight, 120, "a clustering to go inflight", proc, log)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) is not None  # bounded exit, even with Spark work running
    finally:
        if proc.poll() is None:
            proc.kill()
    timeline = table.load_timeline()
    [clustering] = [i for i in timeline if i.action is Action.REPLACE_COMMIT]
    # Readers are unaffected whether the attempt died (plan pending) or finished within the grace.
    assert _rows(ht.read_snapshot(spark, base)) == before
    assert _rows(ht.hudi_rs_snapshot(base).to_pylist()) == before_rs

    # A 1 s grace is far shorter than the Spark work: the process ended with the plan pending.
    assert clustering.is_pending, clustering

    def completed() -> bool:
        instant = table.load_timeline().find(clustering.timestamp, Action.REPLACE_COMMIT)
        return instant is not None and instant.is_completed

    proc = _daemon(config, log)
    try:
        _wait(completed, 180, "the restarted daemon to complete the plan", proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    view = HudiTable.open(str(base)).load_view()
    # Only the committed outputs of that instant exist: the dead attempt's files were rolled back.
    outputs = sorted(p.name for p in base.glob(f"*/*_{clustering.timestamp}.parquet"))
    live = sorted(
        fg.latest_slice.base_file.file_name
        for fg in view.live_file_groups
        if fg.latest_slice
        and fg.latest_slice.base_file
        and fg.latest_slice.base_instant_time == clustering.timestamp
    )
    assert outputs == live and outputs
    assert _rows(ht.read_snapshot(spark, base)) == before
