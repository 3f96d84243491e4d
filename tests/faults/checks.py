"""What every fault test checks: exact reads by Hudi and hudi-rs, no file left, no instant pending."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.table.instant import Action, Instant
from service.table.mdt.files_listing import list_partitions_via_mdt
from service.table.mdt.timeline import load_mdt_timeline
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.faults.matrix import Case, Recoverer, Service, TableType
from tests.support import hudi_tables as ht
from tests.support.archival import ArchivedCommits, assert_hudi_reads_our_archive_as_its_own, timeline_files
from tests.support.crash_at import run_killed_at
from tests.table.mdt.test_mdt_listing_hudi import hudi_mdt_listing, storage_listing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The archival cases' table was cleaned by these, so that their commits are Hudi's to archive.
ARCHIVE_AFTER_CLEAN = {"hoodie.cleaner.commits.retained": "1"}
# Hudi's `archive_commits` arguments for the archival cases' settings (`SERVICE_CONF`).
HUDI_ARCHIVES = "min_commits => 2, max_commits => 3, retain_commits => 1"
# Heartbeats of 0.5 s x 2 misses: the next run takes the dead attempt over 1 s after its last beat
# (each case waits for that once or twice: about two minutes of CI at 1 s).
HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "500"}
EXPIRY_S = 1.25
SERVICE_CONF: dict[Service, dict[str, str]] = {
    Service.CLUSTERING: {"hoodie.clustering.plan.strategy.sort.columns": "id"},
    Service.CLEANING: {"hoodie.cleaner.commits.retained": "1"},
    Service.COMPACTION: {"hoodie.compact.inline.max.delta.commits": "1"},
    Service.ROLLBACK: {
        "hoodie.cleaner.policy.failed.writes": "LAZY",
        "hoodie.cleaner.commits.retained": "10",
    },
    # What `prepare_archival` left gives the killed run instants to archive, and its archive's upkeep
    # (a merge of two small archive files on layout 1; on layout 2 a compaction of two layer-0 history
    # files, then the clean of the manifests beyond the one retained) happens in the same run.
    Service.ARCHIVAL: {
        **ARCHIVE_AFTER_CLEAN,
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.archive.merge.enable": "true",
        "hoodie.archive.merge.files.batch.size": "2",
        "hoodie.timeline.compaction.batch.size": "2",
        "hoodie.timeline.manifest.retained.versions": "1",
    },
}
# The actions of a service's instant, pending (a clustering is a `clustering` instant on timeline layout
# 2, a `replacecommit` on 1) and completed.
ACTIONS: dict[Service, tuple[Action, ...]] = {
    Service.CLUSTERING: (Action.CLUSTERING, Action.REPLACE_COMMIT),
    Service.CLEANING: (Action.CLEAN, Action.CLEAN),
    Service.COMPACTION: (Action.COMPACTION, Action.COMMIT),
    Service.ROLLBACK: (Action.ROLLBACK, Action.ROLLBACK),
}


def service_argv(service: Service, base: str, mode: str, extra: Sequence[str] = ()) -> list[str]:
    """The CLI command running `service` on the table at `base` with the fault tests' settings; `mode`
    is `cluster`'s and `compact`'s (`scheduleAndExecute`, `execute`, ...); `extra`: more arguments
    (storage options)."""
    settings = {**HEARTBEAT, **SERVICE_CONF[service]}
    conf = [a for k, v in settings.items() for a in ("--hoodie-conf", f"{k}={v}")]
    common = ["--base-path", base, "--timezone", "UTC", *extra, *conf]
    spark = ["--spark-master", "local[1]"]
    if service is Service.CLUSTERING:
        return ["cluster", *common, "--mode", mode, *spark]
    if service is Service.COMPACTION:
        return ["compact", *common, "--mode", mode, *spark]
    if service is Service.ARCHIVAL:
        return ["archive", *common]
    return ["clean", *common, "--force"]


def reads(spark: SparkSession, base: Path) -> dict[str, list[dict[str, Any]]]:
    """The data columns of every record, as Hudi (MDT on, MDT off) and hudi-rs read them."""
    out = {}
    for mdt in (True, False):
        reader = spark.read.format("hudi").option("hoodie.metadata.enable", str(mdt).lower())
        out[f"hudi_mdt_{mdt}"] = ht.normalise_rows(r.asDict() for r in reader.load(str(base)).collect())
    out["hudi_rs"] = ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist())
    return out


def assert_exact(spark: SparkSession, base: Path, expected: list[dict[str, Any]], when: str) -> None:
    for reader, rows in reads(spark, base).items():
        assert rows == expected, f"{when}: {reader} read {len(rows)} rows, expected {len(expected)}"


def assert_no_file_left(spark: SparkSession, base: Path) -> None:
    """Every data file on storage is one the metadata table lists, as Hudi and we read it, and back.
    (Hudi's `show_metadata_table_files` procedure reads through the same `HoodieBackedTableMetadata`
    as `hudi_mdt_listing`; the MDT tests compare it, tests/table/mdt/test_mdt_write_hudi.py.)"""
    on_disk = {p: set(files) for p, files in storage_listing(base).items()}
    assert {p: set(f) for p, f in hudi_mdt_listing(spark, base).items()} == on_disk, "Hudi's MDT"
    ours = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    assert {p: set(f) for p, f in ours.items()} == on_disk, "our MDT reader"


def assert_recovered(
    spark: SparkSession, base: Path, expected: list[dict[str, Any]], rolled_back: str | None
) -> None:
    """After the run that recovered: `rolled_back` (a failed write) is gone from the timeline, nothing
    is pending on the table or its MDT, the reads are exact and no file of a failed attempt is left."""
    assert_nothing_pending(base, rolled_back)
    assert_exact(spark, base, expected, "recovered")
    assert_no_file_left(spark, base)


def assert_nothing_pending(base: Path, rolled_back: str | None) -> None:
    """`rolled_back` (a failed write, if any) is gone from the timeline, and no instant is pending on the
    table or its metadata table."""
    if rolled_back is not None:
        timeline = HudiTable.open(str(base)).load_timeline()
        assert timeline.find(rolled_back) is None, "the failed write is still on the timeline"
    assert pending_instants(base) == ([], []), "an instant was left pending"


def service_instants(base: Path, service: Service) -> dict[str, Instant]:
    timeline = HudiTable.open(str(base)).load_timeline()
    return {i.timestamp: i for i in timeline.by_actions(ACTIONS[service])}


def pending_instants(base: Path) -> tuple[list[str], list[str]]:
    """Pending instants of the table and of its metadata table."""
    table = HudiTable.open(str(base))
    mdt = load_mdt_timeline(Storage.for_base_uri(str(base)))
    return [str(i) for i in table.load_timeline().pending()], [str(i) for i in mdt.pending()]


# ------------------------------------------------------------- the kill, and the run that recovers


def prepare_archival(base: Path, hudi_writes: Callable[[], object], table_type: TableType) -> None:
    """What an archival case starts from, so that its killed run archives and its archive's upkeep
    (merge, layer compaction) has two files to work on: the table cleaned (the earliest commit to
    retain no longer holds the window at the first commit) and archived once; then Hudi's writer
    writes (`hudi_writes`), and on merge-on-read our compaction compacts (archival keeps the delta
    commits after the latest compaction), so that there is more to archive."""
    common = ["--base-path", str(base), "--timezone", "UTC"]
    conf = lambda settings: [a for k, v in settings.items() for a in ("--hoodie-conf", f"{k}={v}")]  # noqa: E731
    assert main(["clean", *common, *conf(ARCHIVE_AFTER_CLEAN), "--force"]) == 0
    first = {**ARCHIVE_AFTER_CLEAN, "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4"}
    before = timeline_files(base)
    assert main(["archive", *common, *conf(first)]) == 0
    assert timeline_files(base) != before, "the first archival archived nothing"
    hudi_writes()
    if table_type is TableType.MOR:
        assert main(service_argv(Service.COMPACTION, str(base), "scheduleAndExecute")) == 0


def kill_archival_and_recover(
    case: Case, ours: Path, theirs: Path, tmp_path: Path, exact: Callable[[str], None], show: ArchivedCommits
) -> None:
    """An archival case on either layout: killed at the case's step, the table reads exactly
    (`exact(when)`); after the recovering run the active timeline is the one Hudi's `archive_commits`
    left on the twin `theirs`, and Hudi's `show_archived_commits` (`show`) reads every archived commit
    once, as from its own archive."""
    killed = kill_as_the_case_says(case, ours, tmp_path)
    exact(f"killed at {case.point.name}")
    recover(case, ours, killed)
    assert timeline_files(ours) == timeline_files(theirs)
    assert_hudi_reads_our_archive_as_its_own(show, theirs, ours, tmp_path)


def kill_as_the_case_says(case: Case, base: Path, logs: Path) -> float:
    """Run the case's service on the table at `base`, killed at each of its kill point's kills in turn
    (a later run executes the pending plan the first left); returns when the last kill happened
    (`time.monotonic`)."""
    for n, kill in enumerate(case.point.kills):
        if n:
            time.sleep(EXPIRY_S)  # the dead attempt is the next run's to roll back
        mode = "execute" if n else "scheduleAndExecute"  # a later run executes the pending plan
        run_killed_at(kill.pattern, service_argv(case.service, str(base), mode), logs / f"killed-{n}.log",
                      mode=kill.mode, timeout=600)  # fmt: skip
    return time.monotonic()


def recover(case: Case, base: Path, killed: float) -> None:
    """Once the dead attempt's heartbeat expired (`killed`: when it died), the case's recoverer runs:
    the CLI, or one tick of a daemon serving only the case's service."""
    time.sleep(max(0.0, EXPIRY_S - (time.monotonic() - killed)))
    if case.recoverer is Recoverer.CLI:
        assert main(service_argv(case.service, str(base), "execute")) == 0
    else:
        _recover_with_daemon(case, base)


DAEMON_SERVICE = {
    Service.CLUSTERING: TableService.CLUSTERING,
    Service.CLEANING: TableService.CLEANING,
    Service.COMPACTION: TableService.COMPACTION,
    Service.ROLLBACK: TableService.CLEANING,
    Service.ARCHIVAL: TableService.ARCHIVAL,
}


def _recover_with_daemon(case: Case, base: Path) -> None:
    conf = {**HEARTBEAT, **SERVICE_CONF[case.service]}
    service = DAEMON_SERVICE[case.service]
    enabled = {s: str(s is service).lower() for s in TableService}
    defaults = "\n".join(f"  {k}: '{v}'" for k, v in conf.items())
    text = f"""
daemon:
  lock: {{provider: in-process}}
  metrics: {{host: 127.0.0.1, port: 0}}
  spark: {{master: "local[1]"}}
  deletion: {{max_delete_fraction: 1.0}}
defaults:
{defaults}
tables:
  - name: t
    base_path: '{base}'
    timezone: UTC
    clustering: {{enabled: {enabled[TableService.CLUSTERING]}}}
    cleaning: {{enabled: {enabled[TableService.CLEANING]}}}
    compaction: {{enabled: {enabled[TableService.COMPACTION]}}}
    archival: {{enabled: {enabled[TableService.ARCHIVAL]}}}
"""
    daemon = Daemon(parse_daemon_config(text), registry=CollectorRegistry(), serve_http=False)
    outcome = daemon.run_iteration(daemon.runtimes["t"], service, datetime.now(UTC))
    assert outcome is Outcome.DONE, f"the daemon's {service} tick: {outcome}"
