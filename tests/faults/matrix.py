"""The fault matrix: every step boundary of every table service at which a process is SIGKILLed.

Pure data (no Spark, no storage): `tests/faults/test_fault_matrix.py` runs the cases. A kill point is
one or more successive runs, each killed (`tests/support.crash_at` modes) where its pattern matches a
table-relative path; `mid_rollback` kills a first attempt after some of its data files, then the run
that rolls that attempt back, after its first delete. Paths are those of timeline layout 1 (table
version 6: `.hoodie/<instant>.<action>[.<state>]`, the metadata table's timeline under
`.hoodie/metadata/.hoodie/`).

CI runs a covering subset (`Case.in_ci`): every kill point of every service once, each service on
both table types (where it applies) and recovered by both the CLI and the daemon; the rest are long
variants (`HTS_LONG_TESTS=1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tests.faults.paths import BASE_FILE, DATA_FILE, MDT_DELTACOMMIT_COMPLETED, instant_file


class Service(StrEnum):
    CLUSTERING = "clustering"
    CLEANING = "cleaning"
    COMPACTION = "compaction"
    ROLLBACK = "rollback"  # a Hudi writer's failed write, rolled back by our (LAZY) clean


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


def _points(pending: str, completed: str, middle: str) -> tuple[KillPoint, ...]:
    """The step boundaries of a service whose instant moves `<T>.<pending>.requested` ->
    `<T>.<pending>.inflight` -> (`middle`: its data files written, or its deletes) -> the metadata
    table's deltacommit -> `<T>.<completed>`."""
    wrote = Kill("on-appear", BASE_FILE)
    deleted = Kill("on-delete", DATA_FILE)
    points = [
        KillPoint("plan_written", (Kill("after", instant_file(f"{pending}\\.requested")),)),
        KillPoint("inflight_written", (Kill("after", instant_file(f"{pending}\\.inflight")),)),
        KillPoint(middle, (wrote if middle == "data_files" else deleted,)),
        KillPoint("after_mdt", (Kill("after", MDT_DELTACOMMIT_COMPLETED),)),
        KillPoint("before_completed", (Kill("before", instant_file(completed)),)),
        KillPoint("after_completed", (Kill("after", instant_file(completed)),)),
    ]
    if middle == "data_files":
        # The dead attempt's files are the next run's to roll back: kill that run mid-rollback.
        points.append(KillPoint("mid_rollback", (wrote, deleted)))
    return tuple(points)


KILL_POINTS: dict[Service, tuple[KillPoint, ...]] = {
    Service.CLUSTERING: _points("replacecommit", "replacecommit", "data_files"),
    Service.CLEANING: _points("clean", "clean", "mid_deletes"),
    Service.COMPACTION: _points("compaction", "commit", "data_files"),
    Service.ROLLBACK: _points("rollback", "rollback", "mid_rollback"),
}

TABLE_TYPES: dict[Service, tuple[TableType, ...]] = {
    Service.CLUSTERING: (TableType.COW, TableType.MOR),
    Service.CLEANING: (TableType.COW, TableType.MOR),
    Service.COMPACTION: (TableType.MOR,),
    Service.ROLLBACK: (TableType.COW, TableType.MOR),
}


@dataclass(frozen=True)
class Case:
    service: Service
    table_type: TableType
    point: KillPoint
    recoverer: Recoverer

    @property
    def id(self) -> str:
        return f"{self.service}-{self.table_type.name}-{self.point.name}-{self.recoverer}"

    @property
    def in_ci(self) -> bool:
        """The covering subset: kill point i of a service runs on table type i mod n (n its table
        types) and is recovered by the CLI or the daemon by turns of n."""
        types = TABLE_TYPES[self.service]
        i = KILL_POINTS[self.service].index(self.point)
        recoverer = (Recoverer.CLI, Recoverer.DAEMON)[(i // len(types)) % 2]
        return self.table_type is types[i % len(types)] and self.recoverer is recoverer


def all_cases() -> list[Case]:
    return [
        Case(service, table_type, point, recoverer)
        for service, points in KILL_POINTS.items()
        for point in points
        for table_type in TABLE_TYPES[service]
        for recoverer in Recoverer
    ]


def matrix_size() -> str:
    """The matrix as the test output and `docs/operations.md` report it."""
    cases = all_cases()
    points = sum(len(p) * len(TABLE_TYPES[s]) for s, p in KILL_POINTS.items())
    ci = sum(c.in_ci for c in cases)
    per_service = ", ".join(f"{s} {len(p)} x {len(TABLE_TYPES[s])}" for s, p in KILL_POINTS.items())
    return (
        f"fault matrix: {points} (kill point, service, table type) cells ({per_service}), "
        f"each recovered by the CLI and by the daemon: {len(cases)} cases, {ci} in CI"
    )
