"""Which file slice a log file belongs to, and whether a data file counts as committed: per layout.

Layout 1 (table version 6): a log file's name carries the base instant of the slice its writer
appended to, so the name alone places it; a file counts when its slice's base instant is committed.

Layout 2 (table versions 8 and 9): a log file's name carries the deltacommit that wrote it
(`HoodieLogFile.getDeltaCommitTime`). It counts only once that deltacommit completed
(`AbstractTableFileSystemView.filterUncommittedLogs`), and joins the slice with the largest base
instant at or before the deltacommit's completion time (`HoodieFileGroup.getBaseInstantTime`): a
compaction scheduled while the deltacommit was still running does not take it, the slice it opens
does. With no slice before it, the log opens a slice at its own deltacommit time.

A deltacommit archived from the active timeline has its completion time in the archived (LSM)
timeline. It is read there (`service.table.lsm_history`) only for the archived deltacommits whose logs
a later slice makes it matter for (`history_lookups`); the others are placed by their requested time,
which lands in the same slice.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from service.errors import CorruptTableError
from service.table.data_files import LogFile
from service.table.timeline import Timeline


class CompletionTimeHistory(Protocol):
    """Where completion times of archived instants are looked up (`service.table.lsm_history.LsmHistory`)."""

    @property
    def location(self) -> str: ...

    def completion_times(self, instant_times: Iterable[str]) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class CompletionTimes:
    """Completion times of completed instants, as `CompletionTimeQueryViewV2` answers them.

    `by_instant`: the active timeline's. `timeline_start`: the earliest instant on the active timeline;
    older instants were archived to the LSM history. `archived`: completion times read from that
    history (`lsm_history`), only of the archived instants a log's slice depends on (`history_lookups`),
    as Hudi loads the history lazily for the instants it is asked about; `history` names where they
    were looked up (None: nowhere).
    """

    by_instant: Mapping[str, str]
    timeline_start: str | None
    archived: Mapping[str, str] = field(default_factory=dict)
    history: str | None = None

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

    def with_history(self, history: CompletionTimeHistory, instant_times: Collection[str]) -> CompletionTimes:
        """These times plus what `history` holds of `instant_times` (read once, here)."""
        if not instant_times:
            return self
        found = history.completion_times(instant_times)
        return replace(self, archived={**self.archived, **found}, history=history.location)


def history_lookups(
    base_instants: Iterable[str], logs: Iterable[LogFile], times: CompletionTimes
) -> set[str]:
    """The archived deltacommits among `logs` whose slice depends on their completion time: a slice
    of `base_instants` opened after their requested time. Placed by the requested time otherwise, they
    need no history. Slices the logs open themselves never count: a log opens one at its own
    deltacommit time, and logs are placed in deltacommit order (`slice_log_files_by_completion`)."""
    latest = max(base_instants, default=None)
    return {
        log.base_instant_time
        for log in logs
        if latest is not None
        and latest > log.base_instant_time
        and log.base_instant_time not in times.by_instant
        and times.is_archived(log.base_instant_time)
    }


def slice_log_files_by_completion(
    table: str,
    base_instants: Iterable[str],
    logs: Iterable[LogFile],
    times: CompletionTimes,
) -> dict[str, list[LogFile]]:
    """Base instant -> the committed log files of one file group that join its slice (layout 2).

    `base_instants`: the group's slices before any log is placed (committed base files, the pending
    compaction's instant). Logs are placed in `HoodieLogFile.getLogFileComparator` order, each seeing
    the slices earlier logs opened, as `HoodieFileGroup.addLogFile` does. An archived deltacommit's log
    is placed by the completion time `times.archived` holds; when it is not there and a slice opened
    after the deltacommit's requested time, CorruptTableError: Hudi would guess (its
    `HoodieFileGroup.getBaseInstantTime` takes a log without a completion time as pending, into the
    latest slice), the service does not.
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
            completion = times.archived.get(written_by)
            later = sorted(b for b in slices if b > written_by)
            if completion is None and later:
                missing = (
                    f"which the archived (LSM) timeline {times.history} does not hold"
                    if times.history is not None
                    else "and no archived (LSM) timeline was read"
                )
                raise CorruptTableError(
                    f"table {table!r}: log file {log.path} was written by deltacommit {written_by}, "
                    f"archived from the active timeline, and file slice {later[0]} opened after it: its "
                    f"slice depends on its completion time, {missing}"
                )
            completion = completion or written_by
        candidates = [b for b in slices if b <= completion]
        base = max(candidates) if candidates else written_by
        slices.add(base)
        placed.setdefault(base, []).append(log)
    return placed
