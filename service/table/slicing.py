"""Which file slice a log file belongs to, and whether a data file counts as committed: per layout.

Layout 1 (table version 6): a log file's name carries the base instant of the slice its writer
appended to, so the name alone places it; a file counts when its slice's base instant is committed.

Layout 2 (table versions 8 and 9): a log file's name carries the deltacommit that wrote it
(`HoodieLogFile.getDeltaCommitTime`). It counts only once that deltacommit completed
(`AbstractTableFileSystemView.filterUncommittedLogs`), and joins the slice with the largest base
instant at or before the deltacommit's completion time (`HoodieFileGroup.getBaseInstantTime`): a
compaction scheduled while the deltacommit was still running does not take it, the slice it opens
does. With no slice before it, the log opens a slice at its own deltacommit time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from service.errors import UnsupportedTableError
from service.table.data_files import LogFile
from service.table.timeline import Timeline


@dataclass(frozen=True)
class CompletionTimes:
    """Completion times of the active timeline's completed instants (`CompletionTimeQueryView`).

    `timeline_start`: the earliest instant on the active timeline; older instants were archived to
    the LSM history, which the service does not read yet.
    """

    by_instant: dict[str, str]
    timeline_start: str | None

    @classmethod
    def of(cls, timeline: Timeline) -> CompletionTimes:
        times = {
            # A legacy name (no completion time) was written before the layout-2 upgrade renamed
            # completed instants; its requested time stands in (Hudi takes the file's modification time).
            i.timestamp: i.completion_time or i.timestamp
            for i in timeline.completed()
        }
        first = timeline.first
        return cls(times, first.timestamp if first is not None else None)

    def is_archived(self, instant: str) -> bool:
        return self.timeline_start is not None and instant < self.timeline_start


def slice_log_files_by_completion(
    table: str,
    base_instants: Iterable[str],
    logs: Iterable[LogFile],
    times: CompletionTimes,
) -> dict[str, list[LogFile]]:
    """Base instant -> the committed log files of one file group that join its slice (layout 2).

    `base_instants`: the group's slices before any log is placed (committed base files, the pending
    compaction's instant). Logs are placed in `HoodieLogFile.getLogFileComparator` order, each seeing
    the slices earlier logs opened, as `HoodieFileGroup.addLogFile` does.
    """
    slices: set[str] = set(base_instants)
    placed: dict[str, list[LogFile]] = {}
    for log in sorted(logs, key=lambda lf: lf.order_key):
        written_by = log.base_instant_time  # the deltacommit's requested time, on layout 2
        completion = times.by_instant.get(written_by)
        if completion is None:
            if not times.is_archived(written_by):
                raise ValueError(f"{log.path}: deltacommit {written_by} is not completed")
            # Archived: its completion time is in the LSM history. Placing by the requested time is
            # right unless a slice opened between the two; then only the history can tell.
            later = sorted(b for b in slices if b > written_by)
            if later:
                raise UnsupportedTableError(
                    f"table {table!r}: log file {log.path} was written by deltacommit {written_by}, "
                    f"archived from the active timeline, and file slice {later[0]} opened after it: its "
                    "slice depends on a completion time in the archived (LSM) timeline, which the service "
                    "does not read yet"
                )
            completion = written_by
        candidates = [b for b in slices if b <= completion]
        base = max(candidates) if candidates else written_by
        slices.add(base)
        placed.setdefault(base, []).append(log)
    return placed
