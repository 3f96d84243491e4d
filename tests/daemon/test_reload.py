"""Hot reload: tables added, removed and re-tuned from the file; an invalid file keeps the old config."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import CollectorRegistry

from service.config.daemon import load_daemon_config, parse_daemon_config
from service.daemon import Daemon, Outcome, TableRuntime, TableService
from service.daemon.reload import table_changes
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.waiting import wait_until

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def _config(tables: dict[str, Path], retained: int = 1, poll: float = 0.05) -> str:
    entries = "".join(
        f"\n  - {{name: {name}, base_path: '{base}', clustering: {{enabled: false}}}}"
        for name, base in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: {poll}
  config_watch_seconds: 0.05
  metrics: {{port: 0}}
  failures: {{backoff_initial_seconds: 0, quarantine_after: 1}}
defaults:
  hoodie.cleaner.commits.retained: {retained}
tables:{entries}
"""


def _table(root: Path, name: str) -> FixtureTable:
    t = FixtureTable(root / name, name=name)
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    return t


def _cleans(t: FixtureTable) -> int:
    return len(list((t.base / ".hoodie").glob("*.clean")))


def test_reload_adds_removes_tables_and_survives_invalid_file(tmp_path: Path) -> None:
    one, two = _table(tmp_path, "one"), _table(tmp_path, "two")
    path = tmp_path / "daemon.yaml"
    path.write_text(_config({"one": one.base}))
    registry = CollectorRegistry()
    daemon = Daemon(load_daemon_config(path), registry=registry, serve_http=False)

    def value(name: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, {})

    daemon.start()
    try:
        wait_until(lambda: _cleans(one) == 1)
        assert _cleans(two) == 0

        path.write_text(_config({"one": one.base, "two": two.base}))
        wait_until(lambda: _cleans(two) == 1)
        assert value("config_reload_success") == 1

        path.write_text(_config({"one": one.base}) + "  - [unbalanced\n")
        wait_until(lambda: value("config_reload_failures_total") == 1)
        assert value("config_reload_success") == 0
        assert set(daemon.runtimes) == {"one", "two"}  # the running config is kept
        two.commit(ts(10), [FileSpec("a", fid(1))])
        two.commit(ts(11), [FileSpec("a", fid(1))])
        wait_until(lambda: _cleans(two) >= 2)  # and still served (one clean per commit, or one for both)

        path.write_text(_config({"two": two.base}))
        wait_until(lambda: set(daemon.runtimes) == {"two"})
        assert value("config_reload_success") == 1
        assert daemon._scheduler.get_job("one:cleaning") is None
        assert daemon._scheduler.get_job("two:cleaning") is not None
        one.commit(ts(10), [FileSpec("a", fid(1))])
        cleans_before = _cleans(two)
        two.commit(ts(12), [FileSpec("a", fid(1))])
        wait_until(lambda: _cleans(two) > cleans_before)
        assert _cleans(one) == 1  # removed: no longer cleaned
    finally:
        assert daemon.stop(grace_seconds=10)


def test_reload_changed_entry_lifts_quarantine(tmp_path: Path) -> None:
    broken = _table(tmp_path, "broken")
    (broken.base / ".hoodie" / f"{ts(4)}.replacecommit").write_bytes(b"garbage")  # read by every view
    daemon = Daemon(
        parse_daemon_config(_config({"broken": broken.base})), registry=CollectorRegistry(), serve_http=False
    )
    clean = TableService.CLEANING
    assert daemon.run_iteration(daemon.runtimes["broken"], clean, NOW) is Outcome.FAILED
    assert daemon.runtimes["broken"].quarantined
    assert daemon.run_iteration(daemon.runtimes["broken"], clean, NOW) is Outcome.QUARANTINED

    daemon.apply_config(parse_daemon_config(_config({"broken": broken.base})))  # same entry: still out
    assert daemon.run_iteration(daemon.runtimes["broken"], clean, NOW) is Outcome.QUARANTINED

    daemon.apply_config(parse_daemon_config(_config({"broken": broken.base}, retained=2)))
    runtime = daemon.runtimes["broken"]
    assert not runtime.quarantined and runtime.entry.hoodie.clean.commits_retained == 2
    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.FAILED  # tried again (still broken)
    assert daemon.metrics.registry.get_sample_value("hudi_table_service_tables_quarantined") == 1


def test_table_changes_names_removed_and_fresh_entries(tmp_path: Path) -> None:
    bases = {name: tmp_path / name for name in ("kept", "gone", "tuned", "new")}
    old = parse_daemon_config(_config({n: bases[n] for n in ("kept", "gone", "tuned")}))
    current = {entry.name: entry for entry in old.tables}
    new = parse_daemon_config(
        _config({n: bases[n] for n in ("kept", "tuned", "new")}).replace(
            f"name: tuned, base_path: '{bases['tuned']}', clustering: {{enabled: false}}",
            f"name: tuned, base_path: '{bases['tuned']}', clustering: {{enabled: true}}",
        )
    )
    changes = table_changes(current, old.daemon, new)
    assert changes.removed == ("gone",)
    assert [e.name for e in changes.fresh] == ["tuned", "new"]
    # A new poll interval reschedules every table, changed or not.
    slower = parse_daemon_config(_config({n: bases[n] for n in ("kept", "gone", "tuned")}, poll=1.0))
    assert [e.name for e in table_changes(current, old.daemon, slower).fresh] == ["kept", "gone", "tuned"]


def test_a_reload_does_not_queue_behind_ticks_holding_the_tick_gate(tmp_path: Path) -> None:
    """The tick gate queues every table's ticks; the config watch runs beside it, so a table added
    while a start-up backlog drains is not waited for."""
    one, two = _table(tmp_path, "one"), _table(tmp_path, "two")
    path = tmp_path / "daemon.yaml"
    path.write_text(_config({"one": one.base}).replace("  metrics:", "  max_concurrent_ticks: 1\n  metrics:"))
    daemon = Daemon(load_daemon_config(path), registry=CollectorRegistry(), serve_http=False)
    release = threading.Event()
    tick = daemon.ticker.run_iteration

    def held(runtime: TableRuntime, service: TableService, now: datetime) -> Outcome:
        release.wait(30)  # the one place of the gate stays taken
        return tick(runtime, service, now)

    daemon.ticker.run_iteration = held  # type: ignore[method-assign]
    daemon.start()
    try:
        path.write_text(_config({"one": one.base, "two": two.base}))
        wait_until(lambda: set(daemon.runtimes) == {"one", "two"}, timeout_s=10)
    finally:
        release.set()
        assert daemon.stop(grace_seconds=10)
