"""The daemon clusters a table written by Hudi's Spark writer once the async max commits are reached."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.daemon import history as run_history
from service.executor import SparkExecutor
from service.table.timeline import parse_instant_time
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def test_daemon_schedules_and_executes_clustering_at_threshold(
    history_many_commits: HudiHistory, spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    history = history_many_commits
    base = history.base_path
    assert len(ht.completed_instants(base)) == 6
    config = parse_daemon_config(
        f"""
daemon:
  poll_interval_seconds: 0.2
  shutdown_grace_seconds: 60
  metrics: {{port: 0}}
defaults:
  hoodie.clustering.async.max.commits: 7
tables:
  - name: {history.table_name}
    base_path: {base}
    timezone: UTC  # Hudi wrote a LOCAL timeline in the JVM's zone, UTC here (as tests/clustering assume)
    cleaning: {{enabled: false}}
"""
    )
    registry = CollectorRegistry()
    daemon = Daemon(config, registry=registry, executor=SparkExecutor(session=spark))

    def value(name: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, {"table": history.table_name})

    daemon.start()
    try:
        # Six commits: below the threshold, the daemon only reports.
        wait_until(lambda: value("commits_since_last_clustering") == 6, 30)
        assert ht.instants_with_action(base, "replacecommit") == []
        assert not [n for n in ht.timeline_files(base) if "replacecommit" in n]

        latest = dict(history.latest_batch)
        ids = list(range(0, 60, 4))
        history.write(spark, ht.generate(spark, ids, 6), "upsert")
        latest.update(dict.fromkeys(ids, 6))

        wait_until(lambda: len(ht.instants_with_action(base, "replacecommit")) == 1, 240)
        wait_until(lambda: value("commits_since_last_clustering") == 0, 30)
    finally:
        assert daemon.stop(grace_seconds=60)

    assert (value("rewritten_files_total") or 0) > 0 and (value("rewritten_bytes_total") or 0) > 0
    assert value("pending_clustering_plans") == 0
    rows = ht.normalise_rows(ht.read_snapshot(spark, base))
    assert rows == [ht.expected_row(i, b) for i, b in sorted(latest.items())]
    # Hudi's `replacecommit.totalRecordsWritten` and `replacecommit.commitTime` of that clustering.
    [clustering] = ht.instants_with_action(base, "replacecommit")
    metadata = json.loads((Path(base) / ".hoodie" / f"{clustering}.replacecommit").read_text())
    records = sum(s["numWrites"] for stats in metadata["partitionToWriteStats"].values() for s in stats)
    assert records > 0 and value("rewritten_records_total") == records
    # The run logged one line with its outcome and benefit (the daemon's start and stop aside).
    run_lines = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO
        and r.name.startswith("service.")
        # start and stop; the table's zone, said when it was opened
        and r.name not in ("service.daemon.scheduler", "service.metrics", "service.daemon.runtime")
    ]
    assert len(run_lines) == 1, run_lines
    assert run_lines[0].startswith(f"table {history.table_name}: clustering {clustering} committed: ")
    assert f", {records} records, in " in run_lines[0] and "mean file " in run_lines[0]
    completed_at = parse_instant_time(clustering, ZoneInfo("UTC")).timestamp()
    assert registry.get_sample_value(
        "hudi_table_service_last_completed_instant_timestamp_seconds",
        {"table": history.table_name, "service": "clustering"},
    ) == completed_at  # fmt: skip
    # The run history: the live record of that clustering, measured from its plan and write stats,
    # and the same numbers rebuilt from the timeline of this Hudi-written, daemon-clustered table.
    recorded = daemon.history.last(history.table_name, "clustering")
    assert recorded is not None and recorded.instant == clustering and not recorded.from_timeline
    stats = [s for group in metadata["partitionToWriteStats"].values() for s in group]
    assert recorded.after is not None and recorded.before is not None
    assert (recorded.after.files, recorded.after.bytes) == (
        len(stats),
        sum(s["fileSizeInBytes"] for s in stats),
    )
    replaced = sum(len(ids) for ids in metadata["partitionToReplaceFileIds"].values())
    assert recorded.before.files == replaced and recorded.before.bytes > 0
    runtime = daemon.runtimes[history.table_name]
    table, _, zone = runtime.open()
    limit = runtime.entry.hoodie.clustering.small_file_limit_bytes
    [rebuilt] = [
        r for r in run_history.rebuild(table, history.table_name, limit, zone, 10) if r.instant == clustering
    ]
    assert (rebuilt.before, rebuilt.after, rebuilt.partitions) == (
        recorded.before, recorded.after, recorded.partitions,
    )  # fmt: skip
    assert value("small_files") is not None and value("mean_file_size_bytes")
    # The partitions touched, as observed live: every live base file there after the commit.
    view = table.load_view()
    live = [s for p in recorded.partitions for s in view.latest_file_slices(p) if s.base_file is not None]
    assert recorded.partitions_after is not None and recorded.partitions_before is not None
    assert recorded.partitions_after.files == len(live) and recorded.partitions_before.files > len(live)
    assert rebuilt.partitions_after is None  # not rebuilt: the partitions have changed since
