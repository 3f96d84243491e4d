"""The fault matrix on tables of versions 8 and 9: SIGKILL at every step boundary of every table
service, then recovery, as `tests/faults/test_fault_matrix.py` does on version 6.

Tables written by real Hudi 1.0.2 (version 8), 1.1.1 and 1.2.0 (version 9), copy-on-write and
merge-on-read, with the metadata table and its record index, built once per Hudi version; each case
works on a copy. The kill points are those of timeline layout 2 (`tests/faults/matrix.py`): a pending
clustering is a `clustering` instant, completed files carry their completion time. Then:

1. killed between two steps, nothing of the service is half visible: Hudi's snapshot with the metadata
   table on and off, and hudi-rs, read exactly the table's records (nothing lost or duplicated);
2. once the dead attempt's heartbeat expired, the next run (the CLI, or one daemon tick) recovers:
   the killed instant completes (the failed write is rolled back), no instant is left pending on the
   table or its metadata table, and the reads are exact again;
3. no file of a failed attempt is left: Hudi's `validate_metadata_table_files` finds every file on
   storage listed by the metadata table, with its size;
4. Hudi's writer goes on (an upsert), after which the reads are exact once more.

CI runs the covering subset (`Case.in_ci`) with Hudi 1.0.2 and with 1.1.1: every kill point of every
service once per table version; the rest, and every 1.2.0 case, are long variants.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table.table import HudiTable
from tests.faults.checks import (
    HUDI_ARCHIVES,
    assert_nothing_pending,
    kill_archival_and_recover,
    kill_as_the_case_says,
    prepare_archival,
    recover,
    service_instants,
)
from tests.faults.matrix import Case, Service, TableType, all_cases
from tests.support.archival import (
    LazyHistories,
    archived_commits_1x,
    timeline_files,
)
from tests.support.hudi1_histories import (
    RLI_OPTIONS,
    SCHEMA,
    check_mdt_files_agree,
    rows,
    snapshot_reads,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

WRITER_GOES_ON_BATCH = 40
Row = tuple[Any, ...]


@dataclass
class FaultTable1x:
    """A table Hudi 1.x wrote, and the latest batch of every record key (the model its reads must equal)."""

    base: Path
    name: str
    table_type: TableType
    latest: dict[int, int] = field(default_factory=dict)
    failed_instant: str | None = None

    def options(self, operation: str) -> dict[str, str]:
        return {
            **writer_options(self.name, self.table_type.value, True),
            **RLI_OPTIONS,
            # The metadata table compacts within the history: archival stops at its latest compaction.
            "hoodie.metadata.compact.max.delta.commits": "3",
            "hoodie.datasource.write.operation": operation,
        }

    def write(self, jvm: HudiJvm, ids: Sequence[int], batch: int, operation: str = "upsert") -> None:
        jvm.write(self.base, rows(ids, batch), SCHEMA, self.options(operation))
        self.latest.update(dict.fromkeys(ids, batch))

    def expected(self) -> list[Row]:
        return sorted((i, r["region"], b, r["value"]) for i, b in self.latest.items() for r in rows([i], b))

    def copy_to(self, target: Path) -> FaultTable1x:
        shutil.copytree(self.base, target)
        return FaultTable1x(target, self.name, self.table_type, dict(self.latest), self.failed_instant)


def _build(jvm: HudiJvm, root: Path, table_type: TableType) -> tuple[FaultTable1x, FaultTable1x]:
    """A history for the services, and a copy of it with a failed write of Hudi's on top."""
    name = f"faults{jvm.table_version}_{table_type.name.lower()}"
    table = FaultTable1x(root / name, name, table_type)
    table.write(jvm, range(0, 40), 0, "insert")
    table.write(jvm, range(40, 80), 1, "insert")
    table.write(jvm, range(0, 30), 2)
    if table_type is TableType.MOR:
        # Hudi compacts: the slices before it are the clean's to delete, the logs after it compaction's.
        jvm.sql(f"create table {name} using hudi location '{table.base}'")
        every = "hoodie.compact.inline.max.delta.commits=1"  # Hudi's default waits for 5 deltacommits
        jvm.sql(f"call run_compaction(op => 'scheduleAndExecute', table => '{name}', options => '{every}')")
    table.write(jvm, range(80, 100), 4, "insert")
    table.write(jvm, range(0, 100, 4), 5)  # new versions (copy-on-write), logs (merge-on-read)
    if table_type is TableType.MOR:
        compacted = [p for p in (table.base / ".hoodie" / "timeline").iterdir() if p.name.endswith(".commit")]
        assert compacted, "Hudi did not compact: the clean and the compaction would have nothing to do"
    failed = table.copy_to(root / f"{name}_failed")
    # Updates (new versions or log blocks) and inserts (new file groups), killed after the metadata
    # table's deltacommit and before the write's completed file (which is removed): its rollback is the
    # metadata table's rollback of that deltacommit too.
    timeline = failed.base / ".hoodie" / "timeline"
    before = set(timeline.iterdir())
    jvm.write(failed.base, rows([*range(10, 40, 3), *range(5000, 5012)], 9), SCHEMA, failed.options("upsert"))
    [completed] = [p for p in set(timeline.iterdir()) - before if re.fullmatch(r"\d{17}_\d{17}\.\w+", p.name)]
    completed.unlink()
    (timeline / f".{completed.name}.crc").unlink(missing_ok=True)
    failed.failed_instant = completed.name[:17]
    # What every case's copy starts from: Hudi's readers read the model (checked once per table).
    for built in (table, failed):
        assert_exact(jvm, built.base, built.expected(), f"{built.base.name} as built")
    return table, failed


@pytest.fixture(scope="module")
def fault_tables_1x(
    hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory
) -> Mapping[TableType, tuple[FaultTable1x, FaultTable1x]]:
    root = tmp_path_factory.mktemp(f"faults-{hudi1.version}")
    return {table_type: _build(hudi1, root, table_type) for table_type in TableType}


def assert_exact(jvm: HudiJvm, base: Path, expected: list[Row], when: str) -> None:
    assert expected, "a table of no records proves nothing"
    for reader, got in snapshot_reads(jvm, base).items():
        assert got == expected, f"{when}: {reader} read {len(got)} rows, expected {len(expected)}"


def assert_recovered(jvm: HudiJvm, base: Path, expected: list[Row], rolled_back: str | None) -> None:
    """After the run that recovered: `rolled_back` (a failed write) is gone from the timeline, nothing
    is pending on the table or its metadata table, the reads are exact and no file of a failed attempt
    is left."""
    assert_nothing_pending(base, rolled_back)
    assert_exact(jvm, base, expected, "recovered")
    check_mdt_files_agree(jvm, base)


CASES = [
    pytest.param(case, id=case.id, marks=() if case.in_ci else pytest.mark.long)
    for case in all_cases(layout=2)
    if case.service is not Service.ARCHIVAL
]
ARCHIVAL_CASES = [
    pytest.param(case, id=case.id, marks=() if case.in_ci else pytest.mark.long)
    for case in all_cases(layout=2)
    if case.service is Service.ARCHIVAL
]


@pytest.mark.parametrize("case", CASES)
def test_a_service_killed_at_any_step_of_a_version_8_or_9_table_is_recovered_and_loses_nothing(
    spark: SparkSession,  # the session our recovering run's clustering and compaction use, in this process
    hudi1: HudiJvm,
    fault_tables_1x: Mapping[TableType, tuple[FaultTable1x, FaultTable1x]],
    case: Case,
    tmp_path: Path,
) -> None:
    good, failed = fault_tables_1x[case.table_type]
    table = (failed if case.service is Service.ROLLBACK else good).copy_to(tmp_path / "t")
    base = table.base
    expected = table.expected()
    before = service_instants(base, case.service)
    pending = [i.timestamp for i in HudiTable.open(str(base)).load_timeline().pending()]
    assert pending == ([table.failed_instant] if table.failed_instant else []), "the copy's pending instants"

    killed = kill_as_the_case_says(case, base, tmp_path)
    [target] = sorted(set(service_instants(base, case.service)) - set(before))
    assert_exact(hudi1, base, expected, f"killed at {case.point.name}")

    recover(case, base, killed)
    after = service_instants(base, case.service)
    assert after[target].is_completed, f"{target} was not completed by the recovery: {after[target]}"
    assert_recovered(hudi1, base, expected, table.failed_instant)

    table.write(hudi1, [*range(0, 200, 9)], WRITER_GOES_ON_BATCH)
    assert_exact(hudi1, base, table.expected(), "Hudi wrote on")


@dataclass(frozen=True)
class ArchivalStart1x:
    """A fault table prepared for archival (`prepare_archival`), and a twin of it that Hudi's
    `archive_commits` archived. Read-only: cases copy `ours`."""

    ours: FaultTable1x
    theirs: Path


@pytest.fixture(scope="module")
def archival_starts_1x(
    spark: SparkSession,  # the session our compaction (`prepare_archival`) uses, in this process
    hudi1: HudiJvm,
    fault_tables_1x: Mapping[TableType, tuple[FaultTable1x, FaultTable1x]],
    tmp_path_factory: pytest.TempPathFactory,
) -> LazyHistories[ArchivalStart1x]:
    del spark  # started, so that our compaction joins it rather than starting one of its own

    def build(table_type: str) -> ArchivalStart1x:
        root = tmp_path_factory.mktemp(f"archival-{hudi1.version}-{table_type}")
        good, _failed = fault_tables_1x[TableType(table_type)]
        table = good.copy_to(root / "ours")
        prepare_archival(
            table.base, lambda: table.write(hudi1, [*range(0, 100, 5)], 8), TableType(table_type)
        )
        theirs = root / "hudi"
        shutil.copytree(table.base, theirs, symlinks=True)
        hudi1.sql(f"call archive_commits(path => '{theirs}', {HUDI_ARCHIVES})")
        assert timeline_files(theirs) != timeline_files(table.base), "Hudi archived nothing"
        return ArchivalStart1x(table, theirs)

    return LazyHistories(build)


@pytest.mark.parametrize("case", ARCHIVAL_CASES)
def test_archival_killed_at_any_step_of_a_version_8_or_9_table_is_finished_as_hudi_archives(
    hudi1: HudiJvm, archival_starts_1x: LazyHistories[ArchivalStart1x], case: Case, tmp_path: Path
) -> None:
    """Archival has no instant of its own: killed at one of its steps (the LSM history's data file,
    manifest and `_version_`, the deletes, the layers' compaction and clean), the table reads exactly;
    the next run (the CLI or a daemon tick) leaves the active timeline Hudi's `archive_commits` leaves
    on a twin copy, and Hudi's `show_archived_commits` reads every archived commit once, as from its
    own history; then Hudi's writer goes on."""
    start = archival_starts_1x[case.table_type]
    table = start.ours.copy_to(tmp_path / "ours")
    ours, theirs, expected = table.base, start.theirs, table.expected()

    exact = lambda when: assert_exact(hudi1, ours, expected, when)  # noqa: E731
    kill_archival_and_recover(case, ours, theirs, tmp_path, exact, lambda t: archived_commits_1x(hudi1, t))
    assert_recovered(hudi1, ours, expected, None)

    table.write(hudi1, [*range(0, 200, 9)], WRITER_GOES_ON_BATCH)
    assert_exact(hudi1, ours, table.expected(), "Hudi wrote on")
