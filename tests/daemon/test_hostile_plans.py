"""A table whose stored clean plan points outside it fails its own tick; the daemon's other tables
are cleaned as usual (fixture tables, in-process lock, no Spark)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def _config_text(tables: dict[str, Path]) -> str:
    entries = "".join(
        f"""
  - name: {name}
    base_path: {base}
    clustering: {{enabled: false}}"""
        for name, base in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: 0.05
  shutdown_grace_seconds: 10
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process, properties: {{hoodie.write.lock.wait_time_ms: 5000}}}}
  failures: {{backoff_initial_seconds: 0, backoff_max_seconds: 120, quarantine_after: 2}}
defaults:
  hoodie.cleaner.commits.retained: 1
tables:{entries}
"""


def _history(t: FixtureTable) -> None:
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])


def _files(base: Path) -> set[str]:
    return {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}


def test_hostile_clean_plan_fails_its_table_while_another_table_cleans(tmp_path: Path) -> None:
    healthy = FixtureTable(tmp_path / "healthy", name="healthy")
    hostile = FixtureTable(tmp_path / "hostile", name="hostile")
    _history(healthy)
    _history(hostile)
    sentinel = tmp_path / "x"
    sentinel.mkdir()  # what `../x` names from the hostile table: an empty directory Java would delete
    paths = {"a": [hostile.storage.qualify(f"a/{hostile.file_name('a', fid(1), ts(1))}")]}
    hostile.requested_clean(ts(4), paths, last_completed_commit=ts(3), partitions_to_be_deleted=["../x"])
    hostile_before = _files(hostile.base)
    registry = CollectorRegistry()
    config = parse_daemon_config(_config_text({"hostile": hostile.base, "healthy": healthy.base}))
    daemon = Daemon(config, registry=registry, clock=lambda: NOW, serve_http=False)

    assert daemon.run_iteration(daemon.runtimes["hostile"], TableService.CLEANING, NOW) is Outcome.FAILED
    assert daemon.run_iteration(daemon.runtimes["healthy"], TableService.CLEANING, NOW) is Outcome.DONE

    error = daemon.runtimes["hostile"].errors[-1].error
    assert f"{ts(4)}.clean.requested" in error and "partitionsToBeDeleted" in error and "'../x'" in error
    assert sentinel.is_dir() and _files(hostile.base) == hostile_before
    failures = registry.get_sample_value(
        "hudi_table_service_failures_total",
        {"table": "hostile", "service": "cleaning", "reason": "PathOutsideTableError"},
    )
    assert failures == 1
    # The healthy table was cleaned: of three versions, one commit retained keeps the newest two.
    assert len(list((healthy.base / "a").glob("*.parquet"))) == 2
    assert registry.get_sample_value("hudi_table_service_deleted_files_total", {"table": "healthy"}) == 1
