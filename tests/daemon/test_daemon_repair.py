"""The daemon's opt-in repair service (`repair:` in a table's entry): `repair --execute` on the table
every `interval_hours`, its runs in the history and `orphans_moved_total`. What a repair does is in
`tests/repair/`; here, that the daemon runs it, when, and only where it is turned on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.errors import ConfigError
from service.table.instant import State
from service.table.table import HudiTable
from service.trash import TRASH_DIR
from tests.clean.helpers import fid
from tests.repair.test_trash import _table
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _config(base: Path, repair: str) -> str:
    return f"""
daemon:
  poll_interval_seconds: 0.05
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
tables:
  - name: t
    base_path: {base}
    clustering: {{enabled: false}}
    cleaning: {{enabled: false}}
    archival: {{enabled: false}}
    repair: {repair}
"""


def test_the_daemon_repairs_a_table_that_asks_for_it_at_its_interval(tmp_path: Path) -> None:
    t, orphans = _table(tmp_path)
    now = datetime.now(UTC)  # the orphans were last modified two days ago, by the wall clock
    clock = [now]
    registry = CollectorRegistry()
    config = parse_daemon_config(_config(t.base, "{enabled: true, interval_hours: 6}"))
    daemon = Daemon(config, registry=registry, clock=lambda: clock[0], serve_http=False)
    runtime = daemon.runtimes["t"]
    assert daemon.run_iteration(runtime, TableService.REPAIR, now) is Outcome.DONE
    assert not any((t.base / o).exists() for o in orphans)
    [run] = [r for r in daemon.history.runs("t") if r.service == "repair"]
    assert run.outcome == "repaired" and run.instant is not None
    assert sorted(e.name for e in (t.base / TRASH_DIR / run.instant / "files").rglob("*.parquet")) == sorted(
        Path(o).name for o in orphans
    )
    assert registry.get_sample_value("hudi_table_service_orphans_moved_total", {"table": "t"}) == 3
    # Within its interval: not run again (an orphan planted meanwhile waits for the next run).
    planted = t.base / orphans[0]
    planted.write_bytes(b"x")
    clock[0] = now + timedelta(hours=5)
    assert daemon.run_iteration(runtime, TableService.REPAIR, clock[0]) is Outcome.DONE
    assert [r.service for r in daemon.history.runs("t")].count("repair") == 1
    state = daemon.status.table(runtime, clock[0])["services"]["repair"]
    assert state["enabled"] and state["last_run"]["outcome"] == "repaired"


def test_repair_is_off_unless_a_table_turns_it_on_and_its_settings_are_checked(tmp_path: Path) -> None:
    t, _ = _table(tmp_path)
    daemon = Daemon(
        parse_daemon_config(_config(t.base, "{}")), registry=CollectorRegistry(), serve_http=False
    )
    assert not daemon.runtimes["t"].entry.settings.repair.enabled
    tree = sorted(str(p.relative_to(t.base)) for p in t.base.rglob("*.parquet"))
    assert daemon.run_iteration(daemon.runtimes["t"], TableService.REPAIR, datetime.now(UTC)) is Outcome.DONE
    after = sorted(str(p.relative_to(t.base)) for p in t.base.rglob("*.parquet"))
    assert after == tree  # a tick asked of it moves nothing
    assert not daemon.status.table(daemon.runtimes["t"], datetime.now(UTC))["services"]["repair"]["enabled"]
    with pytest.raises(ConfigError, match="interval_hours"):
        parse_daemon_config(_config(t.base, "{enabled: true, interval_hours: 0}"))


def test_archival_held_by_a_dead_writers_pending_commit_runs_once_the_repair_rolled_it_back(
    tmp_path: Path,
) -> None:
    """A writer died mid-commit (LAZY failed writes, no heartbeat): `pending_write` holds archival
    before it. The repair service rolls it back; the next archival tick archives down to Hudi's
    minimum, and the blocker is gone."""
    t = FixtureTable(tmp_path / "t", name="t")
    t.commit(ts(1), [FileSpec("a", fid(1))])
    t.commit(ts(2), [FileSpec("a", fid(2))], state=State.INFLIGHT)  # the dead writer's
    for i in range(3, 13):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    text = _config(t.base, "{enabled: true}").replace(
        "archival: {enabled: false}", "archival: {enabled: true}"
    )
    text += "defaults:\n  hoodie.cleaner.policy.failed.writes: LAZY\n"
    text += (
        "  hoodie.keep.min.commits: 2\n  hoodie.keep.max.commits: 3\n  hoodie.cleaner.commits.retained: 1\n"
    )
    now = datetime.now(UTC)
    daemon = Daemon(
        parse_daemon_config(text), registry=CollectorRegistry(), clock=lambda: now, serve_http=False
    )
    runtime = daemon.runtimes["t"]

    def active() -> list[str]:
        return sorted(i.timestamp for i in HudiTable.open(str(t.base)).load_timeline())

    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, now) is Outcome.DONE
    assert active() == [ts(i) for i in range(1, 13)]  # the pending write holds all of it back
    assert "pending_write" in [b.kind.value for b in runtime.blockers]
    assert daemon.run_iteration(runtime, TableService.REPAIR, now) is Outcome.DONE
    [run] = [r for r in daemon.history.runs("t") if r.service == "repair"]
    assert ts(2) in run.reason
    runtime.blockers_at = None  # the next look, a minute on
    assert daemon.run_iteration(runtime, TableService.ARCHIVAL, now) is Outcome.DONE
    assert [i for i in active() if i <= ts(12)] == [ts(11), ts(12)]  # beside the rollback instant
    assert "pending_write" not in [b.kind.value for b in runtime.blockers]
