"""What the daemon logs: one INFO line per run with its outcome and benefit, library noise at DEBUG.

A run is a tick that did work: a clustering executed (committed or rolled back), cleans finished, or a
compaction committed.
Its steps (scheduled, MDT deltacommit, committed) are logged at DEBUG where they happen; a tick with
nothing to do logs nothing above DEBUG. Failures, refusals and quarantine are logged by the tick.

APScheduler logs every job run at INFO and, with `max_instances=1`, a WARNING whenever a job is
still running at its next run time ("skipped: maximum number of running instances reached"): what
happens whenever a clustering outlasts the poll interval, by design. `quiet_scheduler_logs` demotes
everything APScheduler logs below ERROR to DEBUG.
"""

from __future__ import annotations

import logging

from service.cleaning.results import CleanRunResult
from service.clustering.orchestrator import ClusteringResult
from service.compaction.executor import CompactionResult

# The loggers APScheduler 3 writes to: the scheduler's, and the executor's of the alias "default".
SCHEDULER_LOGGERS = ("apscheduler.scheduler", "apscheduler.executors.default")


class _DemoteToDebug(logging.Filter):
    """Rewrites a record below ERROR to DEBUG, and drops it unless its logger is enabled for DEBUG
    (the level check already passed at the record's original level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


_DEMOTE = _DemoteToDebug()


def quiet_scheduler_logs() -> None:
    """Install the demotion on APScheduler's loggers (idempotent)."""
    for name in SCHEDULER_LOGGERS:
        logger = logging.getLogger(name)
        if _DEMOTE not in logger.filters:
            logger.addFilter(_DEMOTE)


def size(n: float) -> str:
    """Bytes for people: 1023 B, 1.5 KiB, 12.0 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _mean(total: int, count: int) -> str:
    return size(total / count) if count else "-"


def clustering_outcome(table: str, result: ClusteringResult) -> str:
    """One line: what a clustering run did and what it bought (files, bytes, mean file size)."""
    if result.rolled_back:
        return (
            f"table {table}: clustering {result.instant_time} rolled back after "
            f"{result.duration_seconds:.1f}s: {result.reason}"
        )
    state = "committed" if result.committed else "not committed"
    return (
        f"table {table}: clustering {result.instant_time} {state}: {result.groups} groups, "
        f"{result.input_files} files ({size(result.input_bytes)}) -> {result.output_files} files "
        f"({size(result.output_bytes)}), mean file {_mean(result.input_bytes, result.input_files)} -> "
        f"{_mean(result.output_bytes, result.output_files)}, {result.output_records} records, "
        f"in {result.duration_seconds:.1f}s"
    )


def cleaning_outcome(table: str, result: CleanRunResult) -> str:
    """One line: the cleans a run finished, files and bytes deleted, the earliest commit retained."""
    instants = ", ".join(c.instant_time for c in result.cleans)
    others = [c.instant_time for c in result.cleans if c.completed_by_other_writer]
    retained = result.cleans[-1].earliest_commit_to_retain or "none"
    line = (
        f"table {table}: clean {instants} completed: {result.files_deleted} files deleted "
        f"({size(result.bytes_deleted)}), {result.files_already_gone} already gone, earliest commit "
        f"retained {retained}, in {result.duration_seconds:.1f}s"
    )
    return line + (f" ({', '.join(others)} completed by another writer)" if others else "")


def compaction_outcome(table: str, result: CompactionResult) -> str:
    """One line: the compaction committed, file slices merged, files, bytes and records written."""
    return (
        f"table {table}: compaction {result.instant_time} committed: {result.operations} file slices -> "
        f"{result.output_files} files ({size(result.output_bytes)}), {result.records} records, "
        f"in {result.duration_seconds:.1f}s"
    )
