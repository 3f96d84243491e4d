"""Hudi 1.2's expiration of pending clustering (`hoodie.clustering.enable.expirations`), as the clean
and `repair` apply it: old enough by its requested time, and its heartbeat expired or missing.
Hudi 1.2.0's own rule on a table it wrote: `tests/interop/test_hudi1_rollback.py`."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.cleaning.failed_writes import expired_clusterings
from service.cli import main
from service.config.hoodie import HoodieConfig
from service.table.heartbeat import heartbeat_path
from service.table.table import HudiTable
from service.table.timeline import format_instant_time
from tests.support.fixtures import FileSpec, FixtureTable, ts

EXPIRE = {"hoodie.clustering.enable.expirations": "true", "hoodie.clustering.expiration.threshold.mins": "60"}


def _table(tmp_path: Path, requested: datetime) -> tuple[FixtureTable, str]:
    fixture = FixtureTable(tmp_path / "t")
    fixture.commit(ts(1), [FileSpec("p1", "f1-0")])
    fixture.commit(ts(2), [FileSpec("p1", "f2-0")])
    instant = format_instant_time(requested)
    fixture.pending_clustering(instant, [("p1", "f1-0"), ("p1", "f2-0")], inflight=True)
    return fixture, instant


def _beat(fixture: FixtureTable, instant: str, age_s: float) -> None:
    path = fixture.base / heartbeat_path(instant)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    at = time.time() - age_s
    os.utime(path, (at, at))


def _expired(fixture: FixtureTable, keys: dict[str, str], now: datetime) -> list[str]:
    table = HudiTable.open(str(fixture.base))
    config = HoodieConfig.from_mapping(keys, table.name)
    return [i.timestamp for i in expired_clusterings(table, table.load_timeline(), config, now, UTC)]


def test_a_clustering_expires_once_past_the_threshold_with_its_heartbeat_expired_or_missing(
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC)
    fixture, instant = _table(tmp_path, now - timedelta(minutes=61))
    assert _expired(fixture, EXPIRE, now) == [instant]  # no heartbeat file: expired, as Hudi reads it
    _beat(fixture, instant, 300)
    assert _expired(fixture, EXPIRE, now) == [instant]  # a dead executor's heartbeat
    _beat(fixture, instant, 5)
    assert _expired(fixture, EXPIRE, now) == []  # an executor at work
    _beat(fixture, instant, 300)
    assert _expired(fixture, {**EXPIRE, "hoodie.clustering.expiration.threshold.mins": "62"}, now) == []
    assert _expired(fixture, {}, now) == []  # expirations are off by default, as in Hudi 1.2


def test_a_young_plan_never_expires_whatever_its_heartbeat(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    fixture, _ = _table(tmp_path, now - timedelta(minutes=59))
    assert _expired(fixture, EXPIRE, now) == []


def _repair(fixture: FixtureTable, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    conf = [f"--hoodie-conf={k}={v}" for k, v in EXPIRE.items()]
    argv = ["repair", "--base-path", str(fixture.base), "--timezone", "UTC", "--json", *conf, *extra]
    capsys.readouterr()
    assert main(argv) == 0
    reply: dict[str, object] = json.loads(capsys.readouterr().out)
    return reply


def test_repair_reports_then_rolls_back_an_expired_clustering_only_under_lazy_failed_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture, instant = _table(tmp_path, datetime.now(UTC) - timedelta(hours=2))
    lazy = "--hoodie-conf=hoodie.cleaner.policy.failed.writes=LAZY"
    assert _repair(fixture, capsys)["expired_clusterings"] == []  # EAGER: Hudi 1.2 expires none
    assert _repair(fixture, capsys, "--execute")["rolled_back"] == []
    assert _repair(fixture, capsys, lazy)["expired_clusterings"] == [instant]  # the dry run
    assert HudiTable.open(str(fixture.base)).load_timeline().find(instant) is not None
    # Its `.inflight` file was just written and it keeps no heartbeat: an executor that keeps none
    # (Hudi before 1.2, or 1.2 with expirations off) may be at work; it is kept, beyond Hudi's rule.
    assert _repair(fixture, capsys, lazy, "--execute")["rolled_back"] == []
    old = time.time() - 600
    for inflight in (fixture.base / ".hoodie").glob(f"{instant}.*inflight"):
        os.utime(inflight, (old, old))
    assert _repair(fixture, capsys, lazy, "--execute")["rolled_back"] == [instant]
    timeline = HudiTable.open(str(fixture.base)).load_timeline()
    assert timeline.find(instant) is None  # its plan too: an expired plan is not executed again
    [rollback] = [i for i in timeline.completed() if i.action.value == "rollback"]
    assert not (fixture.base / heartbeat_path(instant)).exists()
    assert not (fixture.base / heartbeat_path(rollback.timestamp)).exists()
