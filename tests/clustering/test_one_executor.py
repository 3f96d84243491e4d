"""One executor per instant, on fixture tables: live instants are refused (CLI, daemon), abandoned ones
taken over, and every instant file is created with the table lock held (pure-logic runner)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.cleaning import Cleaner
from service.cli import main
from service.clustering.orchestrator import (
    execute_clustering,
    schedule_clustering,
)
from service.clustering.purge import purge_pending_clustering
from service.config.daemon import parse_daemon_config
from service.config.hoodie import HoodieConfig
from service.daemon import Daemon, Outcome, TableService
from service.errors import InstantOwnedError
from service.executor.clustering_job import GroupJob
from service.lock import InProcessTableLock
from service.lock.base import TableLock
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action, Instant, State
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import create_instant_file
from tests.clean.helpers import fid, make_cleaner
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t", name="t")
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2)), FileSpec("b", fid(3))])
    t.commit(ts(2), [FileSpec("a", fid(4)), FileSpec("b", fid(5))])
    return t


def _lock(t: FixtureTable) -> InProcessTableLock:
    return InProcessTableLock(t.name, key=str(t.base), default_timeout_s=5)


def _schedule(table: HudiTable, lock: TableLock) -> str:
    config = HoodieConfig.from_mapping({}, table.name)
    instant = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC).instant_time
    assert instant is not None
    return instant


def _set_age(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def _nothing_written(job: GroupJob) -> list[BaseFileWriteResult]:
    return []


def _names(base: Path) -> set[str]:
    return {p.name for p in (base / ".hoodie").iterdir() if p.is_file()}


@pytest.fixture
def inflight_clustering(tmp_path: Path) -> Iterator[tuple[FixtureTable, HudiTable, str]]:
    """A table with clustering T inflight: another executor's attempt, its heartbeat 5 s old."""
    t = _table(tmp_path)
    table = HudiTable.open(str(t.base))
    instant = _schedule(table, _lock(t))
    create_instant_file(table.storage, table.layout, Instant(instant, Action.REPLACE_COMMIT, State.INFLIGHT))
    beat = t.base / ".hoodie" / ".heartbeat" / instant
    beat.parent.mkdir(parents=True)
    beat.write_bytes(b"")
    _set_age(beat, 5)
    yield t, table, instant


def test_execute_refuses_an_instant_whose_heartbeat_is_alive(
    inflight_clustering: tuple[FixtureTable, HudiTable, str],
) -> None:
    t, table, instant = inflight_clustering
    before = _names(t.base)
    config = HoodieConfig.from_mapping({}, table.name)
    expected = rf"replacecommit {instant} \(inflight\).*heartbeat 5\.\d s old"
    with pytest.raises(InstantOwnedError, match=expected):
        execute_clustering(table, instant, config, _nothing_written, _lock(t), zone=UTC)
    assert _names(t.base) == before  # no rollback, no commit
    assert (t.base / ".hoodie" / ".heartbeat" / instant).exists()  # the owner's heartbeat is untouched


def test_execute_refuses_a_young_inflight_without_heartbeat_then_takes_it_over_once_old(
    inflight_clustering: tuple[FixtureTable, HudiTable, str],
) -> None:
    t, table, instant = inflight_clustering
    (t.base / ".hoodie" / ".heartbeat" / instant).unlink()  # e.g. Hudi's executor: it keeps none
    config = HoodieConfig.from_mapping({}, table.name)
    with pytest.raises(InstantOwnedError, match="no heartbeat, inflight file"):
        execute_clustering(table, instant, config, _nothing_written, _lock(t), zone=UTC)
    _set_age(t.base / ".hoodie" / f"{instant}.replacecommit.inflight", 600)
    assert execute_clustering(table, instant, config, _nothing_written, _lock(t), zone=UTC).committed
    assert any(n.endswith(".rollback") for n in _names(t.base))  # the abandoned attempt was rolled back
    assert not (t.base / ".hoodie" / ".heartbeat" / instant).exists()  # ours, deleted at the end


def test_purge_refuses_a_plan_being_executed(
    inflight_clustering: tuple[FixtureTable, HudiTable, str],
) -> None:
    t, table, instant = inflight_clustering
    with pytest.raises(InstantOwnedError, match=f"not purging replacecommit {instant}"):
        purge_pending_clustering(table, _lock(t), zone=UTC, now=datetime.now(UTC))
    assert f"{instant}.replacecommit.inflight" in _names(t.base)


def test_cli_execute_exits_non_zero_naming_instant_and_heartbeat_age(
    inflight_clustering: tuple[FixtureTable, HudiTable, str], caplog: pytest.LogCaptureFixture
) -> None:
    t, _, instant = inflight_clustering
    args = ["cluster", "--base-path", str(t.base), "--mode", "execute", "--timezone", "UTC"]
    assert main(args) == 1
    [line] = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert instant in line and "heartbeat 5." in line and "another executor owns it" in line
    assert main([*args[:-4], "--mode", "purgePending", "--timezone", "UTC"]) == 1


def test_daemon_skips_the_tick_with_a_metric_not_a_failure(
    inflight_clustering: tuple[FixtureTable, HudiTable, str], caplog: pytest.LogCaptureFixture
) -> None:
    t, _, instant = inflight_clustering
    text = f"""
daemon:
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
  failures: {{backoff_initial_seconds: 60, quarantine_after: 1}}
tables:
  - {{name: t, base_path: '{t.base}', timezone: UTC, cleaning: {{enabled: false}}}}
"""
    registry = CollectorRegistry()
    daemon = Daemon(parse_daemon_config(text), registry=registry, serve_http=False)
    runtime = daemon.runtimes["t"]
    caplog.set_level("DEBUG")
    for _ in range(2):
        now = datetime.now(UTC)
        assert daemon.run_iteration(runtime, TableService.CLUSTERING, now) is Outcome.OWNED_ELSEWHERE
    labels = {"table": "t", "service": "clustering"}
    assert registry.get_sample_value("hudi_table_service_instant_owned_elsewhere_total", labels) == 2
    assert not runtime.consecutive_failures and not runtime.retry_at and not runtime.quarantined
    skipped = [r for r in caplog.records if "skipped this tick" in r.getMessage()]
    # Said once at INFO; the same owner on later ticks is DEBUG (an operator acts on it once).
    assert [r.levelname for r in skipped] == ["INFO", "DEBUG"]
    assert all(instant in r.getMessage() for r in skipped)


# ------------------------------------------------------------------------------- cleaning


def _clean_table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "c", name="c")
    for i in (1, 2, 3, 4):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    return t


def _cleaner(t: FixtureTable, lock: TableLock | None = None) -> Cleaner:
    return make_cleaner(t.base, {"hoodie.cleaner.commits.retained": 1}, now=None, lock=lock or _lock(t))


def test_a_clean_another_cleaner_runs_is_left_alone(tmp_path: Path) -> None:
    t = _clean_table(tmp_path)
    cleaner = _cleaner(t)
    _, scheduled = cleaner._schedule()
    assert scheduled is not None
    instant = scheduled.instant.timestamp
    plan = (t.base / ".hoodie" / f"{instant}.clean.requested").read_bytes()
    (t.base / ".hoodie" / f"{instant}.clean.inflight").write_bytes(plan)
    files = sorted(p.name for p in t.base.glob("*/*.parquet"))
    beat = t.base / ".hoodie" / ".heartbeat" / instant
    beat.parent.mkdir(parents=True)
    beat.write_bytes(b"")
    with pytest.raises(InstantOwnedError, match=rf"not executing clean {instant} \(inflight\).*heartbeat"):
        _cleaner(t).run()
    assert sorted(p.name for p in t.base.glob("*/*.parquet")) == files
    args = ["clean", "--base-path", str(t.base), "--timezone", "UTC"]
    assert main([*args, "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]) == 1
    _set_age(beat, 600)  # the other cleaner died: its plan is finished now
    [done] = _cleaner(t).run().cleans
    assert done.instant_time == instant and done.resumed and done.files_deleted == 4


# ------------------------------------------------------------------------------- under the lock


def _record_creations(
    storage: Storage, lock: TableLock, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[str, bool]]:
    """Every create-if-absent of `storage` with whether the lock was held at that moment."""
    created: list[tuple[str, bool]] = []
    real = storage.create_if_absent

    def recording(rel: str, data: bytes) -> None:
        created.append((rel.rsplit("/", 1)[-1], lock.is_held))
        real(rel, data)

    monkeypatch.setattr(storage, "create_if_absent", recording)
    return created


def test_every_instant_transition_is_written_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path)
    table = HudiTable.open(str(t.base))
    lock = _lock(t)
    created = _record_creations(table.storage, lock, monkeypatch)
    instant = _schedule(table, lock)
    config = HoodieConfig.from_mapping({}, table.name)
    # An abandoned attempt: the takeover rolls it back (R requested, inflight, completed), re-creates
    # the inflight file and commits.
    create_instant_file(table.storage, table.layout, Instant(instant, Action.REPLACE_COMMIT, State.INFLIGHT))
    _set_age(t.base / ".hoodie" / f"{instant}.replacecommit.inflight", 600)
    created.clear()
    assert execute_clustering(table, instant, config, _nothing_written, lock, zone=UTC).committed
    names = [n for n, _ in created]
    assert [n.split(".", 1)[1] for n in names] == [
        "rollback.requested", "rollback.inflight", "rollback",
        "replacecommit.inflight", "replacecommit",
    ]  # fmt: skip
    assert all(held for _, held in created), created

    c = _clean_table(tmp_path)
    cleaner = _cleaner(c)
    created = _record_creations(cleaner.table.storage, cleaner.lock, monkeypatch)
    assert len(cleaner.run().cleans) == 1
    assert [n.split(".", 1)[1] for n, _ in created] == ["clean.requested", "clean.inflight", "clean"]
    assert all(held for _, held in created), created
