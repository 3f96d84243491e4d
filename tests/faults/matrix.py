"""The fault matrix: every step boundary of every table service at which a process is SIGKILLed.

Pure data (no Spark, no storage): `tests/faults/test_fault_matrix.py` runs the cases. A kill point is
one or more successive runs, each killed (`tests/support.crash_at` modes) where its pattern matches a
table-relative path; `mid_rollback` kills a first attempt after some of its data files, then the run
that rolls that attempt back, after its first delete. Paths are per timeline layout
(`tests/faults/paths.py`): layout 1 for table version 6 (`tests/faults/test_fault_matrix.py`, tables of
Hudi 0.15), layout 2 for versions 8 and 9 (`tests/interop/test_hudi1_fault_matrix.py`, tables of Hudi
1.0.2, 1.1.1 and 1.2.0), where a pending clustering is a `clustering` instant and completed files carry
their completion time.

CI runs a covering subset (`Case.in_ci`): every kill point of every service once per table version,
each service on both table types (where it applies) and recovered by both the CLI and the daemon; the
rest are long variants (`HTS_LONG_TESTS=1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tests.faults.paths import BASE_FILE, DATA_FILE, completed_file, instant_file, timeline_folder


class Service(StrEnum):
    CLUSTERING = "clustering"
    CLEANING = "cleaning"
    COMPACTION = "compaction"
    ROLLBACK = "rollback"  # a Hudi writer's failed write, rolled back by our (LAZY) clean
    ARCHIVAL = "archival"  # no instant of its own: its steps are the archive's files and the deletes


class TableType(StrEnum):
    COW = "COPY_ON_WRITE"
    MOR = "MERGE_ON_READ"


class Recoverer(StrEnum):
    CLI = "cli"
    DAEMON = "daemon"


@dataclass(frozen=True)
class Kill:
    mode: str  # `crash_at.MODES`
    pattern: str


@dataclass(frozen=True)
class KillPoint:
    name: str
    kills: tuple[Kill, ...]


def _points(
    pending: str, completed: str, middle: str, layout: int, mdt: str = "deltacommit"
) -> tuple[KillPoint, ...]:
    """The step boundaries of a service whose instant moves `<T>.<pending>.requested` ->
    `<T>.<pending>.inflight` -> (`middle`: its data files written, or its deletes) -> the metadata
    table's instant of action `mdt` completed -> `<T>.<completed>` (on layout 2
    `<T>_<completion time>.<completed>`)."""
    wrote = Kill("on-appear", BASE_FILE)
    deleted = Kill("on-delete", DATA_FILE)
    done = completed_file(completed, layout)
    points = [
        KillPoint("plan_written", (Kill("after", instant_file(f"{pending}\\.requested", layout)),)),
        KillPoint("inflight_written", (Kill("after", instant_file(f"{pending}\\.inflight", layout)),)),
        KillPoint(middle, (wrote if middle == "data_files" else deleted,)),
        KillPoint("after_mdt", (Kill("after", completed_file(mdt, layout, mdt=True)),)),
        KillPoint("before_completed", (Kill("before", done),)),
        KillPoint("after_completed", (Kill("after", done),)),
    ]
    if middle == "data_files":
        # The dead attempt's files are the next run's to roll back: kill that run mid-rollback.
        points.append(KillPoint("mid_rollback", (wrote, deleted)))
    return tuple(points)


def _archival_points(layout: int) -> tuple[KillPoint, ...]:
    """The steps of `archive` (`service.archival.archiver`): the archive written, then the archived
    instants' requested and inflight files deleted, then their completed files; then the archive's own
    upkeep, which the case's settings make happen in the killed run (`tests/faults/checks.py`). Layout
    1 writes one `archived/` log file, then merges the small ones (a plan, the merged file, the merged
    files deleted); layout 2 writes a history data file, its manifest and `_version_`, then compacts
    the history's layer 0 into layer 1 and deletes the manifests (and data files) no longer kept."""
    timeline = timeline_folder(layout)
    pending = Kill("on-delete", rf"^{timeline}\d{{17}}\.([a-z]+\.)?(requested|inflight)$")
    # (On layout 1 a commit's inflight file is `<instant>.inflight`: completed actions are named.)
    completed = Kill("on-delete", completed_file(r"(commit|deltacommit|replacecommit|clean)", layout))
    if layout == 1:
        archive_file = r"^\.hoodie/archived/\.commits_\.archive\.\d+_1-0-1$"
        return (
            KillPoint("archive_written", (Kill("after", archive_file),)),
            KillPoint("mid_pending_deletes", (pending,)),
            KillPoint("mid_completed_deletes", (completed,)),
            KillPoint("merge_planned", (Kill("after", r"^\.hoodie/archived/mergeArchivePlan$"),)),
            KillPoint("mid_merge_deletes", (Kill("on-delete", archive_file),)),
        )
    history = rf"^{timeline}history/"
    return (
        KillPoint("data_file_written", (Kill("before", rf"{history}manifest_\d+$"),)),
        KillPoint("manifest_written", (Kill("after", rf"{history}manifest_\d+$"),)),
        KillPoint("version_written", (Kill("after", rf"{history}_version_$"),)),
        KillPoint("mid_pending_deletes", (pending,)),
        KillPoint("mid_completed_deletes", (completed,)),
        KillPoint("layer_compacted", (Kill("after", rf"{history}\d{{17}}_\d{{17}}_1\.parquet$"),)),
        KillPoint("mid_history_clean", (Kill("on-delete", rf"{history}manifest_\d+$"),)),
    )


def kill_points(layout: int) -> dict[Service, tuple[KillPoint, ...]]:
    """Every service's kill points on a table of timeline layout `layout`."""
    clustering = "replacecommit" if layout == 1 else "clustering"  # its pending action
    return {
        Service.CLUSTERING: _points(clustering, "replacecommit", "data_files", layout),
        Service.CLEANING: _points("clean", "clean", "mid_deletes", layout),
        Service.COMPACTION: _points("compaction", "commit", "data_files", layout),
        # On layout 2 the metadata table rolls back its own deltacommit of the failed write (Hudi 1.x's
        # `HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata)`), where version 6 records the
        # deleted files in a deltacommit.
        Service.ROLLBACK: _points(
            "rollback", "rollback", "mid_rollback", layout, "deltacommit" if layout == 1 else "rollback"
        ),
        Service.ARCHIVAL: _archival_points(layout),
    }


LAYOUTS = (1, 2)
KILL_POINTS_OF_LAYOUT = {layout: kill_points(layout) for layout in LAYOUTS}
KILL_POINTS = KILL_POINTS_OF_LAYOUT[1]

TABLE_TYPES: dict[Service, tuple[TableType, ...]] = {
    Service.CLUSTERING: (TableType.COW, TableType.MOR),
    Service.CLEANING: (TableType.COW, TableType.MOR),
    Service.COMPACTION: (TableType.MOR,),
    Service.ROLLBACK: (TableType.COW, TableType.MOR),
    Service.ARCHIVAL: (TableType.COW, TableType.MOR),
}


@dataclass(frozen=True)
class Case:
    service: Service
    table_type: TableType
    point: KillPoint
    recoverer: Recoverer
    layout: int = 1

    @property
    def id(self) -> str:
        return f"{self.service}-{self.table_type.name}-{self.point.name}-{self.recoverer}"

    @property
    def in_ci(self) -> bool:
        """The covering subset: kill point i of a service runs on table type i mod n (n its table
        types) and is recovered by the CLI or the daemon by turns of n."""
        types = TABLE_TYPES[self.service]
        i = KILL_POINTS_OF_LAYOUT[self.layout][self.service].index(self.point)
        recoverer = (Recoverer.CLI, Recoverer.DAEMON)[(i // len(types)) % 2]
        return self.table_type is types[i % len(types)] and self.recoverer is recoverer


def all_cases(layout: int = 1) -> list[Case]:
    return [
        Case(service, table_type, point, recoverer, layout)
        for service, points in KILL_POINTS_OF_LAYOUT[layout].items()
        for point in points
        for table_type in TABLE_TYPES[service]
        for recoverer in Recoverer
    ]


def matrix_size(layout: int = 1) -> str:
    """The matrix of a timeline layout as the test output and `docs/operations.md` report it."""
    cases = all_cases(layout)
    points = KILL_POINTS_OF_LAYOUT[layout]
    cells = sum(len(p) * len(TABLE_TYPES[s]) for s, p in points.items())
    ci = sum(c.in_ci for c in cases)
    per_service = ", ".join(f"{s} {len(p)} x {len(TABLE_TYPES[s])}" for s, p in points.items())
    return (
        f"fault matrix, timeline layout {layout}: {cells} (kill point, service, table type) cells "
        f"({per_service}), each recovered by the CLI and by the daemon: {len(cases)} cases, {ci} in CI"
    )
