"""Load what the clean planner reads: the last clean, commit partitions, a view of the partitions to scan."""

from __future__ import annotations

import io
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, tzinfo

import fastavro

from service.config.cleaning import CleanConfig
from service.errors import CorruptTableError
from service.table import codecs
from service.table.codecs import CleanMetadata
from service.table.instant import Action, Instant, stored_instant_time
from service.table.paths import Refused, check_partition_path
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.cleaning import CleanSnapshot, LastClean, earliest_commit_to_retain, partitions_to_scan
from strategies.cleaning.retention import previous_retained

SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"  # Hudi 0.15's extraMetadata key


def read_last_clean(table: HudiTable, timeline: Timeline) -> LastClean | None:
    """The latest completed clean's metadata; None when the active timeline has no completed clean."""
    instant = timeline.by_actions([Action.CLEAN]).completed().last
    if instant is None:
        return None
    # A completed clean never changes: read once per table, not on every daemon tick.
    return table.facts_reader.derived(instant, "LastClean", lambda: _read_last_clean(table, instant))


def _read_last_clean(table: HudiTable, instant: Instant) -> LastClean:
    path = table.layout.instant_path(instant)
    try:
        data = table.storage.read_bytes(path)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{table.storage.qualify(path)} vanished while reading the timeline"
        ) from None
    if not data:
        return LastClean(instant.timestamp, empty=True)
    # Decoded here, not through the facts cache: only these few fields are kept.
    source = table.storage.qualify(path)
    meta = codecs.decode(CleanMetadata, data, source)
    # Both times bound what the next clean looks at (its trigger counts the commits after one, its
    # incremental scan starts at the other): garbage there would make it keep files without a word.
    ectr = stored_instant_time(meta.earliest_commit_to_retain, source, "earliestCommitToRetain")
    last = stored_instant_time(meta.last_completed_commit_timestamp, source, "lastCompletedCommitTimestamp")
    return LastClean(
        timestamp=instant.timestamp,
        earliest_commit_to_retain=ectr or "",
        last_completed_commit_timestamp=last or "",
        savepointed_timestamps=savepointed_timestamps(data),
    )


def savepointed_timestamps(data: bytes) -> tuple[str, ...] | None:
    """The `extraMetadata.savepointed_timestamps` Hudi 0.15+ writes into a clean's plan and metadata
    (our 0.14.1 codecs read past it); None when the Avro file does not carry it."""
    try:
        record = next(iter(fastavro.reader(io.BytesIO(data))), None)
    except Exception:  # already decoded once by the codec; a second reader failing means no extra field
        return None
    extra = record.get("extraMetadata") if isinstance(record, dict) else None
    if not isinstance(extra, dict) or SAVEPOINTED_TIMESTAMPS not in extra:
        return None
    return tuple(t for t in str(extra[SAVEPOINTED_TIMESTAMPS]).split(",") if t)


def commit_partitions(table: HudiTable, timeline: Timeline) -> Mapping[str, frozenset[str]]:
    """Completed commit/deltacommit/replacecommit -> partitions written (and replaced in), each
    decoded when first asked for (`CommitPartitions`)."""
    return CommitPartitions(table, timeline)


class CommitPartitions(Mapping[str, frozenset[str]]):
    """Instant time of a completed commit/deltacommit/replacecommit -> partitions it wrote (and replaced
    in), read from its commit metadata when asked: a full clean asks for none (Java's
    `CleanPlanner.getPartitionPathsForFullCleaning` lists the table), an incremental one for the commits
    since the last clean's earliest commit to retain, not for a timeline of commits that each name
    every partition of a large table (the 14 commit files of a 10^6-file table, a million write stats
    in all, took 6 s)."""

    def __init__(self, table: HudiTable, timeline: Timeline) -> None:
        self._reader = table.facts_reader
        self._commits = {instant.timestamp: instant for instant in timeline.commits().completed()}

    def __getitem__(self, instant_time: str) -> frozenset[str]:
        # Summaries, not full metadata: the same checks, shared with the view's timeline facts, without
        # building a WriteStat model per written file; cached by the reader.
        return self._reader.commit_summary(self._commits[instant_time]).partitions()

    def __iter__(self) -> Iterator[str]:
        return iter(self._commits)

    def __len__(self) -> int:
        return len(self._commits)


def _confine_listed_partitions(
    table: HudiTable,
    timeline: Timeline,
    listed: Iterable[str],
    partitions_of: Mapping[str, frozenset[str]],
) -> None:
    """An incremental clean lists the partitions commits name: each is confined to the table
    first (`service.table.paths`); the error names the first commit naming a refused one."""
    for partition in listed:
        if not isinstance(check_partition_path(partition, bool(table.config.partition_fields)), Refused):
            continue
        named_by = next(
            (i for i in timeline.commits().completed() if partition in partitions_of.get(i.timestamp, ())),
            None,
        )
        source = (
            table.storage.qualify(table.layout.instant_path(named_by))
            if named_by is not None
            else "the timeline"
        )
        table.path_guard(source).partition("partitionToWriteStats", partition)


def pending_clustering_file_names(table: HudiTable, timeline: Timeline) -> frozenset[str]:
    """Names of the base and log files the slices of every pending clustering plan read (a pending
    `replacecommit` on layout 1, `clustering` on layout 2)."""
    names: set[str] = set()
    for instant in timeline.by_actions([Action.REPLACE_COMMIT, Action.CLUSTERING]).pending():
        plan = table.facts_reader.clustering_plan(instant, file_names_only=True)
        for group in plan.groups if plan is not None else ():
            for s in group.slices:
                paths = [s.base_file_path, *s.log_file_paths]
                names.update(posixpath.basename(p) for p in paths if p)
    return frozenset(names)


def load_clean_snapshot(
    table: HudiTable,
    timeline: Timeline,
    config: CleanConfig,
    now: datetime,
    zone: tzinfo,
    full_listing: bool = False,
) -> CleanSnapshot:
    """Everything `plan_clean(snapshot, config, now)` reads; lists only the partitions it must scan
    unless `full_listing` (the volume breaker's denominator then covers the whole table)."""
    last_clean = read_last_clean(table, timeline)
    partitions_of = commit_partitions(table, timeline)
    partitioned = bool(table.config.partition_fields)
    ectr = earliest_commit_to_retain(timeline, config, now, zone, previous_retained(last_clean))
    scope = partitions_to_scan(timeline, ectr, last_clean, partitions_of, config, partitioned)
    listed = None if full_listing or scope.partitions is None else scope.partitions
    if listed is not None:
        _confine_listed_partitions(table, timeline, listed, partitions_of)
    facts = table.facts_reader.read(timeline)
    return CleanSnapshot(
        timeline=timeline,
        # Listed and built a batch of partitions at a time, as the planner asks for them.
        views=table.iter_views(timeline, partitions=listed, facts=facts),
        facts=facts,
        timeline_zone=zone,
        commit_partitions=partitions_of,
        last_clean=last_clean,
        partitioned=partitioned,
        listed_partitions=listed,
        pending_clustering_file_names=pending_clustering_file_names(table, timeline),
    )
