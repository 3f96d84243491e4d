"""Run history: what each run of a table did and what it bought, the last N per table, in memory.

A record is kept for every clustering (committed or rolled back), clean, rollback, and refused or
failed tick. Completed instants carry their numbers on the timeline, so the recent past is rebuilt
from it at start (`rebuild`): a completed clustering `replacecommit` has its write stats (the output
files and their sizes) and its `.requested` plan names the input base files; a completed clean's
`HoodieCleanMetadata` names the files deleted and the earliest commit retained; a completed
rollback's `HoodieRollbackMetadata` names the instants rolled back and the files deleted. Sizes of
input or deleted files come from the write stat of the commit that wrote each (`HoodieWriteStat
.fileSizeInBytes`, while that commit is on the active timeline), else from storage while the file is
still there; a file sized by neither is counted but adds no bytes.

The measured effect covers the file groups a run rewrote: files and bytes before and after, mean
file size, and files below `hoodie.clustering.plan.strategy.small.file.limit` before and after.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, TypeVar

from service.errors import CorruptTableError, HudiTableServiceError
from service.table.clustering_plan import PlannedClustering, decode_clustering_plan
from service.table.codecs import (
    AvroRootModel,
    CleanMetadata,
    CommitMetadata,
    ReplaceCommitMetadata,
    RequestedReplaceMetadata,
    RollbackMetadata,
    decode,
)
from service.table.data_files import parse_base_file
from service.table.instant import Action, Instant
from service.table.table import HudiTable
from service.table.timeline import Timeline, parse_instant_time

log = logging.getLogger(__name__)

CLUSTERING, CLEANING, ROLLBACK = "clustering", "cleaning", "rollback"


@dataclass(frozen=True)
class FileStats:
    """Files and bytes of a set of base files, and how many of them are small."""

    files: int = 0
    bytes: int = 0
    small_files: int = 0
    small_bytes: int = 0

    @property
    def mean_file_bytes(self) -> float | None:
        return self.bytes / self.files if self.files else None

    @classmethod
    def of(cls, sizes: Iterable[int | None], small_limit: int) -> FileStats:
        known = list(sizes)
        sized = [s for s in known if s is not None]
        small = [s for s in sized if s < small_limit]
        return cls(len(known), sum(sized), len(small), sum(small))

    def plus(self, other: FileStats) -> FileStats:
        return FileStats(
            self.files + other.files, self.bytes + other.bytes,
            self.small_files + other.small_files, self.small_bytes + other.small_bytes,
        )  # fmt: skip

    def minus(self, other: FileStats) -> FileStats:
        return FileStats(
            self.files - other.files, self.bytes - other.bytes,
            self.small_files - other.small_files, self.small_bytes - other.small_bytes,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "mean_file_bytes": self.mean_file_bytes,
            "small_files": self.small_files,
            "small_bytes": self.small_bytes,
        }


@dataclass(frozen=True)
class RunRecord:
    """One run of one service on one table and its measured effect."""

    table: str
    service: str  # clustering | cleaning | compaction | rollback
    outcome: str  # committed | rolled_back | completed | failed | refused
    instant: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    reason: str = ""
    partitions: tuple[str, ...] = ()
    before: FileStats | None = None  # clustering: the input file groups
    after: FileStats | None = None  # clustering: the files written
    # Clustering observed live: every live base file of the partitions touched, after the commit and
    # (the same, less the files written, plus the inputs) before it. Not rebuilt: the partitions
    # have changed since.
    partitions_before: FileStats | None = None
    partitions_after: FileStats | None = None
    files_deleted: int | None = None  # cleaning, rollback
    bytes_deleted: int | None = None
    earliest_retained: str | None = None  # cleaning: the earliest commit retained
    from_timeline: bool = False  # rebuilt at start, not observed by this process

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.service, self.instant, self.outcome)

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "instant": self.instant,
            "outcome": self.outcome,
            "reason": self.reason,
            "started": _iso(self.started),
            "ended": _iso(self.ended),
            "partitions": list(self.partitions),
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "partitions_before": self.partitions_before.to_json() if self.partitions_before else None,
            "partitions_after": self.partitions_after.to_json() if self.partitions_after else None,
            "files_deleted": self.files_deleted,
            "bytes_deleted": self.bytes_deleted,
            "earliest_retained": self.earliest_retained,
            "from_timeline": self.from_timeline,
        }


def _iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).isoformat() if at is not None else None


class RunHistory:
    """The last `size` runs per table, oldest first; thread-safe (ticks of many tables record)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._runs: dict[str, deque[RunRecord]] = {}
        self._lock = threading.Lock()

    def record(self, run: RunRecord) -> None:
        with self._lock:
            runs = self._runs.setdefault(run.table, deque(maxlen=self._size))
            if run.instant is not None and any(r.key == run.key for r in runs):
                return  # already known (rebuilt from the timeline, or recorded by the other service)
            runs.append(run)

    def seed(self, table: str, runs: Iterable[RunRecord]) -> None:
        """Put rebuilt runs before what was recorded since (a rebuild may finish after a first tick)."""
        with self._lock:
            current = list(self._runs.get(table, ()))
            known = {r.key for r in current}
            older = [r for r in runs if r.key not in known]
            self._runs[table] = deque([*older, *current], maxlen=self._size)

    def runs(self, table: str) -> tuple[RunRecord, ...]:
        with self._lock:
            return tuple(self._runs.get(table, ()))

    def last(self, table: str, service: str) -> RunRecord | None:
        for run in reversed(self.runs(table)):
            if run.service == service:
                return run
        return None

    def forget(self, table: str) -> None:
        with self._lock:
            self._runs.pop(table, None)


# ---------------------------------------------------------------------- from the timeline
class _Sizes:
    """Base-relative path → bytes: from the write stat of the commit that wrote the file (its instant
    time is in the base file name; `HoodieWriteStat.fileSizeInBytes`), else from storage.

    Commit files are decoded here without the facts reader's cache: write stats of old commits are
    read once, for the history only, and need not stay in memory.
    """

    def __init__(self, table: HudiTable, timeline: Timeline) -> None:
        self._table, self._timeline = table, timeline
        self._by_instant: dict[str, dict[str, int]] = {}

    def size(self, path: str) -> int | None:
        partition, _, name = path.rpartition("/")
        try:
            instant_time = parse_base_file(partition, name).instant_time
        except HudiTableServiceError:
            instant_time = ""
        known = self._written_by(instant_time).get(path)
        if known is not None:
            return known
        status = self._table.storage.status(path)
        return status.size if status is not None and not status.is_dir else None

    def name_in(self, partition: str, file_name: str) -> int | None:
        return self.size(f"{partition}/{file_name}" if partition else file_name)

    def _written_by(self, instant_time: str) -> dict[str, int]:
        if instant_time not in self._by_instant:
            sizes: dict[str, int] = {}
            for instant in self._timeline.completed().commits():
                if instant.timestamp != instant_time:
                    continue
                model = ReplaceCommitMetadata if instant.action is Action.REPLACE_COMMIT else CommitMetadata
                try:
                    meta = _decode(self._table, instant, model)
                except HudiTableServiceError:
                    continue  # archived or unreadable: storage may still know the size
                sizes.update({s.path: s.file_size_in_bytes for s in meta.write_stats if s.path})
            self._by_instant[instant_time] = sizes
        return self._by_instant[instant_time]


def clustering_record(
    table: HudiTable, name: str, instant: Instant, small_limit: int, zone: tzinfo, sizes: _Sizes | None = None
) -> RunRecord | None:
    """The record of a completed clustering `instant`; None when it is another replacecommit."""
    plan = _clustering_plan(table, instant)
    if plan is None:
        return None
    sizes = sizes or _Sizes(table, table.load_timeline())
    inputs = [s for g in plan.groups for s in g.slices]
    meta = _decode(table, instant, ReplaceCommitMetadata)
    outputs = [s.file_size_in_bytes for s in meta.write_stats]
    return RunRecord(
        table=name,
        service=CLUSTERING,
        outcome="committed",
        instant=instant.timestamp,
        started=parse_instant_time(instant.timestamp, zone),
        ended=_completed_at(table, instant),
        partitions=tuple(sorted({g.partition_path for g in plan.groups})),
        before=FileStats.of((sizes.size(s.base_file_path) for s in inputs), small_limit),
        after=FileStats.of(outputs, small_limit),
        from_timeline=True,
    )


M = TypeVar("M", bound=AvroRootModel | CommitMetadata)


def _decode(table: HudiTable, instant: Instant, model: type[M]) -> M:
    """An instant's file, decoded without the facts reader's cache (the history reads it once)."""
    rel = table.layout.instant_path(instant)
    try:
        data = table.storage.read_bytes(rel)
    except FileNotFoundError:
        raise CorruptTableError(f"{table.storage.qualify(rel)} vanished while reading the timeline") from None
    return decode(
        model, data, table.storage.qualify(rel), avro_commit=table.layout.commit_metadata_is_avro(instant)
    )


def _clustering_plan(table: HudiTable, instant: Instant) -> PlannedClustering | None:
    """The plan of a clustering `replacecommit`, None for another replacecommit (insert_overwrite).
    Slices are named by partition and file name (`decode_clustering_plan`'s `file_names_only`), as
    the write stats name files."""
    if not table.facts_reader.is_clustering_plan(instant):  # only the answer is cached
        return None
    requested = table.facts_reader.requested_file(instant)
    if requested is None:
        return None
    meta = _decode(table, requested, RequestedReplaceMetadata)
    if meta.clustering_plan is None:
        return None
    guard = table.path_guard(table.storage.qualify(table.layout.instant_path(requested)))
    return decode_clustering_plan(meta, guard, file_names_only=True)


def clean_record(
    table: HudiTable, name: str, instant: Instant, zone: tzinfo, sizes: _Sizes | None = None
) -> RunRecord:
    meta = _decode(table, instant, CleanMetadata)
    sizes = sizes or _Sizes(table, table.load_timeline())
    partitions = meta.partition_metadata.values()
    deleted = [sizes.name_in(p.partition_path, f) for p in partitions for f in p.success_delete_files]
    started = parse_instant_time(instant.timestamp, zone)
    return RunRecord(
        table=name,
        service=CLEANING,
        outcome="completed",
        instant=instant.timestamp,
        started=started,
        ended=started + timedelta(milliseconds=meta.time_taken_in_millis),
        partitions=tuple(sorted(meta.partition_metadata)),
        files_deleted=meta.total_files_deleted,
        bytes_deleted=sum(s for s in deleted if s is not None),
        earliest_retained=meta.earliest_commit_to_retain or None,
        from_timeline=True,
    )


def rollback_record(table: HudiTable, name: str, instant: Instant, zone: tzinfo) -> RunRecord:
    meta = _decode(table, instant, RollbackMetadata)
    started = parse_instant_time(instant.timestamp, zone)
    return RunRecord(
        table=name,
        service=ROLLBACK,
        outcome="completed",
        instant=instant.timestamp,
        started=started,
        ended=started + timedelta(milliseconds=meta.time_taken_in_millis),
        reason="rolled back " + ", ".join(meta.commits_rollback),
        partitions=tuple(sorted(meta.partition_metadata)),
        files_deleted=meta.total_files_deleted,
    )


def rebuild(table: HudiTable, name: str, small_limit: int, zone: tzinfo, limit: int) -> list[RunRecord]:
    """The last `limit` clusterings, cleans and rollbacks completed on the active timeline, oldest
    first; an instant whose file cannot be decoded is left out (logged), not fatal."""
    timeline = table.load_timeline()
    wanted = (Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK)
    sizes = _Sizes(table, timeline)
    found: list[RunRecord] = []
    for instant in reversed(timeline.by_actions(wanted).completed().instants):
        if len(found) >= limit:
            break
        try:
            record: RunRecord | None
            if instant.action is Action.REPLACE_COMMIT:
                record = clustering_record(table, name, instant, small_limit, zone, sizes)
            elif instant.action is Action.CLEAN:
                record = clean_record(table, name, instant, zone, sizes)
            else:
                record = rollback_record(table, name, instant, zone)
        except HudiTableServiceError as exc:
            log.warning("table %s: history skips %s: %s", name, instant.file_name, exc)
            continue
        if record is not None:
            found.append(record)
    return list(reversed(found))


def _completed_at(table: HudiTable, instant: Instant) -> datetime | None:
    """When the completed file was written (table version 6 names carry no completion time)."""
    status = table.storage.status(table.layout.instant_path(instant))
    if status is None or status.mtime_ns is None:
        return None
    return datetime.fromtimestamp(status.mtime_ns / 1e9, UTC)
