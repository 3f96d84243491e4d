"""The daemon compacts merge-on-read tables Hudi's Spark writer wrote: its compaction tick schedules a
plan when Hudi's trigger fires and executes it, or executes a plan Hudi scheduled; copy-on-write
tables are left alone. Hudi's snapshot read is the same before and after."""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.executor import SparkExecutor
from service.table import codecs
from service.table.codecs.commit import WriteOperationType
from service.table.table import HudiTable
from service.table.timeline import parse_instant_time
from strategies.compaction import delta_commits_since_last_compaction
from tests.clean.helpers import fid
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.mor_tables import MorHistoryCache, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

__all__ = ["mor_histories"]

COMPACT = TableService.COMPACTION


def _config(mor: Path, cow: Path, hoodie: str = "") -> str:
    return f"""
daemon:
  metrics: {{port: 0}}
  lock: {{provider: in-process}}
tables:
  - name: mor
    base_path: {mor}
    timezone: UTC  # Hudi wrote a LOCAL timeline in the JVM's zone, UTC here
    hoodie: {{{hoodie}}}
  - name: cow
    base_path: {cow}
    compaction: {{enabled: true}}
"""


def _completed_compactions(base: Path) -> list[str]:
    return sorted(p.name.split(".")[0] for p in (base / ".hoodie").glob("*.commit"))


def _commit(base: Path, instant: str) -> codecs.CommitMetadata:
    path = base / ".hoodie" / f"{instant}.commit"
    return codecs.decode(codecs.CommitMetadata, path.read_bytes(), str(path))


def _snapshot(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base))


def _cow_table(tmp_path: Path) -> FixtureTable:
    cow = FixtureTable(tmp_path / "cow", name="cow")
    for i in range(1, 4):
        cow.commit(ts(i), [FileSpec("a", fid(1))])
    return cow


def _daemon(text: str, registry: CollectorRegistry, spark: SparkSession) -> Daemon:
    return Daemon(parse_daemon_config(text), registry=registry, executor=SparkExecutor(session=spark),
                  serve_http=False)  # fmt: skip


def test_daemon_schedules_and_executes_compaction_when_hudis_trigger_fires(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    history = mor_histories.get("mor_partitioned_avro")
    mor = tmp_path / "mor"
    shutil.copytree(history.base_path, mor, symlinks=True)
    cow = _cow_table(tmp_path)
    cow_before = sorted(p.name for p in cow.base.rglob("*"))
    since = delta_commits_since_last_compaction(HudiTable.open(str(mor)).load_timeline())
    assert since is not None and since.count >= 5
    # Hudi's NUM_COMMITS trigger: due once the deltacommits since the first reach the threshold.
    hoodie = f"hoodie.compact.inline.max.delta.commits: {since.count + 1}"
    registry = CollectorRegistry()
    daemon = _daemon(_config(mor, cow.base, hoodie), registry, spark)
    now = datetime.now(UTC)
    before = _snapshot(spark, mor)

    # One deltacommit short of the trigger: nothing scheduled, nothing said above DEBUG.
    assert daemon.run_iteration(daemon.runtimes["mor"], COMPACT, now) is Outcome.DONE
    assert not list((mor / ".hoodie").glob("*.compaction.*")) and _completed_compactions(mor) == []
    assert registry.get_sample_value("hudi_table_service_pending_compactions", {"table": "mor"}) == 0
    assert daemon.run_iteration(daemon.runtimes["cow"], COMPACT, now) is Outcome.NOT_APPLICABLE

    registry = CollectorRegistry()
    daemon = _daemon(_config(mor, cow.base), registry, spark)  # Hudi's default threshold: 5
    caplog.clear()
    assert daemon.run_iteration(daemon.runtimes["mor"], COMPACT, now) is Outcome.DONE
    [instant] = _completed_compactions(mor)
    metadata = _commit(mor, instant)
    assert metadata.compacted and metadata.operation_type is WriteOperationType.COMPACT
    assert metadata.write_stats and all(
        (s.path or "").endswith(f"_{instant}.parquet") for s in metadata.write_stats
    )
    assert (mor / ".hoodie" / f"{instant}.compaction.requested").exists()
    # Hudi's snapshot reads the same rows, but for the write after the rolled-back one: before, Hudi's
    # read stopped at the rollback command block (its instant is later than the read instant; see
    # tests/log_format/test_merged_read_hudi.py); the compaction reads up to the rollback, as Java's.
    after = _snapshot(spark, mor)
    after_rollback = {int(k) for k in history.cases["after_rollback"]}
    changed = {a["id"] for a, b in zip(after, before, strict=True) if a != b}
    assert changed == after_rollback
    assert {r["name"].rsplit("-", 1)[-1] for r in after if r["id"] in after_rollback} == {"b8"}
    assert ht.normalise_rows(ht.hudi_rs_snapshot(mor).to_pylist()) == after

    # One INFO line for the run (the table's zone, said when it was opened, aside), and the
    # per-service metrics labelled compaction.
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO and r.name.startswith("service.") and r.name != "service.daemon.runtime"
    ]
    assert len(lines) == 1 and lines[0].startswith(f"table mor: compaction {instant} committed: "), lines

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value("hudi_table_service_" + name, labels)

    assert value("pending_compactions", table="mor") == 0
    assert value("run_duration_seconds_count", table="mor", service="compaction") == 1
    assert value("last_completed_instant_timestamp_seconds", table="mor", service="compaction") == (
        parse_instant_time(instant, UTC).timestamp()
    )
    assert (value("last_success_timestamp_seconds", table="mor", service="compaction") or 0) > 0
    # The run history keeps the compaction with the files it wrote.
    [run] = [r for r in daemon.history.runs("mor") if r.service == "compaction"]
    assert (run.outcome, run.instant) == ("committed", instant)
    assert run.after is not None and run.after.files == len(metadata.write_stats)

    # Right after a compaction the trigger counts no deltacommit: the next tick does nothing.
    assert daemon.run_iteration(daemon.runtimes["mor"], COMPACT, now + timedelta(seconds=1)) is Outcome.DONE
    assert _completed_compactions(mor) == [instant]
    # A copy-on-write table is never compacted, even with compaction.enabled: true.
    assert daemon.run_iteration(daemon.runtimes["cow"], COMPACT, now) is Outcome.NOT_APPLICABLE
    assert sorted(p.name for p in cow.base.rglob("*")) == cow_before
    assert value("last_success_timestamp_seconds", table="cow", service="compaction") is None


def test_daemon_executes_the_compaction_hudi_scheduled(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path
) -> None:
    """A plan Hudi scheduled (and a deltacommit appended to its new slice since) is executed first,
    whatever the trigger says."""
    history = mor_histories.get("mor_pending_compaction")
    mor = tmp_path / "mor"
    shutil.copytree(history.base_path, mor, symlinks=True)
    pending = history.failed_instant  # the compaction history's pending instant
    cow = _cow_table(tmp_path)
    registry = CollectorRegistry()
    # A trigger that never fires: only the pending plan runs.
    daemon = _daemon(_config(mor, cow.base, "hoodie.compact.inline.max.delta.commits: 1000"), registry, spark)
    before = _snapshot(spark, mor)
    assert daemon.run_iteration(daemon.runtimes["mor"], COMPACT, datetime.now(UTC)) is Outcome.DONE
    assert _completed_compactions(mor) == [pending]
    assert _commit(mor, pending).operation_type is WriteOperationType.COMPACT
    assert _snapshot(spark, mor) == before
    assert registry.get_sample_value("hudi_table_service_pending_compactions", {"table": "mor"}) == 0
