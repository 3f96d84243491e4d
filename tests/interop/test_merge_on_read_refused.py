"""Merge-on-read tables written by real Hudi: `status` and `clean` serve them; `cluster` and the
daemon's clustering refuse them (reason given, nothing written) until clustering supports them.

Why clustering is refused: a writer's deltacommit appends a log file to a file group without changing
its base instant, and the clustering conflict check compares base instants, so a clustering would
commit over such an update and drop it (see `TableConfig.check_service_supported`). Cleaning deletes
whole file slices, base and logs, as Hudi's cleaner does (`tests/clean/test_hudi_differential_mor.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from tests.clean.helpers import fid
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.histories import HudiHistory

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NOW = datetime(2024, 1, 2, tzinfo=UTC)
REASON = "is MERGE_ON_READ (hoodie.table.type): clustering refuses it for now (cleaning serves it)"


def _tree(base: Path) -> dict[str, str]:
    """Every file under the table (`.hoodie` included) and a digest of its bytes."""
    return {
        p.relative_to(base).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def test_hudi_wrote_log_files(history_merge_on_read: HudiHistory) -> None:
    """The fixture is what the refusal is about: deltacommits that appended log files."""
    base = history_merge_on_read.base_path
    assert [a for _, a in history_merge_on_read.instants] == ["deltacommit"] * 4
    assert list(base.rglob(".*.log.*")), "Hudi's upserts wrote no log files"


@pytest.mark.parametrize(
    "command",
    [
        ["cluster", "--mode", "schedule"],
        ["cluster", "--mode", "scheduleAndExecute"],
        ["cluster", "--mode", "execute"],
        ["cluster", "--mode", "purgePending"],
        ["cluster", "--mode", "schedule", "--dry-run"],
    ],
    ids=lambda c: "-".join(a.lstrip("-") for a in c),
)
def test_cluster_refuses_merge_on_read_and_writes_nothing(
    history_merge_on_read: HudiHistory, command: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    base = history_merge_on_read.base_path
    before = _tree(base)
    argv = [*command[:1], "--base-path", str(base), "--timezone", "UTC", *command[1:]]
    with caplog.at_level(logging.ERROR, logger="hudi_table_service"):
        assert main(argv) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and REASON in errors[0], errors
    assert "merge_on_read" in errors[0] and "conflict check cannot see it" in errors[0]
    assert _tree(base) == before


@pytest.mark.parametrize("dry_run", [False, True])
def test_clean_serves_merge_on_read(
    history_merge_on_read: HudiHistory, dry_run: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file group still has its one slice (no compaction yet): nothing to clean, and nothing
    refused. What a MOR clean deletes is compared with Hudi's cleaner in tests/clean."""
    base = history_merge_on_read.base_path
    before = _tree(base)
    argv = ["clean", "--base-path", str(base), "--timezone", "UTC", "--json"]
    assert main(argv + (["--dry-run"] if dry_run else [])) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files_planned"] == 0 and report["cleans"] == []
    assert _tree(base) == before


def test_status_json_reads_merge_on_read(
    history_merge_on_read: HudiHistory, capsys: pytest.CaptureFixture[str]
) -> None:
    base = history_merge_on_read.base_path
    assert main(["status", "--base-path", str(base), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["table"]["type"] == "MERGE_ON_READ"
    assert [i["action"] for i in report["instants"]] == ["deltacommit"] * 4
    ours = sorted((g["partition_path"], g["file_id"], g["base_instant"]) for g in report["file_groups"])
    hudi_rs = sorted((s.partition, s.file_id, s.base_instant) for s in ht.hudi_rs_file_slices(base))
    assert ours == hudi_rs and ours
    assert any(g["log_files"] for g in report["file_groups"])


def _daemon_config(mor: Path, cow: Path) -> str:
    return f"""
daemon:
  poll_interval_seconds: 0.05
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process}}
  failures: {{backoff_initial_seconds: 0, backoff_max_seconds: 1, quarantine_after: 2}}
defaults:
  hoodie.cleaner.commits.retained: 1
  hoodie.clustering.async.max.commits: 100
tables:
  - name: mor
    base_path: {mor}
    timezone: UTC
  - name: cow
    base_path: {cow}
"""


def test_daemon_refuses_clustering_of_merge_on_read_and_cleans_it(
    history_merge_on_read: HudiHistory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mor = history_merge_on_read.base_path
    cow = FixtureTable(tmp_path / "cow", name="cow")
    for i in range(1, 4):  # three versions of one file group: with one commit retained, one is cleaned
        cow.commit(ts(i), [FileSpec("a", fid(1))])
    registry = CollectorRegistry()
    config = parse_daemon_config(_daemon_config(mor, cow.base))
    daemon = Daemon(config, registry=registry, clock=lambda: NOW, serve_http=False)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, labels)

    before = _tree(mor)
    with caplog.at_level(logging.INFO, logger="service.daemon"):
        for tick in range(4):
            now = NOW + timedelta(seconds=tick)
            for service in TableService:
                expected = Outcome.REFUSED if service is TableService.CLUSTERING else Outcome.DONE
                assert daemon.run_iteration(daemon.runtimes["mor"], service, now) is expected
                assert daemon.run_iteration(daemon.runtimes["cow"], service, now) is Outcome.DONE
    refused_logs = [r for r in caplog.records if "refused" in r.getMessage()]
    assert [r.levelno for r in refused_logs] == [logging.WARNING]
    assert REASON in refused_logs[0].getMessage() and "table mor" in refused_logs[0].getMessage()
    runtime = daemon.runtimes["mor"]
    assert runtime.refused_services == {TableService.CLUSTERING}
    assert not runtime.refused and not runtime.quarantined and not runtime.consecutive_failures
    assert value("table_refused", table="mor") == 1 and value("table_refused", table="cow") == 0
    assert value("tables_quarantined") == 0
    failures = [s for m in registry.collect() if m.name == "hudi_table_service_failures" for s in m.samples]
    assert failures == []
    assert value("last_success_timestamp_seconds", table="mor", service="cleaning") is not None
    assert value("last_success_timestamp_seconds", table="mor", service="clustering") is None
    assert value("last_success_timestamp_seconds", table="cow", service="cleaning") is not None
    assert value("deleted_files_total", table="cow") == 1  # the copy-on-write table was served
    assert _tree(mor) == before

    # hoodie.properties rewritten (as Hudi's HoodieTableConfig.modify does): still merge-on-read, so
    # clustering stays refused (no second warning) and cleaning stays served.
    props = mor / ".hoodie" / "hoodie.properties"
    stat = props.stat()
    os.utime(props, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="service.daemon"):
        for service in TableService:
            expected = Outcome.REFUSED if service is TableService.CLUSTERING else Outcome.DONE
            assert daemon.run_iteration(runtime, service, NOW + timedelta(seconds=10)) is expected
    assert [r.levelno for r in caplog.records if "refused" in r.getMessage()] == []
    assert value("table_refused", table="mor") == 1
    assert _tree(mor) == before
