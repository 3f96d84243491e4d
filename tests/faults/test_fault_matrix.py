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

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from service.cli import main
from service.table.archived_log import MERGE_PLAN_FILE
from service.table.table import HudiTable
from tests.faults.checks import (
    HUDI_ARCHIVES,
    SERVICE_CONF,
    assert_exact,
    assert_recovered,
    kill_archival_and_recover,
    kill_as_the_case_says,
    prepare_archival,
    recover,
    service_argv,
    service_instants,
)
from tests.faults.matrix import Case, Service, TableType, all_cases
from tests.faults.tables import FaultTables
from tests.support import hudi_tables as ht
from tests.support.archival import (
    LazyHistories,
    archived_commits,
    timeline_files,
)
from tests.support.histories import HudiHistory
from tests.table.mdt.test_mdt_listing_hudi import hudi_mdt_listing, storage_listing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

WRITER_GOES_ON_BATCH = 40
CASES = [
    pytest.param(case, id=case.id, marks=() if case.in_ci else pytest.mark.long)
    for case in all_cases()
    if case.service is not Service.ARCHIVAL
]
ARCHIVAL_CASES = [
    pytest.param(case, id=case.id, marks=() if case.in_ci else pytest.mark.long)
    for case in all_cases()
    if case.service is Service.ARCHIVAL
]


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

    killed = kill_as_the_case_says(case, base, tmp_path)
    [target] = sorted(set(service_instants(base, case.service)) - set(before))
    assert_exact(spark, base, expected, f"killed at {case.point.name}")

    recover(case, base, killed)
    after = service_instants(base, case.service)
    assert after[target].is_completed, f"{target} was not completed by the recovery: {after[target]}"
    assert_recovered(spark, base, expected, rolled_back)

    ids = [*range(0, 200, 9)]
    history.write(spark, ht.generate(spark, ids, batch=WRITER_GOES_ON_BATCH), "upsert")
    latest = {**history.latest_batch, **dict.fromkeys(ids, WRITER_GOES_ON_BATCH)}
    assert_exact(spark, base, [ht.expected_row(i, b) for i, b in sorted(latest.items())], "Hudi wrote on")


@dataclass(frozen=True)
class ArchivalStart:
    """A fault table prepared for archival (`prepare_archival`), the latest batch of each of its keys,
    and a twin of it that Hudi's `archive_commits` archived. Read-only: cases copy `ours`."""

    ours: HudiHistory
    latest: Mapping[int, int]
    theirs: Path


@pytest.fixture(scope="module")
def archival_starts(
    spark: SparkSession, fault_tables: FaultTables, tmp_path_factory: pytest.TempPathFactory
) -> LazyHistories[ArchivalStart]:
    def build(table_type: str) -> ArchivalStart:
        root = tmp_path_factory.mktemp(f"archival-{table_type}")
        history = fault_tables.get(TableType(table_type)).base.copy_to(root / "ours")
        ids = [*range(0, 120, 5)]
        upsert = lambda: history.write(spark, ht.generate(spark, ids, batch=8), "upsert")  # noqa: E731
        prepare_archival(history.base_path, upsert, TableType(table_type))
        theirs = root / "hudi"
        shutil.copytree(history.base_path, theirs, symlinks=True)
        with ht.registered_table(spark, theirs) as name:
            spark.sql(f"CALL archive_commits(table => '{name}', {HUDI_ARCHIVES})").collect()
        assert timeline_files(theirs) != timeline_files(history.base_path), "Hudi archived nothing"
        return ArchivalStart(history, {**history.latest_batch, **dict.fromkeys(ids, 8)}, theirs)

    return LazyHistories(build)


@pytest.mark.parametrize("case", ARCHIVAL_CASES)
def test_archival_killed_at_any_step_is_finished_as_hudi_archives_and_loses_nothing(
    spark: SparkSession, archival_starts: LazyHistories[ArchivalStart], case: Case, tmp_path: Path
) -> None:
    """Archival has no instant of its own: killed at one of its steps, the table reads exactly; the
    next run (the CLI or a daemon tick) leaves the active timeline Hudi's `archive_commits` leaves on a
    twin copy, and Hudi's `show_archived_commits` reads every archived commit once, as from its own
    archive; then Hudi's writer goes on."""
    start = archival_starts[case.table_type]
    history = start.ours.copy_to(tmp_path / "ours")
    ours, theirs, latest = history.base_path, start.theirs, dict(start.latest)
    expected = [ht.expected_row(i, b) for i, b in sorted(latest.items())]

    exact = lambda when: assert_exact(spark, ours, expected, when)  # noqa: E731
    kill_archival_and_recover(case, ours, theirs, tmp_path, exact, lambda t: archived_commits(spark, t))
    assert not (ours / ".hoodie" / "archived" / MERGE_PLAN_FILE).exists(), "a merge was left unsettled"
    assert_recovered(spark, ours, expected, None)

    ids = [*range(0, 200, 9)]
    history.write(spark, ht.generate(spark, ids, batch=WRITER_GOES_ON_BATCH), "upsert")
    latest.update(dict.fromkeys(ids, WRITER_GOES_ON_BATCH))
    assert_exact(spark, ours, [ht.expected_row(i, b) for i, b in sorted(latest.items())], "Hudi wrote on")


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
