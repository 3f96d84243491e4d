"""Which of a table's uncommitted data files are orphans: files no reader reads and no pending work
will claim, which `repair` may move to the trash. Pure: a function of the candidates (the files the
storage listing's file-system view sets apart as belonging to no committed slice: files of failed or
pending writes and a completed write's leftovers, `FileSystemView.uncommitted_files`), the pending
instants, what the metadata table lists, the safety age and now.

A candidate is kept, never an orphan, when:
- its instant is pending (requested or inflight), whatever its age: that write may still complete,
  and its rollback deletes the file otherwise;
- it was modified less than the safety age ago (a writer between writing it and requesting its
  instant, a slow task of a retried stage);
- the metadata table lists it: readers listing through it read the file, so the table is inconsistent
  and that is for a person to look at, not for a repair to move;
- its instant is after every instant of the timeline as loaded: a write may be starting.
A file older than the active timeline is never a candidate: the view counts its slice committed (its
commit was archived), as Hudi's readers do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Candidate:
    path: str  # base-relative
    instant: str  # the instant that wrote it (a v6 log file: its base instant)
    size: int
    modified: datetime | None  # None: unknown, which counts as young


@dataclass(frozen=True)
class Kept:
    path: str
    why: str


@dataclass(frozen=True)
class OrphanVerdict:
    orphans: tuple[Candidate, ...]
    kept: tuple[Kept, ...]


def classify(
    candidates: Iterable[Candidate],
    pending: frozenset[str],
    listed_by_metadata_table: frozenset[str] | None,
    now: datetime,
    min_age: timedelta,
    latest_instant: str | None = None,
) -> OrphanVerdict:
    orphans: list[Candidate] = []
    kept: list[Kept] = []
    for c in sorted(candidates, key=lambda c: c.path):
        if latest_instant is not None and c.instant > latest_instant:
            kept.append(
                Kept(c.path, f"its instant {c.instant} is newer than the timeline: a write may be starting")
            )
        elif c.instant in pending:
            kept.append(
                Kept(c.path, f"its instant {c.instant} is pending: it completes, or its rollback deletes it")
            )
        elif c.modified is None or now - c.modified < min_age:
            kept.append(Kept(c.path, f"modified less than {_hours(min_age)} ago (the safety age)"))
        elif listed_by_metadata_table is not None and c.path in listed_by_metadata_table:
            kept.append(Kept(c.path, "the metadata table lists it: an inconsistency for a person to look at"))
        else:
            orphans.append(c)
    return OrphanVerdict(tuple(orphans), tuple(kept))


def _hours(age: timedelta) -> str:
    return f"{age.total_seconds() / 3600:g} h"
