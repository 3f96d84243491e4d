"""Run history (rebuilt from the timeline at start), the JSON API and the status page of a running daemon."""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.clustering import clusterer, orchestrator
from service.config import daemon as daemon_config
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService, status_page
from service.daemon.history import FileStats
from service.daemon.runtime import Phase
from service.daemon.status_api import redact
from service.executor.clustering_job import GroupJob
from service.table.base_file_writer import BaseFileWriteResult
from service.table.properties import TableConfig, load_table_config
from tests.clean.helpers import fid
from tests.support import chromium
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.waiting import read_until, wait_until

NOW = datetime(2024, 1, 2, tzinfo=UTC)
SMALL_LIMIT = 10_000  # inputs (natural size, ~2 KB) are small, the clustered outputs (~20 KB) are not


def _config_text(tables: dict[str, tuple[Path, bool]], poll: float = 0.05) -> str:
    entries = "".join(
        f"""
  - name: {name}
    base_path: {base}
    clustering: {{enabled: {str(clustering).lower()}}}
    hoodie: {{hoodie.aws.secret.key: hunter2}}"""
        for name, (base, clustering) in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: {poll}
  shutdown_grace_seconds: 10
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process, properties: {{hoodie.write.lock.wait_time_ms: 5000}}}}
  failures: {{backoff_initial_seconds: 0, backoff_max_seconds: 120, quarantine_after: 2}}
defaults:
  hoodie.cleaner.commits.retained: 1
  hoodie.clustering.async.max.commits: 100
  hoodie.clustering.plan.strategy.small.file.limit: {SMALL_LIMIT}
tables:{entries}
"""


def _clustered_and_cleaned(base: Path, name: str) -> FixtureTable:
    """Two small file groups clustered into one big one (our plan, completed), then more commits."""
    t = FixtureTable(base, name=name)
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))])
    t.pending_clustering(ts(2), [("a", fid(1)), ("a", fid(2))], inflight=True)
    t.complete_clustering(ts(2), [FileSpec("a", fid(3), rows=1, size_hint=20_000)], {"a": [fid(1), fid(2)]})
    for i in range(3, 6):  # three versions of a fourth group: one commit retained, so a clean deletes
        t.commit(ts(i), [FileSpec("a", fid(4))])
    return t


def _refused_for_clustering(base: Path, name: str) -> FixtureTable:
    """A merge-on-read table with a payload class whose merge clustering does not reproduce."""
    t = FixtureTable(base, name=name, table_type="MERGE_ON_READ")
    raw = {k: v for k, v in load_table_config(t.storage).raw.items() if k != "hoodie.table.checksum"}
    raw["hoodie.compaction.payload.class"] = "com.example.CustomPayload"
    t.storage.write_bytes(".hoodie/hoodie.properties", TableConfig(raw).to_text().encode("latin-1"))
    t.commit(ts(1), [FileSpec("a", fid(1))])
    return t


def _files(base: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in base.rglob("*.parquet")}


def _size(t: FixtureTable, partition: str, file_id: str, instant: str) -> int:
    return (t.base / partition / t.file_name(partition, file_id, instant)).stat().st_size


def test_history_is_measured_and_rebuilt_from_the_timeline_after_a_restart(tmp_path: Path) -> None:
    t = _clustered_and_cleaned(tmp_path / "t", "t")
    inputs = [_size(t, "a", fid(1), ts(1)), _size(t, "a", fid(2), ts(1))]
    output = _size(t, "a", fid(3), ts(2))
    assert max(inputs) < SMALL_LIMIT <= output
    files_before = _files(t.base)
    config = parse_daemon_config(_config_text({"t": (t.base, False)}))

    first = Daemon(config, registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False)
    assert first.run_iteration(first.runtimes["t"], TableService.CLEANING, NOW) is Outcome.DONE
    live = first.history.runs("t")
    assert [(r.service, r.outcome, r.from_timeline) for r in live] == [
        ("clustering", "committed", True),  # rebuilt at the first tick
        ("cleaning", "completed", False),  # observed
    ]
    clean = live[-1]
    deleted = {n: size for n, size in files_before.items() if n not in _files(t.base)}
    assert f"{fid(4)}_0-0-0_{ts(3)}.parquet" in deleted and len(deleted) >= 2
    assert clean.files_deleted == len(deleted) and clean.bytes_deleted == sum(deleted.values())
    assert clean.earliest_retained == ts(5)

    # A fresh daemon (a restart) rebuilds both runs, with the same numbers, from the timeline alone.
    second = Daemon(config, registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False)
    assert second.history.runs("t") == ()
    assert second.run_iteration(second.runtimes["t"], TableService.CLEANING, NOW) is Outcome.DONE
    clustering, rebuilt_clean = second.history.runs("t")
    assert clustering.instant == ts(2) and clustering.partitions == ("a",)
    assert clustering.before == FileStats(2, sum(inputs), 2, sum(inputs))
    assert clustering.after == FileStats(1, output, 0, 0)
    assert clustering.before.mean_file_bytes == sum(inputs) / 2
    assert rebuilt_clean.from_timeline and rebuilt_clean.instant == clean.instant
    # The deleted files are gone: their sizes come from the write stats of the commits that wrote them.
    assert (rebuilt_clean.files_deleted, rebuilt_clean.bytes_deleted) == (len(deleted), sum(deleted.values()))
    assert rebuilt_clean.earliest_retained == ts(5)


def test_failed_and_refused_ticks_are_recorded_once(tmp_path: Path) -> None:
    broken = FixtureTable(tmp_path / "broken", name="broken")
    broken.commit(ts(1), [FileSpec("a", fid(1))])
    (broken.base / ".hoodie" / f"{ts(2)}.replacecommit").write_bytes(b"garbage")  # read by every view
    mor = _refused_for_clustering(tmp_path / "mor", "mor")
    config = parse_daemon_config(_config_text({"broken": (broken.base, False), "mor": (mor.base, True)}))
    daemon = Daemon(config, registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False)
    assert daemon.run_iteration(daemon.runtimes["broken"], TableService.CLEANING, NOW) is Outcome.FAILED
    for _ in range(3):
        assert daemon.run_iteration(daemon.runtimes["mor"], TableService.CLUSTERING, NOW) is Outcome.REFUSED
    (failed,) = daemon.history.runs("broken")
    assert (failed.service, failed.outcome) == ("cleaning", "failed")
    assert "CorruptTableError" in failed.reason
    (refused,) = daemon.history.runs("mor")
    assert (refused.service, refused.outcome) == ("clustering", "refused")
    assert "CustomPayload" in refused.reason


def test_a_table_refused_for_configuration_shows_the_setting_that_lifts_it_and_no_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon_config, "machine_zone", lambda: None)  # a machine that names no zone
    local = FixtureTable(tmp_path / "local", name="local", timeline_timezone="LOCAL")
    local.commit(ts(1), [FileSpec("a", fid(1))])
    mor = _refused_for_clustering(tmp_path / "mor", "mor")
    config = parse_daemon_config(_config_text({"local": (local.base, False), "mor": (mor.base, True)}))
    daemon = Daemon(config, registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False)
    assert daemon.run_iteration(daemon.runtimes["local"], TableService.CLEANING, NOW) is Outcome.REFUSED
    assert daemon.run_iteration(daemon.runtimes["mor"], TableService.CLUSTERING, NOW) is Outcome.REFUSED
    tables = {t["name"]: t for t in daemon.status.tables()["tables"]}
    assert tables["local"]["state"] == "needs configuration"
    assert tables["local"]["fix"] == "daemon.timezone (or the table entry's timezone)"
    assert tables["local"]["services"]["cleaning"]["consecutive_failures"] == 0
    assert (tables["mor"]["state"], tables["mor"]["fix"]) == ("refused", None)
    page = status_page.render(daemon.status)
    assert (
        "to serve it: set daemon.timezone (or the table entry&#x27;s timezone) in the daemon config" in page
    )


def test_redact_hides_secrets_and_uri_credentials() -> None:
    redacted = redact(
        {"hoodie.aws.secret.key": "s", "storage_options": {"access_key_id": "k", "region": "eu"},
         "base_path": "s3a://user:pw@bucket/t", "hoodie.write.lock.zookeeper.auth": ""}
    )  # fmt: skip
    assert redacted == {
        "hoodie.aws.secret.key": "***",
        "storage_options": {"access_key_id": "***", "region": "eu"},
        "base_path": "s3a://***@bucket/t",
        "hoodie.write.lock.zookeeper.auth": "",
    }


# ---------------------------------------------------------------------- a running daemon
def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.headers["Content-Type"] == "application/json"
        return json.loads(response.read())


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Daemon, CollectorRegistry]]:
    """Three tables: one served (clustered before, cleaned by the daemon), one quarantined (a corrupt
    commit), one refused for clustering (merge-on-read with a payload class it does not merge)."""
    healthy = _clustered_and_cleaned(tmp_path / "healthy", "healthy")
    broken = FixtureTable(tmp_path / "broken", name="broken")
    broken.commit(ts(1), [FileSpec("a", fid(1))])
    (broken.base / ".hoodie" / f"{ts(2)}.replacecommit").write_bytes(b"garbage")  # read by every view
    mor = _refused_for_clustering(tmp_path / "mor", "mor")
    tables = {"healthy": (healthy.base, True), "broken": (broken.base, False), "mor": (mor.base, True)}
    registry = CollectorRegistry()
    daemon = Daemon(parse_daemon_config(_config_text(tables)), registry=registry)
    daemon.start()
    try:
        wait_until(
            lambda: (
                daemon.runtimes["broken"].quarantined
                and bool(daemon.runtimes["mor"].refused_services)
                and daemon.history.last("healthy", "cleaning") is not None
                and daemon.runtimes["healthy"].file_sizes is not None
                and daemon.runtimes["healthy"].commits_since.get(TableService.CLUSTERING) is not None
            )
        )
        yield daemon, registry
    finally:
        assert daemon.stop(grace_seconds=10)


def test_api_lists_every_table_with_its_state_small_files_and_last_runs(
    running: tuple[Daemon, CollectorRegistry],
) -> None:
    daemon, registry = running
    assert daemon.http is not None
    url = daemon.http.url
    # The daemon ticks every 50 ms and a cleaning tick shows its table "planning" while the cleaner
    # decides whether a clean is due: a single read can land inside a tick.
    states = {"broken": "quarantined", "healthy": "idle", "mor": "refused"}
    overview = read_until(
        lambda: _get(url + "/api/v1/tables"), lambda o: {t["name"]: t["state"] for t in o["tables"]} == states
    )
    tables = {t["name"]: t for t in overview["tables"]}
    assert {n: t["state"] for n, t in tables.items()} == states
    healthy = tables["healthy"]
    files = healthy["files"]
    # Live: the clustered output (not small) and the latest version of the fourth group (small).
    assert (files["files"], files["small_files"], files["small_file_limit_bytes"]) == (2, 1, SMALL_LIMIT)
    assert sum(b["files"] for b in files["distribution"]) == 2
    cleaning = healthy["services"]["cleaning"]
    assert cleaning["last_run"]["outcome"] == "completed" and cleaning["last_run"]["files_deleted"] >= 2
    assert cleaning["pending"] == [] and cleaning["next_due"] is not None
    clustering = healthy["services"]["clustering"]
    assert clustering["commits_since_last"] == 3 and clustering["last_run"]["instant"] == ts(2)
    # Compaction merges slices as clustering does: refused for the same payload class.
    assert tables["mor"]["refused_services"] == ["clustering", "compaction"]
    assert tables["broken"]["services"]["cleaning"]["consecutive_failures"] == 2
    assert registry.get_sample_value("hudi_table_service_small_files", {"table": "healthy"}) == 1
    assert registry.get_sample_value(
        "hudi_table_service_mean_file_size_bytes", {"table": "healthy"}
    ) == pytest.approx(files["bytes"] / 2)

    detail = read_until(lambda: _get(url + "/api/v1/tables/healthy"), lambda d: d["state"] == "idle")
    assert detail["state"] == "idle" and detail["held"] is True
    assert [(r["service"], r["outcome"]) for r in detail["history"]] == [
        ("cleaning", "completed"),
        ("clustering", "committed"),
    ]  # newest first
    assert detail["history"][1]["before"]["small_files"] == 2
    assert detail["history"][1]["after"]["small_files"] == 0
    assert detail["config"]["hoodie"]["hoodie.aws.secret.key"] == "***"
    assert "hunter2" not in json.dumps(detail)
    assert detail["config"]["settings"]["clustering"]["enabled"] is True

    broken = _get(url + "/api/v1/tables/broken")
    assert [r["outcome"] for r in broken["history"]] == ["failed", "failed"]
    assert "CorruptTableError" in broken["errors"][0]["error"]
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(url + "/api/v1/tables/nope", timeout=5)
    assert missing.value.code == 404
    assert daemon.config.daemon.metrics.host == "127.0.0.1"  # loopback unless configured otherwise


@pytest.mark.browser
def test_status_page_renders_in_headless_chromium(
    running: tuple[Daemon, CollectorRegistry], tmp_path: Path
) -> None:
    daemon, _ = running
    assert daemon.http is not None
    url = daemon.http.url + "/"
    profile = tmp_path / "profile"
    shot = chromium.screenshot(url, chromium.ARTIFACTS_DIR / "status-page-live.png", profile)
    states = {"healthy": "idle", "broken": "quarantined", "mor": "refused"}  # read between ticks, as above
    marks = [f'id="table-{name}" data-state="{state}"' for name, state in states.items()]
    dom = read_until(lambda: chromium.dom(url, profile), lambda d: all(m in d for m in marks))
    for mark in marks:
        assert mark in dom, dom[:3000]
    assert dom.count("<svg") >= 1 and "recent runs" in dom and "files deleted" in dom
    print(f"status page screenshot: {shot}")


@pytest.mark.browser
def test_status_page_of_each_state_in_headless_chromium_shows_its_fix_chart_and_relative_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One page per state, as Chromium renders it (screenshots under test-artifacts/): a healthy table
    (idle, cleaned 3 min before the page), one needing configuration (a LOCAL timeline on a machine
    naming no zone), one refused (a payload class clustering does not merge), one backing off (a
    failed tick waiting 30 s for its retry) and one running (a clustering executing); one more refused
    (writers' HBase index, which a clustering would leave stale) shows the writers' change to make."""
    monkeypatch.setattr(daemon_config, "machine_zone", lambda: None)
    healthy = _clustered_and_cleaned(tmp_path / "healthy", "healthy")
    local = FixtureTable(tmp_path / "local", name="local", timeline_timezone="LOCAL")
    local.commit(ts(1), [FileSpec("a", fid(1))])
    mor = _refused_for_clustering(tmp_path / "mor", "mor")
    broken = FixtureTable(tmp_path / "broken", name="broken")
    broken.commit(ts(1), [FileSpec("a", fid(1))])
    (broken.base / ".hoodie" / f"{ts(2)}.replacecommit").write_bytes(b"garbage")  # read by every view
    running = _clustered_and_cleaned(tmp_path / "running", "running")
    hbase = _clustered_and_cleaned(tmp_path / "hbase", "hbase")
    tables = {"healthy": (healthy.base, True), "local": (local.base, False), "mor": (mor.base, True),
              "broken": (broken.base, False), "running": (running.base, True),
              "hbase": (hbase.base, True)}  # fmt: skip
    text = _config_text(tables).replace("backoff_initial_seconds: 0", "backoff_initial_seconds: 30")
    entry = f"base_path: {hbase.base}\n    clustering: {{enabled: true}}\n    hoodie: {{"
    text = text.replace(entry, entry + "hoodie.index.type: HBASE, ")
    daemon = Daemon(
        parse_daemon_config(text), registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False
    )
    runtimes = daemon.runtimes
    for name in ("healthy", "running"):
        assert daemon.run_iteration(runtimes[name], TableService.CLEANING, NOW) is Outcome.DONE
    assert daemon.run_iteration(runtimes["local"], TableService.CLEANING, NOW) is Outcome.REFUSED
    assert daemon.run_iteration(runtimes["mor"], TableService.CLUSTERING, NOW) is Outcome.REFUSED
    assert daemon.run_iteration(runtimes["broken"], TableService.CLEANING, NOW) is Outcome.FAILED
    assert daemon.run_iteration(runtimes["hbase"], TableService.CLUSTERING, NOW) is Outcome.REFUSED
    runtimes["running"].phase[TableService.CLUSTERING] = (
        Phase.EXECUTING
    )  # what a tick sets while its groups run
    runtimes["running"].pending[TableService.CLUSTERING] = (ts(6),)  # and the plan they run
    expected = {"healthy": "idle", "local": "needs configuration", "mor": "refused",
                "broken": "backing off", "running": "executing", "hbase": "refused"}  # fmt: skip
    for name, state in expected.items():
        # The page 3 min after the ticks; the failed tick's page 10 s after it, inside its 30 s backoff.
        page_time = NOW + (timedelta(seconds=10) if name == "broken" else timedelta(minutes=3))
        only = dataclasses.replace(
            daemon.status, runtimes=lambda n=name: {n: runtimes[n]}, now=lambda t=page_time: t
        )
        page = tmp_path / f"{name}.html"
        slug = state.replace(" ", "-") + ("-index" if name == "hbase" else "")
        page.write_text(status_page.render(only), encoding="utf-8")
        shot = chromium.screenshot(
            page.as_uri(), chromium.ARTIFACTS_DIR / f"status-page-{slug}.png", tmp_path / "p"
        )
        dom = chromium.dom(page.as_uri(), tmp_path / "p")
        assert f'id="table-{name}" data-state="{state}"' in dom, (state, dom[:2000])
        print(f"status page, {state}: {shot}")
        if name in ("healthy", "running"):  # measured by their cleaning tick
            assert (
                '<svg class="sizes"' in dom and '<line class="limit"' in dom and '<line class="target"' in dom
            )
            assert re.search(
                r'<time datetime="2024-01-02T00:00:00\+00:00" title="[^"]+">3 min ago</time>', dom
            )
        if name == "running":  # planned at 00:06 the day before the page
            assert f"{ts(6)} (23 h old)" in dom
        if name == "local":
            assert (
                "to serve it: set daemon.timezone (or the table entry's timezone) in the daemon config" in dom
            )
        if name == "mor":
            assert "to serve it: change what the reason names" in dom and "CustomPayload" in dom
        if name == "hbase":
            assert "to serve it: change the writers' hoodie.index.type" in dom
        if name == "broken":  # retried in 20 s; the failed run 10 s ago
            assert re.search(r'<time datetime="2024-01-02T00:00:30\+00:00" title="[^"]+">in 20 s</time>', dom)
            assert ">10 s ago</time>" in dom
    assert not runtimes["local"].consecutive_failures and runtimes["broken"].consecutive_failures


def test_a_clustering_tick_shows_planning_executing_then_committing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 4):  # three small file groups, three commits: due at the threshold of 3
        t.commit(ts(i), [FileSpec("a", fid(i))])
    text = _config_text({"t": (t.base, True)}).replace(
        "hoodie.clustering.async.max.commits: 100", "hoodie.clustering.async.max.commits: 3"
    )
    daemon = Daemon(
        parse_daemon_config(text), registry=CollectorRegistry(), clock=lambda: NOW, serve_http=False
    )
    runtime = daemon.runtimes["t"]
    seen: list[str] = []

    def state() -> str:
        return daemon.status.table_state(runtime, NOW)

    def runner(job: GroupJob) -> list[BaseFileWriteResult]:
        seen.append(state())
        return []

    def commit(
        table: Any, instant: str, plan: Any, results: Any, schema: Any, lock: Any, *_: Any, **__: Any
    ) -> None:
        with lock:  # the commit's lock, taken after the groups ran
            seen.append(state())
        raise RuntimeError("stop before writing the commit")

    monkeypatch.setattr(daemon.executor, "run_group", runner)
    monkeypatch.setattr(orchestrator, "commit_clustering", commit)
    original = orchestrator.schedule_clustering

    def schedule(*args: Any, **kwargs: Any) -> Any:
        seen.append(state())
        return original(*args, **kwargs)

    monkeypatch.setattr(clusterer, "schedule_clustering", schedule)
    assert daemon.run_iteration(runtime, TableService.CLUSTERING, NOW) is Outcome.FAILED
    assert seen == ["planning", "executing", "committing"]
    assert runtime.phase == {}  # no tick running
    # The failed tick waits for its retry; in the status it is backing off until then.
    runtime.retry_at[TableService.CLUSTERING] = NOW + timedelta(seconds=30)
    assert state() == "backing off"
    runtime.retry_at.clear()
    assert state() == "due"  # its trigger fired and nothing was committed: still due
    assert daemon.history.last("t", "clustering") is not None


def test_file_sizes_are_measured_again_after_work_not_at_every_writer_commit(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t", name="t")
    t.commit(ts(1), [FileSpec("a", fid(1))])
    daemon = Daemon(
        parse_daemon_config(_config_text({"t": (t.base, False)})), registry=CollectorRegistry(),
        clock=lambda: NOW, serve_http=False,
    )  # fmt: skip
    runtime, clean = daemon.runtimes["t"], TableService.CLEANING
    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.DONE
    assert runtime.file_sizes is not None and runtime.file_sizes.as_of == ts(1)
    t.commit(ts(2), [FileSpec("a", fid(2))])  # a writer's commit; the tick finds nothing to clean
    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.DONE
    assert runtime.file_sizes.as_of == ts(1) and runtime.file_sizes.stats.files == 1
    for i in (3, 4):  # two more versions of fid(1): with one commit retained the next tick cleans
        t.commit(ts(i), [FileSpec("a", fid(1))])
    assert daemon.run_iteration(runtime, clean, NOW) is Outcome.DONE
    assert daemon.history.last("t", "cleaning") is not None
    assert runtime.file_sizes.as_of not in (ts(1), ts(2)) and runtime.file_sizes.stats.files == 2
