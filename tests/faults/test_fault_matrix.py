"""The fault matrix: SIGKILL at every step boundary of every table service, then recovery.

Tables written by real Hudi 0.15 (copy-on-write and merge-on-read, the metadata table with `files`,
`column_stats` and `bloom_filters`), built once per session; each case works on a copy. The service
runs in a child process (`tests.support.crash_at`) killed at the case's step (`tests/faults/matrix.py`),
its JVM and Spark workers with it. Then:

1. killed between two steps, nothing of the service is half visible: Hudi's snapshot with the MDT on
   and off, and hudi-rs, read exactly the table's records (nothing lost or duplicated);
2. once the dead attempt's heartbeat expired, the next run (the CLI, or one daemon tick) recovers:
   the killed instant completes (the failed write is rolled back), no instant is left pending on the
   table or its metadata table, and the reads are exact again;
3. no file of a failed attempt is left: the files Hudi's MDT reader and ours list are those on
   storage (names: Hudi 0.15's own rollback records a stub size for a failed write's log
   file, `test_our_rollback_leaves_the_mdt_as_hudis_own_rollback` pins ours to it);
4. Hudi's writer goes on (an upsert), after which the reads are exact once more.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from prometheus_client import CollectorRegistry

from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon import Daemon, Outcome, TableService
from service.table.table import HudiTable
from tests.faults.checks import (
    EXPIRY_S,
    HEARTBEAT,
    SERVICE_CONF,
    assert_exact,
    assert_recovered,
    service_argv,
    service_instants,
)
from tests.faults.matrix import Case, Recoverer, Service, TableType, all_cases
from tests.faults.tables import FaultTables
from tests.support import hudi_tables as ht
from tests.support.crash_at import run_killed_at
from tests.table.mdt.test_mdt_listing_hudi import hudi_mdt_listing, storage_listing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

DAEMON_SERVICE = {
    Service.CLUSTERING: TableService.CLUSTERING,
    Service.CLEANING: TableService.CLEANING,
    Service.COMPACTION: TableService.COMPACTION,
    Service.ROLLBACK: TableService.CLEANING,
}
WRITER_GOES_ON_BATCH = 40


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
"""
    daemon = Daemon(parse_daemon_config(text), registry=CollectorRegistry(), serve_http=False)
    outcome = daemon.run_iteration(daemon.runtimes["t"], service, datetime.now(UTC))
    assert outcome is Outcome.DONE, f"the daemon's {service} tick: {outcome}"


CASES = [pytest.param(case, id=case.id, marks=() if case.in_ci else pytest.mark.long) for case in all_cases()]


@pytest.mark.parametrize("case", CASES)
def test_a_service_killed_at_any_step_is_recovered_and_loses_nothing(
    spark: SparkSession, fault_tables: FaultTables, case: Case, tmp_path: Path
) -> None:
    source = fault_tables.get(case.table_type)
    history = (source.failed if case.service is Service.ROLLBACK else source.base).copy_to(tmp_path / "t")
    base = history.base_path
    expected = history.expected_rows()
    before = service_instants(base, case.service)
    rolled_back = source.failed_instant if case.service is Service.ROLLBACK else None
    pending = [i.timestamp for i in HudiTable.open(str(base)).load_timeline().pending()]
    assert pending == ([rolled_back] if rolled_back else []), "the copy starts with a pending instant"

    for n, kill in enumerate(case.point.kills):
        if n:
            time.sleep(EXPIRY_S)  # the dead attempt is the next run's to roll back
        mode = "execute" if n else "scheduleAndExecute"  # a later run executes the pending plan
        run_killed_at(kill.pattern, service_argv(case.service, str(base), mode), tmp_path / f"killed-{n}.log",
                      mode=kill.mode, timeout=600)  # fmt: skip
    killed = time.monotonic()
    [target] = sorted(set(service_instants(base, case.service)) - set(before))
    assert_exact(spark, base, expected, f"killed at {case.point.name}")

    time.sleep(max(0.0, EXPIRY_S - (time.monotonic() - killed)))  # the dead attempt's heartbeat expires
    if case.recoverer is Recoverer.CLI:
        assert main(service_argv(case.service, str(base), "execute")) == 0
    else:
        _recover_with_daemon(case, base)
    after = service_instants(base, case.service)
    assert after[target].is_completed, f"{target} was not completed by the recovery: {after[target]}"
    assert_recovered(spark, base, expected, rolled_back)

    ids = [*range(0, 200, 9)]
    history.write(spark, ht.generate(spark, ids, batch=WRITER_GOES_ON_BATCH), "upsert")
    latest = {**history.latest_batch, **dict.fromkeys(ids, WRITER_GOES_ON_BATCH)}
    assert_exact(spark, base, [ht.expected_row(i, b) for i, b in sorted(latest.items())], "Hudi wrote on")


def test_our_rollback_leaves_the_mdt_as_hudis_own_rollback(
    spark: SparkSession, fault_tables: FaultTables, tmp_path: Path
) -> None:
    """The matrix's merge-on-read failed write (log blocks appended to existing file groups, new file
    groups), rolled back on one copy by Hudi's LAZY `run_clean` and on another by ours: Hudi's MDT
    reader lists the same files with the same sizes on both (the failed write's log files with the
    size Hudi's rollback records for them, beside the command-block files)."""
    source = fault_tables.get(TableType.MOR)
    hudi_copy = source.failed.copy_to(tmp_path / "hudi").base_path
    our_copy = source.failed.copy_to(tmp_path / "ours").base_path
    conf = SERVICE_CONF[Service.ROLLBACK]
    with ht.registered_table(spark, hudi_copy) as name:
        options = ",".join(f"{k}={v}" for k, v in conf.items())
        call = f"CALL run_clean(table => '{name}', retain_commits => 10, options => '{options}')"
        spark.sql(call).collect()
    assert main(service_argv(Service.ROLLBACK, str(our_copy), "scheduleAndExecute")) == 0
    for copy in (hudi_copy, our_copy):
        assert HudiTable.open(str(copy)).load_timeline().find(source.failed_instant) is None, copy
    hudi_listing = hudi_mdt_listing(spark, hudi_copy)
    assert hudi_mdt_listing(spark, our_copy) == hudi_listing
    on_disk = storage_listing(our_copy)
    assert on_disk == storage_listing(hudi_copy)
    stub_sized = [n for p, fs in hudi_listing.items() for n, size in fs.items() if on_disk[p][n] != size]
    assert stub_sized, "the failed write appended to no log file: the test proves nothing"
