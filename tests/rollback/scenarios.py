"""Fixture scenarios for rollback tests: a pending clustering with partial outputs, a recording lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from service.table.markers import create_marker
from service.table.table import HudiTable
from tests.support.fixtures import FileSpec, FixtureTable, ts

T = ts(2)  # the clustering instant the scenario leaves pending


@dataclass
class RecordingLock:
    """A context-manager lock that records what the table looked like when it was taken and released."""

    base: Path
    fail_on_enter: bool = False
    fail_from_enter: int | None = None  # the n-th acquisition (0-based) and later ones fail
    entered: list[set[str]] = field(default_factory=list)
    exited: list[set[str]] = field(default_factory=list)
    held: bool = False

    def _names(self) -> set[str]:
        return {p.name for p in (self.base / ".hoodie").iterdir() if p.is_file()}

    def __enter__(self) -> RecordingLock:
        if self.fail_on_enter or (
            self.fail_from_enter is not None and len(self.entered) >= self.fail_from_enter
        ):
            raise RuntimeError("lock service down")
        self.held = True
        self.entered.append(self._names())
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.exited.append(self._names())
        self.held = False


@dataclass
class Scenario:
    fixture: FixtureTable
    table: HudiTable
    committed: list[str]  # base-relative files of the completed commit ts(1)
    outputs: list[str]  # base-relative files the pending clustering T wrote

    @property
    def base(self) -> Path:
        return self.fixture.base

    def exists(self, rel: str) -> bool:
        return (self.base / rel).exists()

    def timeline_names(self) -> set[str]:
        return {p.name for p in (self.base / ".hoodie").iterdir() if p.is_file()}


def pending_clustering_scenario(tmp_path: Path, *, markers: bool = True, inflight: bool = True) -> Scenario:
    """ts(1) commits a, b in p1 and c in p2; T = ts(2) is a pending clustering of a and b that wrote
    two output files in p1 (with DIRECT markers unless `markers=False`)."""
    fixture = FixtureTable(tmp_path / "t")
    stats = fixture.commit(ts(1), [FileSpec("p1", "a-0"), FileSpec("p1", "b-0"), FileSpec("p2", "c-0")])
    fixture.pending_clustering(T, [("p1", "a-0"), ("p1", "b-0")], inflight=inflight)
    outputs = []
    if inflight:
        for name in ("n1-0", "n2-0"):
            path = f"p1/{fixture.file_name('p1', name, T)}"
            if markers:
                create_marker(fixture.storage, T, path)
            fixture.write_base_file(FileSpec("p1", name), T)
            outputs.append(path)
    table = HudiTable.open(str(fixture.base))
    return Scenario(fixture, table, [s.path or "" for s in stats], outputs)
