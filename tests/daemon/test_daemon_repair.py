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
from service.trash import TRASH_DIR
from tests.repair.test_trash import _table


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
    assert not daemon.status.table(daemon.runtimes["t"], datetime.now(UTC))["services"]["repair"]["enabled"]
    with pytest.raises(ConfigError, match="interval_hours"):
        parse_daemon_config(_config(t.base, "{enabled: true, interval_hours: 0}"))
