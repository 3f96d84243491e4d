"""How `archive`, `check` and the status page report archival: what holds the window back and the
way out of it, and when the archived timeline was last written (one JSON shape, one sentence each)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from service.archival.planning import archive_location
from service.table.table import HudiTable
from strategies.archival import ArchivalWindow, Bound

# What lifts each bound (`operations.md`, "Archival in `check`").
WAY_OUT: Mapping[Bound, str] = {
    Bound.PENDING_WRITE: "the pending write completes, or a writer (or `hudi-table-service clean`, which "
    "rolls back failed writes first) rolls it back once it failed",
    Bound.COMPACTION: "the next compaction runs (the daemon's compaction or `hudi-table-service compact`)",
    Bound.CLUSTERING: "a clean whose earliest commit to retain passes that replacecommit deletes the "
    "replaced file groups (the daemon's cleaning or `hudi-table-service clean`)",
    Bound.METADATA_TABLE: "the metadata table compacts, inside the writers' commits, every "
    "hoodie.metadata.compact.max.delta.commits of them",
    Bound.DATA_TABLE: "the data table's archival moves its first active instant on",
    Bound.SAVEPOINT: "delete the savepoint (Hudi's `delete_savepoint`), or set "
    "hoodie.archive.beyond.savepoint=true to archive around it",
    Bound.MIN_COMMITS: "none needed: archival keeps hoodie.keep.min.commits completed commits by design",
    Bound.NOT_TRIGGERED: "none needed: archival runs once more than hoodie.keep.max.commits commits are "
    "active",
}


def held_by_json(window: ArchivalWindow) -> dict[str, Any] | None:
    """`{"bound", "instant", "detail", "way_out"}` of the bound that holds the window back most; None:
    none."""
    stop = window.stop
    if stop is None:
        return None
    return {"bound": stop.bound.value, "instant": stop.instant_time, "detail": stop.detail,
            "way_out": WAY_OUT[stop.bound]}  # fmt: skip


def held_by_text(held: Mapping[str, Any]) -> str:
    """`held by <bound>[ at <instant>]: <detail> (way out: ...)`, from `held_by_json`'s object."""
    at = f" at {held['instant']}" if held["instant"] else ""
    return f"held by {held['bound']}{at}: {held['detail']} (way out: {held['way_out']})"


@dataclass(frozen=True)
class LastArchived:
    """The archived timeline's most recently written file: when archival last ran, by whoever."""

    file: str
    at: datetime


def last_archived(table: HudiTable) -> LastArchived | None:
    """The newest file of the archived timeline by modification time (the LSM history's `_version_` is
    rewritten by every run; a version-6 run writes a new `archived/` log file); None: never archived.
    Hudi's files say nothing of the process that wrote them: who it was is the daemon's to tell
    (`service.daemon.tick`), from the files its own runs wrote."""
    files = [
        f for f in table.storage.list_dir(archive_location(table))
        if not f.is_dir and not f.name.endswith(".crc") and f.mtime_ns is not None
    ]  # fmt: skip
    if not files:
        return None
    newest = max(files, key=lambda f: (f.mtime_ns or 0, f.name))
    return LastArchived(newest.name, datetime.fromtimestamp((newest.mtime_ns or 0) / 1e9, UTC))
