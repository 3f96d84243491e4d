"""Merge-on-read tables written by real Hudi: `status`, `clean`, `cluster` and the daemon serve them.

Clustering reads each input slice merged (base + logs) and its commit refuses a writer's log append
to an input file group (`tests/clustering/test_mor_clustering_hudi.py` proves both against Hudi);
here the commands and the daemon run it end to end and Hudi's snapshot is unchanged. Cleaning
deletes whole file slices, base and logs, as Hudi's cleaner does
(`tests/clean/test_hudi_differential_mor.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.table.properties import PROPERTIES_FILE as PROPERTIES
from service.table.properties import TableConfig
from tests.clean.helpers import fid
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.histories import HudiHistory
from tests.support.paths import REPO_ROOT

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NOW = datetime(2024, 1, 2, tzinfo=UTC)


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


def _snapshot(spark: Any, base: Path) -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base))


def test_cluster_serves_merge_on_read(history_merge_on_read: HudiHistory, spark: Any) -> None:
    """`cluster --mode scheduleAndExecute` on a table whose file groups have log files: a
    replacecommit over every file group, and Hudi and hudi-rs read the same records. The command runs
    in its own process (it stops the Spark session it uses)."""
    base = history_merge_on_read.base_path
    before = _snapshot(spark, base)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    argv = [sys.executable, "-m", "service.cli", "cluster", "--base-path", str(base), "--timezone", "UTC",
            "--mode", "scheduleAndExecute", "--spark-master", "local[1]", "--json"]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    report = json.loads(done.stdout)
    assert report["result"]["committed"], report
    slices = [s for g in report["plan"]["groups"] for s in g["slices"]]
    assert any(s["log_files"] for s in slices) and all(s["bytes"] for s in slices)
    assert len(ht.instants_with_action(base, "replacecommit")) == 1
    assert _snapshot(spark, base) == before
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == before


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
    hoodie:
      hoodie.clustering.async.max.commits: 1
  - name: cow
    base_path: {cow}
"""


def test_daemon_clusters_and_cleans_merge_on_read(
    history_merge_on_read: HudiHistory, spark: Any, tmp_path: Path
) -> None:
    """The daemon serves a merge-on-read table for every service (nothing refused): its clustering
    commits a replacecommit over the log-file slices, and Hudi reads the same records after."""
    mor = history_merge_on_read.base_path
    cow = FixtureTable(tmp_path / "cow", name="cow")
    for i in range(1, 4):  # three versions of one file group: with one commit retained, one is cleaned
        cow.commit(ts(i), [FileSpec("a", fid(1))])
    registry = CollectorRegistry()
    config = parse_daemon_config(_daemon_config(mor, cow.base))
    daemon = Daemon(config, registry=registry, clock=lambda: NOW, serve_http=False)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, labels)

    before = _snapshot(spark, mor)
    for service in TableService:
        assert daemon.run_iteration(daemon.runtimes["mor"], service, NOW) is Outcome.DONE
        cow_outcome = Outcome.NOT_APPLICABLE if service is TableService.COMPACTION else Outcome.DONE
        assert daemon.run_iteration(daemon.runtimes["cow"], service, NOW) is cow_outcome
    runtime = daemon.runtimes["mor"]
    assert runtime.refused_services == set()
    assert not runtime.refused and not runtime.quarantined and not runtime.consecutive_failures
    refused = [
        s for m in registry.collect() if m.name == "hudi_table_service_table_refused" for s in m.samples
    ]
    assert refused == []
    failures = [s for m in registry.collect() if m.name == "hudi_table_service_failures" for s in m.samples]
    assert failures == []
    assert value("last_success_timestamp_seconds", table="mor", service="clustering") is not None
    assert value("last_success_timestamp_seconds", table="mor", service="cleaning") is not None
    assert value("deleted_files_total", table="cow") == 1  # the copy-on-write table was served too
    assert len(ht.instants_with_action(mor, "replacecommit")) == 1
    assert _snapshot(spark, mor) == before


def test_daemon_refuses_clustering_of_a_merge_it_does_not_reproduce(tmp_path: Path) -> None:
    """A merge-on-read table with a payload class the merged read does not reproduce: the daemon
    refuses its clustering (a refusal, not a failure) and keeps cleaning it."""
    mor = FixtureTable(tmp_path / "mor", name="mor", table_type="MERGE_ON_READ")
    for i in range(1, 4):
        mor.commit(ts(i), [FileSpec("a", fid(1))])
    raw = {**TableConfig.from_text((mor.base / PROPERTIES).read_text("latin-1"), "mor").raw}
    raw["hoodie.compaction.payload.class"] = "com.example.MyPayload"
    (mor.base / PROPERTIES).write_bytes(TableConfig(raw).to_text().encode("latin-1"))
    cow = FixtureTable(tmp_path / "cow", name="cow")
    cow.commit(ts(1), [FileSpec("a", fid(1))])
    registry = CollectorRegistry()
    daemon = Daemon(parse_daemon_config(_daemon_config(mor.base, cow.base)), registry=registry,
                    clock=lambda: NOW, serve_http=False)  # fmt: skip
    runtime = daemon.runtimes["mor"]
    assert daemon.run_iteration(runtime, TableService.CLUSTERING, NOW) is Outcome.REFUSED
    assert daemon.run_iteration(runtime, TableService.CLEANING, NOW) is Outcome.DONE
    assert runtime.refused_services == {TableService.CLUSTERING}
    assert not runtime.quarantined and not runtime.consecutive_failures
    refused = {"table": "mor", "service": "clustering", "reason": "merge"}
    assert registry.get_sample_value("hudi_table_service_table_refused", refused) == 1
    assert registry.get_sample_value("hudi_table_service_deleted_files_total", {"table": "mor"}) == 1
