"""The daemon over fast fixture tables with the in-process lock: cleaning ticks, failures, quarantine."""

from __future__ import annotations

import logging
import os
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from prometheus_client import CollectorRegistry

from service.cleaning import orchestrator
from service.cleaning.deleter import DeleteReport
from service.cli import main
from service.config import daemon as daemon_config
from service.config.daemon import parse_daemon_config
from service.config.zones import ZoneChoice
from service.daemon import Daemon, Outcome, TableService, status_page
from service.daemon.runtime import Phase, TableRuntime
from service.daemon.slots import SlotClaim
from service.lock.in_process import InProcessTableLock
from service.table.instant import State
from service.table.table import HudiTable
from service.table.timeline import Timeline, parse_instant_time
from strategies.archival import Bound
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.waiting import wait_until

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def _config_text(
    tables: dict[str, Path], poll: float = 0.05, backoff: float = 0.0, clustering: bool = False
) -> str:
    entries = "".join(
        f"""
  - name: {name}
    base_path: {base}
    clustering: {{enabled: {str(clustering).lower()}}}"""
        for name, base in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: {poll}
  shutdown_grace_seconds: 10
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process, properties: {{hoodie.write.lock.wait_time_ms: 5000}}}}
  failures: {{backoff_initial_seconds: {backoff}, backoff_max_seconds: 120, quarantine_after: 2}}
defaults:
  hoodie.cleaner.commits.retained: 1
  hoodie.clustering.async.max.commits: 100
tables:{entries}
"""


def _history(t: FixtureTable, start: int = 1) -> None:
    """Three versions of one file group; with one commit retained, the newest two are kept."""
    for i in range(start, start + 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])


def _break(t: FixtureTable, n: int) -> Path:
    """A completed replacecommit of garbage: every plan reads its replaced file groups."""
    garbage = t.base / ".hoodie" / f"{ts(n)}.replacecommit"
    garbage.write_bytes(b"garbage")
    return garbage


def _a_files(base: Path) -> list[str]:
    return sorted(p.name for p in (base / "a").glob("*.parquet"))


def _cleans(base: Path) -> list[str]:
    return sorted(p.name for p in (base / ".hoodie").iterdir() if p.name.endswith(".clean"))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value("hudi_table_service_" + name, labels) or 0.0


def test_daemon_iteration_backs_off_then_quarantines_until_timeline_changes(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    broken = FixtureTable(tmp_path / "broken", name="broken")
    _history(broken)
    garbage = _break(broken, 4)
    config = parse_daemon_config(_config_text({"broken": broken.base}, backoff=30))
    daemon = Daemon(config, registry=registry, clock=lambda: NOW, serve_http=False)
    runtime = daemon.runtimes["broken"]
    clean = TableService.CLEANING

    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.FAILED
    assert daemon.run_iteration(runtime, clean, NOW + timedelta(seconds=29)) is Outcome.BACKING_OFF
    assert daemon.run_iteration(runtime, clean, NOW + timedelta(seconds=31)) is Outcome.FAILED
    assert runtime.quarantined and _value(registry, "tables_quarantined") == 1
    # The second backoff doubles (60 s), and quarantine holds regardless of time while nothing changes.
    assert runtime.retry_at[clean] == NOW + timedelta(seconds=91)
    assert daemon.run_iteration(runtime, clean, NOW + timedelta(days=1)) is Outcome.QUARANTINED
    assert (
        _value(registry, "failures_total", table="broken", service="cleaning", reason="CorruptTableError")
        == 2
    )
    assert [r.service for r in runtime.errors] == [clean, clean]
    assert "not JSON commit metadata" in runtime.errors[-1].error

    garbage.unlink()  # the timeline changed: the table is served again, with no backoff carried over
    assert daemon.run_iteration(runtime, clean, NOW + timedelta(days=1)) is Outcome.DONE
    assert not runtime.quarantined and _value(registry, "tables_quarantined") == 0
    assert len(_a_files(broken.base)) == 2 and len(_cleans(broken.base)) == 1
    assert _value(registry, "deleted_files_total", table="broken") == 1
    assert _value(registry, "last_success_timestamp_seconds", table="broken", service="cleaning") > 0


def test_daemon_clustering_tick_waits_below_threshold(tmp_path: Path, registry: CollectorRegistry) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    config = parse_daemon_config(_config_text({"t": t.base}, clustering=True))
    daemon = Daemon(config, registry=registry, clock=lambda: NOW, serve_http=False)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLUSTERING, NOW) is Outcome.DONE
    assert _value(registry, "commits_since_last_clustering", table="t") == 3
    assert _value(registry, "pending_clustering_plans", table="t") == 0
    assert not [p for p in (t.base / ".hoodie").iterdir() if "replacecommit" in p.name]


@pytest.fixture
def running(
    tmp_path: Path, registry: CollectorRegistry
) -> Iterator[tuple[Daemon, FixtureTable, FixtureTable]]:
    healthy = FixtureTable(tmp_path / "healthy", name="healthy")
    broken = FixtureTable(tmp_path / "broken", name="broken")
    _history(healthy)
    _history(broken)
    _break(broken, 4)
    config = parse_daemon_config(_config_text({"healthy": healthy.base, "broken": broken.base}))
    daemon = Daemon(config, registry=registry)
    daemon.start()
    try:
        yield daemon, healthy, broken
    finally:
        assert daemon.stop(grace_seconds=10)


def test_daemon_cleans_healthy_table_while_broken_one_is_quarantined(
    running: tuple[Daemon, FixtureTable, FixtureTable], registry: CollectorRegistry
) -> None:
    daemon, healthy, broken = running
    wait_until(lambda: len(_cleans(healthy.base)) == 1 and daemon.runtimes["broken"].quarantined)
    assert len(_a_files(healthy.base)) == 2
    assert _value(registry, "tables_quarantined") == 1
    assert _value(registry, "deleted_files_total", table="healthy") == 1
    assert (
        _value(registry, "failures_total", table="healthy", service="cleaning", reason="CorruptTableError")
        == 0
    )

    # New commits on the healthy table: cleaned again by a later tick, the broken table stays out.
    _history(healthy, start=10)  # a tick may clean between these commits: count deletions, not cleans
    wait_until(lambda: _value(registry, "deleted_files_total", table="healthy") == 4)
    assert [n.split("_")[-1] for n in _a_files(healthy.base)] == [f"{ts(11)}.parquet", f"{ts(12)}.parquet"]
    assert len(_cleans(healthy.base)) >= 2
    assert daemon.runtimes["broken"].quarantined and len(_cleans(broken.base)) == 0
    failures = _value(
        registry, "failures_total", table="broken", service="cleaning", reason="CorruptTableError"
    )
    assert failures == 2  # quarantined ticks do not retry

    assert daemon.http is not None
    body = urllib.request.urlopen(daemon.http.url + "/metrics", timeout=5).read().decode()
    assert 'hudi_table_service_deleted_files_total{table="healthy"} 4.0' in body
    assert urllib.request.urlopen(daemon.http.url + "/readyz", timeout=5).status == 200
    assert _value(registry, "scheduler_lag_seconds") >= 0
    assert _value(registry, "lock_hold_seconds_count", table="healthy") >= 1


def test_daemon_stop_is_bounded_and_not_ready_after(tmp_path: Path, registry: CollectorRegistry) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    daemon = Daemon(parse_daemon_config(_config_text({"t": t.base})), registry=registry)
    daemon.start()
    assert daemon.is_ready()
    wait_until(lambda: len(_cleans(t.base)) == 1)
    started = time.monotonic()
    assert daemon.stop(grace_seconds=5)
    assert time.monotonic() - started < 5
    assert not daemon.is_ready()


def test_daemon_observes_every_lock_acquisition_of_a_tick(
    tmp_path: Path, registry: CollectorRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    t.commit(ts(4), [FileSpec("a", fid(2))], state=State.INFLIGHT)  # a dead writer's attempt (no heartbeat)
    lazy = "defaults:\n  hoodie.cleaner.policy.failed.writes: LAZY\n"
    text = _config_text({"t": t.base}).replace("defaults:\n", lazy)
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    acquisitions = []
    acquire_backend = InProcessTableLock._acquire_backend

    def counted(lock: InProcessTableLock, remaining_s: float, timeout_s: float) -> None:
        acquisitions.append(lock.key)
        acquire_backend(lock, remaining_s, timeout_s)

    monkeypatch.setattr(InProcessTableLock, "_acquire_backend", counted)
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLEANING, NOW) is Outcome.DONE
    # One tick locked for the rollback of the failed write, for the clean's plan and for its commit.
    assert any(p.name.endswith(".rollback") for p in (t.base / ".hoodie").iterdir())
    assert len(_cleans(t.base)) == 1
    assert len(acquisitions) >= 3
    assert _value(registry, "lock_wait_seconds_count", table="t") == len(acquisitions)
    assert _value(registry, "lock_hold_seconds_count", table="t") == len(acquisitions)


def test_a_cleaning_tick_is_planning_while_it_decides_and_executing_while_it_deletes(
    tmp_path: Path, registry: CollectorRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status page reads the phase: a tick that only finds no clean due never shows "executing"."""
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    daemon = Daemon(parse_daemon_config(_config_text({"t": t.base})), registry=registry, serve_http=False)
    runtime = daemon.runtimes["t"]
    seen: list[tuple[str, Phase | None]] = []
    not_due, delete = orchestrator.Cleaner._not_due, orchestrator.delete_files

    def deciding(cleaner: orchestrator.Cleaner, timeline: Timeline) -> tuple[str, int] | None:
        seen.append(("decide", runtime.phase.get(TableService.CLEANING)))
        return not_due(cleaner, timeline)

    def deleting(*args: Any) -> DeleteReport:
        seen.append(("delete", runtime.phase.get(TableService.CLEANING)))
        return delete(*args)

    monkeypatch.setattr(orchestrator.Cleaner, "_not_due", deciding)
    monkeypatch.setattr(orchestrator, "delete_files", deleting)
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert len(_cleans(t.base)) == 1
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE  # nothing new: not due
    assert len(_cleans(t.base)) == 1
    assert seen == [("decide", Phase.PLANNING), ("delete", Phase.EXECUTING), ("decide", Phase.PLANNING)]
    assert TableService.CLEANING not in runtime.phase


def test_daemon_cleaning_tick_reports_pending_cleans_and_the_last_completed_instant(
    tmp_path: Path, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """Hudi's `clean.pendingCleanInstantCount` and `<action>.commitTime`, from real cleaning ticks."""
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    # A clean another cleaner is executing: its plan and a young inflight file, no heartbeat.
    a1 = f"a/{t.file_name('a', fid(1), ts(1))}"
    t.requested_clean(ts(4), {"a": [t.storage.qualify(a1)]}, last_completed_commit=ts(3))
    requested = t.base / ".hoodie" / f"{ts(4)}.clean.requested"
    inflight = requested.with_name(f"{ts(4)}.clean.inflight")
    inflight.write_bytes(requested.read_bytes())
    daemon = Daemon(parse_daemon_config(_config_text({"t": t.base})), registry=registry, serve_http=False)
    runtime = daemon.runtimes["t"]
    clean = TableService.CLEANING

    caplog.clear()  # the in-process lock's WARNING at construction
    with caplog.at_level(logging.INFO, logger="service.daemon"):
        for _ in range(3):
            assert daemon.run_iteration(runtime, clean, NOW) is Outcome.OWNED_ELSEWHERE
    assert _value(registry, "pending_clean_plans", table="t") == 1
    assert _value(registry, "instant_owned_elsewhere_total", table="t", service="cleaning") == 3
    # Said once for the instant, not at every tick that finds it still owned.
    [said] = [
        r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and r.name.endswith(".tick")
    ]
    assert said.startswith("table t: cleaning skipped this tick: ") and ts(4) in said
    assert registry.get_sample_value(
        "hudi_table_service_last_completed_instant_timestamp_seconds", {"table": "t", "service": "cleaning"}
    ) is None  # fmt: skip

    hour_ago = time.time() - 3600  # past the heartbeat expiry window: the clean is abandoned
    os.utime(inflight, (hour_ago, hour_ago))
    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.DONE
    assert (t.base / ".hoodie" / f"{ts(4)}.clean").exists() and not (t.base / a1).exists()
    assert _value(registry, "pending_clean_plans", table="t") == 0
    assert runtime.zone is not None
    assert _value(registry, "last_completed_instant_timestamp_seconds", table="t", service="cleaning") == (
        parse_instant_time(ts(4), runtime.zone).timestamp()
    )
    assert _value(registry, "deleted_files_total", table="t") == 1


@pytest.mark.parametrize("enabled", [None, True])
def test_daemon_compaction_tick_leaves_a_copy_on_write_table_alone(
    tmp_path: Path, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture, enabled: bool | None
) -> None:
    """Only merge-on-read tables are compacted: a copy-on-write table's compaction tick writes and
    counts nothing, and `compaction.enabled: true` on it is said once at INFO (unset: not at all)."""
    caplog.set_level(logging.INFO, logger="service.daemon.tick")
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    text = _config_text({"t": t.base})
    if enabled is not None:
        text = text.replace(
            "clustering: {enabled: false}", "clustering: {enabled: false}\n    compaction: {enabled: true}"
        )
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    runtime = daemon.runtimes["t"]
    before = sorted(p.name for p in t.base.rglob("*"))
    for n in range(3):
        assert daemon.run_iteration(runtime, TableService.COMPACTION, NOW + timedelta(seconds=n)) is (
            Outcome.NOT_APPLICABLE
        )
    assert sorted(p.name for p in t.base.rglob("*")) == before
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and r.name.endswith(".tick")]
    assert said == (["table t: COPY_ON_WRITE; it is not compacted"] if enabled else [])
    assert registry.get_sample_value(
        "hudi_table_service_last_success_timestamp_seconds", {"table": "t", "service": "compaction"}
    ) is None  # fmt: skip
    assert registry.get_sample_value("hudi_table_service_pending_compactions", {"table": "t"}) is None
    assert not runtime.consecutive_failures and not runtime.refused_services


def test_daemon_compaction_disabled_adds_no_job(tmp_path: Path, registry: CollectorRegistry) -> None:
    served, off = FixtureTable(tmp_path / "served", name="served"), FixtureTable(tmp_path / "unc", name="unc")
    text = _config_text({"served": served.base, "unc": off.base}, poll=60)
    text = text.replace(
        f"base_path: {off.base}\n    clustering: {{enabled: false}}",
        f"base_path: {off.base}\n    clustering: {{enabled: false}}\n    compaction: {{enabled: false}}",
    )
    daemon = Daemon(parse_daemon_config(text), registry=registry, serve_http=False)
    daemon.start()
    try:
        assert daemon._scheduler.get_job("served:compaction") is not None
        assert daemon._scheduler.get_job("unc:compaction") is None
        assert daemon._scheduler.get_job("unc:cleaning") is not None
    finally:
        assert daemon.stop(grace_seconds=10)


def _refused_at_every_tick(daemon: Daemon, service: TableService) -> TableRuntime:
    """Three ticks of `service` on table t: each refused, no failure counted, no backoff, no quarantine."""
    runtime = daemon.runtimes["t"]
    for n in range(3):
        assert daemon.run_iteration(runtime, service, NOW + timedelta(seconds=n)) is Outcome.REFUSED
    assert runtime.refused_services == {service}
    assert not runtime.consecutive_failures and not runtime.quarantined and not runtime.retry_at
    return runtime


def test_daemon_compaction_strategy_not_reproduced_is_refused_not_failed(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """A writer's config pasted whole may name a compaction strategy the planner does not reproduce:
    compaction is refused (no failure, no quarantine) and the table is still cleaned."""
    t = FixtureTable(tmp_path / "t", name="t", table_type="MERGE_ON_READ")
    _history(t)
    strategy = "org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy"
    text = _config_text({"t": t.base}, backoff=30).replace(
        "hoodie.clustering.async.max.commits: 100",
        f"hoodie.clustering.async.max.commits: 100\n  hoodie.compaction.strategy: {strategy}",
    )
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    runtime = _refused_at_every_tick(daemon, TableService.COMPACTION)
    assert (
        _value(registry, "table_refused", table="t", service="compaction", reason="compaction_strategy") == 1
    )
    assert runtime.needs_configuration and runtime.fixes() == [
        "hoodie.compaction.strategy (the table entry's hoodie or defaults)"
    ]
    assert not list((t.base / ".hoodie").glob("*.compaction.*"))
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert _value(registry, "deleted_files_total", table="t") == 1


def test_daemon_clustering_of_a_table_whose_index_it_would_leave_stale_is_refused_not_failed(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """Writers keeping record locations in HBase: clustering is refused with what to change (no
    failure, no backoff, no plan written) and the table is still cleaned."""
    t = FixtureTable(tmp_path / "t", name="t")
    _history(t)
    text = _config_text({"t": t.base}, backoff=30, clustering=True).replace(
        "hoodie.clustering.async.max.commits: 100",
        "hoodie.clustering.async.max.commits: 1\n  hoodie.index.type: HBASE",
    )
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    runtime = _refused_at_every_tick(daemon, TableService.CLUSTERING)
    assert _value(registry, "table_refused", table="t", service="clustering", reason="index_type") == 1
    assert not runtime.needs_configuration  # the writers' index must change, not a setting of ours
    refusal = daemon.status.table(runtime, NOW)["service_refusals"]["clustering"]
    assert "hoodie.index.type=HBASE" in refusal["reason"] and refusal["fix"] is None
    assert refusal["change"].startswith("the writers' hoodie.index.type")
    assert not list((t.base / ".hoodie").glob("*.replacecommit.*"))
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert _value(registry, "deleted_files_total", table="t") == 1


def test_a_table_lost_to_another_replica_while_waiting_for_a_slot_is_not_cleaned(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    table = FixtureTable(tmp_path / "t", name="t")
    _history(table)
    daemon = Daemon(parse_daemon_config(_config_text({"t": table.base})), registry=registry, serve_http=False)
    runtime = daemon.runtimes["t"]
    answers = iter([True, False])  # held when the tick starts, gone once its slot is granted
    daemon.ticker.holds = lambda name: next(answers)

    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.NOT_HELD
    assert _cleans(table.base) == [] and len(_a_files(table.base)) == 3 and not runtime.errors

    daemon.ticker.holds = lambda name: True  # held again: a clean is due, and done
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert len(_cleans(table.base)) == 1


def test_local_tables_without_a_zone_are_served_in_the_daemons_own_zone_and_say_so(
    tmp_path: Path,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two tables with Hudi's default LOCAL timeline and no zone anywhere in the config: both are
    cleaned with the machine's zone, as the CLI and Java's services use theirs, and the daemon says
    once per table which zone is in force and where it came from."""
    kolkata = ZoneChoice(ZoneInfo("Asia/Kolkata"), "this machine's zone ($TZ=Asia/Kolkata)")
    monkeypatch.setattr(daemon_config, "machine_zone", lambda: kolkata)
    tables = {n: FixtureTable(tmp_path / n, name=n, timeline_timezone="LOCAL") for n in ("orders", "users")}
    for t in tables.values():
        _history(t)
    daemon = Daemon(
        parse_daemon_config(_config_text({n: t.base for n, t in tables.items()})),
        registry=registry, clock=lambda: NOW, serve_http=False,
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="service.daemon.runtime"):
        for name in tables:
            for at in (NOW, NOW + timedelta(seconds=1)):
                assert daemon.run_iteration(daemon.runtimes[name], TableService.CLEANING, at) is Outcome.DONE
    for name, t in tables.items():
        assert daemon.runtimes[name].zone == ZoneInfo("Asia/Kolkata")
        assert len(_a_files(t.base)) == 2 and not daemon.runtimes[name].refused
    said = [r.getMessage() for r in caplog.records if "instant times in" in r.getMessage()]
    assert said == [
        f"table {n}: instant times in Asia/Kolkata (hoodie.table.timeline.timezone=LOCAL; from "
        "this machine's zone ($TZ=Asia/Kolkata))"
        for n in tables
    ]


def test_a_local_table_with_no_zone_known_needs_configuration_not_a_retry(
    tmp_path: Path, registry: CollectorRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that names no zone (a copied /etc/localtime) and no zone in the config: the table is
    refused with the setting that lifts it, counts no failure and never backs off; `daemon.timezone`
    serves it."""
    monkeypatch.setattr(daemon_config, "machine_zone", lambda: None)
    t = FixtureTable(tmp_path / "t", name="t", timeline_timezone="LOCAL")
    _history(t)
    text = _config_text({"t": t.base}, backoff=30)
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    runtime = daemon.runtimes["t"]
    for n in range(3):
        assert (
            daemon.run_iteration(runtime, TableService.CLEANING, NOW + timedelta(seconds=n))
            is Outcome.REFUSED
        )
    assert runtime.refusal is not None and "daemon.timezone" in runtime.refusal.reason
    assert runtime.refusal.setting == "daemon.timezone (or the table entry's timezone)"
    assert not runtime.consecutive_failures and not runtime.retry_at and not runtime.quarantined
    assert (
        _value(registry, "failures_total", table="t", service="cleaning", reason="NeedsConfigurationError")
        == 0
    )
    assert _value(registry, "table_refused", table="t", service="cleaning", reason="timezone") == 1
    assert len(_a_files(t.base)) == 3

    fixed = text.replace("  poll_interval_seconds:", "  timezone: Asia/Kolkata\n  poll_interval_seconds:")
    daemon = Daemon(
        parse_daemon_config(fixed), registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False
    )
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.CLEANING, NOW) is Outcome.DONE
    assert daemon.runtimes["t"].zone == ZoneInfo("Asia/Kolkata") and len(_a_files(t.base)) == 2


def test_ticks_pass_the_tick_gate_one_at_a_time_and_leave_it_to_wait_for_a_slot(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """A thousand tables' first ticks all runnable at once starved each other of the interpreter lock:
    `daemon.max_concurrent_ticks` caps the ticks doing their own work. A tick waiting for a slot is
    not doing its own work, so it must not keep the other services' ticks out. A tick due waits for
    the gate in a queue: parked on threads, a thousand tables' ticks held two thousand."""
    tables = {f"t{i}": FixtureTable(tmp_path / f"t{i}", name=f"t{i}") for i in range(6)}
    for t in tables.values():
        _history(t)
    text = _config_text({name: t.base for name, t in tables.items()}, clustering=True)
    text = text.replace("  shutdown_grace_seconds", "  max_concurrent_ticks: 1\n  shutdown_grace_seconds")
    daemon = Daemon(parse_daemon_config(text), registry=registry, serve_http=False)
    cleaning_slots = daemon.ticker.slots[TableService.CLEANING]
    for _ in range(cleaning_slots.capacity):  # every cleaning tick waits for a slot
        cleaning_slots.acquire(SlotClaim("elsewhere"))
    active, most, ran, threads = [0], [0], set(), [0]
    guard = threading.Lock()
    tick = daemon.ticker.run_iteration
    before = threading.active_count()

    def counted(runtime: TableRuntime, service: TableService, now: datetime) -> Outcome:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
            threads[0] = max(threads[0], threading.active_count() - before)
        time.sleep(0.01)  # long enough for the jobs' threads to meet without the gate
        with guard:
            active[0] -= 1  # counted before the tick runs, on a thread holding a place in the gate
            ran.add((runtime.name, service))
        return tick(runtime, service, now)

    daemon.ticker.run_iteration = counted  # type: ignore[method-assign]
    daemon.start()
    try:
        wait_until(lambda: {name for name, s in ran if s is TableService.CLUSTERING} == set(tables))
        wait_until(lambda: len(cleaning_slots.waiting()) >= 1)
        assert _cleans(tables["t0"].base) == []  # the slots are still held elsewhere
        assert most[0] == 1
        # The scheduler's thread, the gate's one, and one per cleaning tick left waiting for a slot.
        assert threads[0] <= 2 + len(tables), threads[0]
    finally:
        for _ in range(cleaning_slots.capacity):
            cleaning_slots.release()
        assert daemon.stop(grace_seconds=10)


def _archiving_daemon(t: FixtureTable, registry: CollectorRegistry) -> tuple[Daemon, TableRuntime]:
    """The daemon over table t, archiving down to 2 commits once more than 3 are active."""
    text = _config_text({"t": t.base}).replace(
        "hoodie.cleaner.commits.retained: 1",
        "hoodie.cleaner.commits.retained: 1\n  hoodie.keep.min.commits: 2\n  hoodie.keep.max.commits: 3",
    )
    daemon = Daemon(parse_daemon_config(text), registry=registry, clock=lambda: NOW, serve_http=False)
    return daemon, daemon.runtimes["t"]


def test_daemon_archival_tick_archives_when_hudis_archiver_would_and_says_what_holds_it(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """Writers that handed their services over archive nothing: the daemon's archival tick does, by
    Hudi's trigger (more than hoodie.keep.max.commits commits, down to the minimum). The page and the
    API show the active timeline's length and what holds archival back; the gauge and the counter
    follow; a tick with nothing to archive writes nothing."""
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 7):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    daemon, runtime = _archiving_daemon(t, registry)
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    archived = [p.name for p in (t.base / ".hoodie" / "archived").iterdir()]
    assert ".commits_.archive.1_1-0-1" in archived
    assert sorted(i.timestamp for i in HudiTable.open(str(t.base)).load_timeline()) == [ts(5), ts(6)]
    assert _value(registry, "archived_instants_total", table="t") == 4
    assert _value(registry, "active_timeline_instants", table="t") == 2
    [run] = [r for r in daemon.history.runs("t") if r.service == "archival"]
    assert run.outcome == "archived" and run.instant == ts(4)
    state = daemon.status.table(runtime, NOW)["services"]["archival"]
    assert state["archival"]["active_instants"] == 2 and state["archival"]["would_archive"] == 0
    assert state["archival"]["held_by"]["bound"] == Bound.NOT_TRIGGERED.value and not state["due"]
    assert state["archival"]["held_by"]["way_out"].startswith("none needed")
    last = state["archival"]["last_archived"]
    assert last["by"] == "this daemon" and last["file"] == ".commits_.archive.1_1-0-1"
    page = status_page.render(daemon.status)
    assert (
        f"active timeline: 2 instants; last archived {last['at']} by this daemon "
        "(.commits_.archive.1_1-0-1); archival would take 0; held by hoodie.keep.max.commits"
    ) in page
    # Nothing more to archive: nothing written, nothing counted.
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    assert sorted(p.name for p in (t.base / ".hoodie" / "archived").iterdir()) == sorted(archived)
    assert _value(registry, "archived_instants_total", table="t") == 4
    # Another daemon (a restart) finds the archive there: written before it served the table.
    other, other_runtime = _archiving_daemon(t, CollectorRegistry())
    assert other.run_iteration(other_runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    seen = other.status.table(other_runtime, NOW)["services"]["archival"]["archival"]["last_archived"]
    assert seen == {**last, "by": "an archiver before this daemon served the table"}


def test_daemon_archival_stands_down_where_the_writers_still_archive(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """An archive file there before the daemon first looked (archived before the hand-over) is no
    reason to stop; one that appears later, written by no run of the daemon, means the writers still
    archive: archival is refused for the table, with its fix, and nothing more is archived."""
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 7):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    archived = t.base / ".hoodie" / "archived"
    archived.mkdir()
    (archived / ".commits_.archive.1_1-0-1").write_bytes(b"")  # a writer's, from before the hand-over
    daemon, runtime = _archiving_daemon(t, registry)
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    assert (archived / ".commits_.archive.2_1-0-1").exists()
    for i in range(7, 10):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    # A writer archived meanwhile: its archive file, and ts(5)'s instant files gone from the timeline.
    (archived / ".commits_.archive.3_1-0-1").write_bytes(b"")
    for name in (f"{ts(5)}.commit.requested", f"{ts(5)}.inflight", f"{ts(5)}.commit"):
        (t.base / ".hoodie" / name).unlink()
    before = sorted(p.name for p in t.base.rglob("*"))
    for _ in range(2):
        assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.REFUSED
    assert sorted(p.name for p in t.base.rglob("*")) == before
    refusal = daemon.status.table(runtime, NOW)["service_refusals"]["archival"]
    assert ".commits_.archive.3_1-0-1" in refusal["reason"] and "its writers archive it" in refusal["reason"]
    assert "hoodie.table.services.enabled=false" in refusal["change"]
    assert _value(registry, "table_refused", table="t", service="archival", reason="writers_archive") == 1


def test_a_clean_over_the_volume_breaker_is_on_hold_until_that_plan_is_approved(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """A table onboarded with a backlog (ten versions of two file groups, never cleaned): the first
    clean keeping one commit would delete 16 of its 20 files, over the breaker's 75%. The daemon holds
    it, at every tick: no failure, no backoff, no quarantine; the API and the page show the counts and
    the command approving exactly that plan, the metric says `volume_breaker`, archival goes on. Once
    a commit changes the plan, the old digest's approval lets nothing through; the new plan's approval
    (the command the page shows) runs exactly it at the next tick, and the hold is gone."""
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 11):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    daemon = Daemon(parse_daemon_config(_config_text({"t": t.base})), registry=registry, clock=lambda: NOW,
                    serve_http=False)  # fmt: skip
    runtime = daemon.runtimes["t"]

    def files() -> list[str]:
        return sorted(str(p.relative_to(t.base)) for p in t.base.rglob("*.parquet"))

    def held() -> dict[str, Any]:
        state = daemon.status.table(runtime, NOW)
        assert state["state"] == "on hold"
        on_hold: dict[str, Any] = state["services"]["cleaning"]["on_hold"]
        return on_hold

    before = files()
    for _ in range(4):  # beyond `quarantine_after: 2`
        assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.ON_HOLD
    assert files() == before and not runtime.quarantined and not runtime.consecutive_failures
    first = held()
    assert (first["files_to_delete"], first["live_files"], first["partitions"]) == (16, 20, {"a": 8, "b": 8})
    assert (
        first["approve"] == f"hudi-table-service clean --base-path file:{t.base} --approve {first['digest']}"
    )
    page = status_page.render(daemon.status)
    assert "cleaning on hold: the plan would delete 16 of the 20 files of live file groups (80%" in page
    assert f"<code>{first['approve']}</code>" in page
    assert _value(registry, "table_refused", table="t", service="cleaning", reason="volume_breaker") == 1
    assert len([r for r in daemon.history.runs("t") if r.outcome == "on hold"]) == 1  # said once
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE  # the others go on
    # Approved, but the table moved on first: the plan deletes one file more and is held anew.
    assert main(first["approve"].split()[1:]) == 0
    t.commit(ts(11), [FileSpec("a", fid(1))])
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.ON_HOLD
    second = held()
    assert second["digest"] != first["digest"] and second["files_to_delete"] == 18
    assert len(files()) == len(before) + 1
    assert main(second["approve"].split()[1:]) == 0
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert len(files()) == 21 - 18 and f"a/{t.file_name('a', fid(1), ts(11))}" in files()
    state = daemon.status.table(runtime, NOW)
    assert state["state"] != "on hold" and state["services"]["cleaning"]["on_hold"] is None
    assert _value(registry, "table_refused", table="t", service="cleaning", reason="volume_breaker") == 0


def test_the_daemon_watches_what_holds_a_tables_services_back(
    tmp_path: Path, registry: CollectorRegistry
) -> None:
    """A dead writer's pending commit (no heartbeat, hours old) and a savepoint: a tick looks, and the
    API and the page list both, oldest first, with the services each holds back and the way out;
    `blocked_seconds` gives each (service, blocker) its age. Once the write is gone (rolled back), the
    next look drops it and its series."""
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    t.savepoint(ts(2), {"a": [t.file_name("a", fid(2), ts(2))]})
    t.commit(ts(4), [FileSpec("a", fid(4))], state=State.INFLIGHT)
    daemon = Daemon(parse_daemon_config(_config_text({"t": t.base})), registry=registry, clock=lambda: NOW,
                    serve_http=False)  # fmt: skip
    runtime = daemon.runtimes["t"]
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    blockers = daemon.status.table(runtime, NOW)["blockers"]
    assert [(b["kind"], b["instant"]) for b in blockers] == [("savepoint", ts(2)), ("pending_write", ts(4))]
    write = blockers[1]
    assert write["heartbeat"] == "none" and write["owner"] == "a Hudi writer" and "LAZY" in write["way_out"]
    age = (NOW - parse_instant_time(ts(4), UTC)).total_seconds()
    assert write["age_seconds"] == round(age)
    assert _value(registry, "blocked_seconds", table="t", service="archival", blocker="pending_write") == age
    assert _value(registry, "blocked_seconds", table="t", service="cleaning", blocker="savepoint") > age
    page = status_page.render(daemon.status)
    assert "<li class='blocker' data-kind='pending_write'><b>pending_write</b> " + ts(4) in page
    # The write is rolled back: the next look (a minute on) no longer finds it.
    for name in (f"{ts(4)}.commit.requested", f"{ts(4)}.inflight"):
        (t.base / ".hoodie" / name).unlink()
    runtime.blockers_at = None
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, NOW) is Outcome.DONE
    assert [b["kind"] for b in daemon.status.table(runtime, NOW)["blockers"]] == ["savepoint"]
    assert (
        registry.get_sample_value(
            "hudi_table_service_blocked_seconds",
            {"table": "t", "service": "archival", "blocker": "pending_write"},
        )
        is None
    )
