"""A table's scheduling settings in daemon ticks over fixture tables: outside a maintenance window
clustering plans but does not execute and a windowed clean waits (inside, the work starts); the
small-file trigger and byte budget decide a plan; a tick claims its slot with priority and benefit."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.daemon.slots import SlotClaim
from service.executor.clustering_job import GroupJob
from service.table.base_file_writer import BaseFileWriteResult
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)  # a Tuesday, 00:00 UTC
INSIDE = NOW + timedelta(hours=1, minutes=30)  # the window is 01:00-02:00 UTC


class _ExecutionStarted(Exception):
    """Raised by the stand-in group runner: execution began (no Spark needed to prove it)."""


def _config(tables: dict[str, Path], table_extra: dict[str, str]) -> str:
    entries = "".join(
        f"""
  - name: {name}
    base_path: {base}
{table_extra.get(name, "")}"""
        for name, base in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: 60
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
  failures: {{backoff_initial_seconds: 0, quarantine_after: 5}}
  maintenance_windows:
    - {{cron: "0 1 * * mon-fri", duration_minutes: 60}}
defaults:
  hoodie.cleaner.commits.retained: 1
  hoodie.clustering.async.max.commits: 3
tables:{entries}
"""


def _small_files_table(base: Path, name: str) -> FixtureTable:
    t = FixtureTable(base, name=name)
    for i in range(1, 4):  # three commits, three small file groups in partition `a`
        t.commit(ts(i), [FileSpec("a", fid(i))])
    return t


def _replacecommits(t: FixtureTable) -> list[str]:
    return sorted(p.name for p in (t.base / ".hoodie").iterdir() if ".replacecommit" in p.name)


def _daemon(text: str, monkeypatch: pytest.MonkeyPatch, started: list[str]) -> Daemon:
    daemon = Daemon(
        parse_daemon_config(text), registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False
    )

    def runner(job: GroupJob) -> list[BaseFileWriteResult]:
        started.append(job.instant_time)
        raise _ExecutionStarted(f"group {job.group_index} of {job.instant_time}")

    monkeypatch.setattr(daemon.executor, "run_group", runner)
    return daemon


def test_outside_its_window_a_table_plans_but_does_not_execute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = _small_files_table(tmp_path / "planned", "planned")
    held = _small_files_table(tmp_path / "held", "held")
    text = _config(
        {"planned": planned.base, "held": held.base},
        {"held": "    clustering: {plan_outside_windows: false}"},
    )
    started: list[str] = []
    daemon = _daemon(text, monkeypatch, started)
    cluster = TableService.CLUSTERING

    assert daemon.run_iteration(daemon.runtimes["planned"], cluster, NOW) is Outcome.OUTSIDE_WINDOW
    [requested] = _replacecommits(planned)
    assert requested.endswith(".replacecommit.requested")  # planned: no inflight, nothing completed
    assert daemon.run_iteration(daemon.runtimes["held"], cluster, NOW) is Outcome.OUTSIDE_WINDOW
    assert _replacecommits(held) == []  # plan_outside_windows: false: not even planned
    # A later tick still outside the window neither plans again nor executes.
    later = NOW + timedelta(minutes=30)
    assert daemon.run_iteration(daemon.runtimes["planned"], cluster, later) is Outcome.OUTSIDE_WINDOW
    assert _replacecommits(planned) == [requested] and started == []
    assert _outside_window(daemon, "planned", "clustering") == 1

    # Inside the window the pending plan is executed (the stand-in runner proves it started).
    assert daemon.run_iteration(daemon.runtimes["planned"], cluster, INSIDE) is Outcome.FAILED
    assert started == [requested.split(".")[0]]
    assert "_ExecutionStarted" in daemon.runtimes["planned"].errors[-1].error


def test_a_table_with_no_windows_overrides_the_daemons_and_runs_any_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _small_files_table(tmp_path / "t", "t")
    started: list[str] = []
    daemon = _daemon(_config({"t": t.base}, {"t": "    clustering: {windows: []}"}), monkeypatch, started)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW) is Outcome.FAILED
    assert len(started) == 1


def test_a_windowed_clean_waits_for_its_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 4):  # three versions of one file group; one commit retained: one is cleaned
        t.commit(ts(i), [FileSpec("a", fid(1))])
    section = '    cleaning: {windows: [{cron: "0 1 * * *", duration_minutes: 60}]}'
    daemon = _daemon(_config({"t": t.base}, {"t": section}), monkeypatch, [])
    clean = TableService.CLEANING

    def cleans() -> list[str]:
        return sorted(p.name for p in (t.base / ".hoodie").iterdir() if p.name.endswith(".clean"))

    assert daemon.run_iteration(daemon.runtimes["t"], clean, NOW) is Outcome.OUTSIDE_WINDOW
    assert cleans() == [] and len(list((t.base / "a").glob("*.parquet"))) == 3
    assert _outside_window(daemon, "t", "cleaning") == 1
    assert daemon.run_iteration(daemon.runtimes["t"], clean, INSIDE) is Outcome.DONE
    assert len(cleans()) == 1 and len(list((t.base / "a").glob("*.parquet"))) == 2
    assert _outside_window(daemon, "t", "cleaning") == 0


def _outside_window(daemon: Daemon, table: str, service: str) -> float | None:
    labels = {"table": table, "service": service}
    return daemon.metrics.registry.get_sample_value("hudi_table_service_outside_window", labels)


def test_small_file_trigger_and_budget_drive_a_tick_below_the_commit_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _small_files_table(tmp_path / "t", "t")  # three commits, three small files in `a`
    group_bytes = sum(p.stat().st_size for p in (t.base / "a").glob("*.parquet"))

    def section(budget: int) -> str:
        return (
            "    hoodie: {hoodie.clustering.async.max.commits: 100}\n"
            f"    clustering: {{windows: [], small_file_count_trigger: 3, max_bytes_per_run: {budget}}}"
        )

    started: list[str] = []
    # A budget below the one group's bytes: due by the small files, but nothing is planned.
    daemon = _daemon(_config({"t": t.base}, {"t": section(group_bytes - 1)}), monkeypatch, started)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW) is Outcome.DONE
    assert _replacecommits(t) == [] and started == []
    # Within the budget, the small files schedule a plan (three commits are far below 100).
    daemon = _daemon(_config({"t": t.base}, {"t": section(group_bytes)}), monkeypatch, started)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW) is Outcome.FAILED
    assert len(started) == 1 and len(_replacecommits(t)) >= 1


def test_a_clustering_tick_claims_its_slot_with_priority_and_small_file_benefit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _small_files_table(tmp_path / "t", "t")
    small_bytes = sum(p.stat().st_size for p in (t.base / "a").glob("*.parquet"))
    daemon = _daemon(
        _config({"t": t.base}, {"t": "    clustering: {windows: [], priority: 7}"}), monkeypatch, []
    )
    slots = daemon.ticker.slots[TableService.CLUSTERING]
    claims: list[SlotClaim] = []
    acquire = slots.acquire

    def recording(claim: SlotClaim, stopping: threading.Event | None = None, poll_s: float = 0.5) -> None:
        claims.append(claim)
        acquire(claim, stopping, poll_s)

    monkeypatch.setattr(slots, "acquire", recording)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW) is Outcome.FAILED
    # The oldest small file was written at ts(1) = 2024-01-01 00:01 UTC, a day less a minute before NOW.
    assert claims == [SlotClaim("t", 7, small_bytes, timedelta(days=1, minutes=-1).total_seconds())]
    assert slots.in_use == 0  # released after the failed execution
