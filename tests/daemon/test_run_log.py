"""What the daemon logs around a run: APScheduler's skips of a still-running job stay at DEBUG, and a
run logs one outcome line (real APScheduler, real cleaning of a fixture table)."""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.cleaning import Cleaner, CleanRunResult
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.daemon.run_log import size
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.waiting import wait_until

SKIPPED = "maximum number of running instances reached"


def _config_text(base: Path) -> str:
    return f"""
daemon:
  poll_interval_seconds: 0.05
  shutdown_grace_seconds: 10
  lock: {{provider: in-process}}
defaults:
  hoodie.cleaner.commits.retained: 1
tables:
  - name: t
    base_path: {base}
    clustering: {{enabled: false}}
"""


@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
def test_a_run_outlasting_the_poll_interval_logs_no_warning_and_one_outcome_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, level: int
) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    for i in (1, 2, 3):  # three versions of one file group: one commit retained deletes the oldest
        t.commit(ts(i), [FileSpec("a", fid(1))])
    entered, release = threading.Event(), threading.Event()
    run = Cleaner.run

    def held(cleaner: Cleaner) -> CleanRunResult:  # the run outlasts many poll intervals
        entered.set()
        assert release.wait(20)
        return run(cleaner)

    monkeypatch.setattr(Cleaner, "run", held)
    caplog.set_level(level)
    daemon = Daemon(parse_daemon_config(_config_text(t.base)), registry=CollectorRegistry(), serve_http=False)
    daemon.start()
    try:
        assert entered.wait(20)
        caplog.clear()  # start-up lines (the in-process lock's WARNING among them) are not the run's
        time.sleep(1.0)  # twenty poll intervals: APScheduler finds the job still running each time
        release.set()
        wait_until(lambda: any(p.name.endswith(".clean") for p in (t.base / ".hoodie").iterdir()))
        time.sleep(0.3)  # later ticks: no clean due
        records = list(caplog.records)
    finally:
        release.set()
        assert daemon.stop(grace_seconds=10)

    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    skipped = [r for r in records if SKIPPED in r.getMessage()]
    if level == logging.DEBUG:  # still there for whoever asks for DEBUG, at DEBUG
        assert len(skipped) >= 5 and {r.levelno for r in skipped} == {logging.DEBUG}
        assert {r.name for r in skipped} == {"apscheduler.scheduler"}
    else:
        assert skipped == []
    [outcome] = [r for r in records if r.levelno >= logging.INFO]
    assert outcome.name == "service.daemon.tick"
    assert re.fullmatch(
        rf"table t: clean \d{{17}} completed: 1 files deleted \([\d.]+ K?i?B\), 0 already gone, "
        rf"earliest commit retained {ts(3)}, in \d+\.\ds",
        outcome.getMessage(),
    ), outcome.getMessage()


def test_size_reads_as_people_read_it() -> None:
    assert [size(n) for n in (0, 1023, 1536, 12 * 2**20, 3 * 2**40, 2**50)] == [
        "0 B", "1023 B", "1.5 KiB", "12.0 MiB", "3.0 TiB", "1024.0 TiB",
    ]  # fmt: skip
