"""Load what the archival window is a function of, and compute it (`strategies.archival.window`).

Read here, once per call: the active timeline, the latest completed clean's plan (its earliest commit
to retain and the savepoints it kept: `CleanerUtils.getCleanerPlan` of `<t>.clean.requested`, which is
what Hudi's archiver reads), when the table has a metadata table, that table's latest completed
compaction (`HoodieBackedTableMetadata.getLatestCompactionTime`), and the active instants the archive
already holds (a stopped run's).
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import tzinfo

from service.cleaning.snapshot import read_last_clean, savepointed_timestamps
from service.config.hoodie import HoodieConfig
from service.errors import CorruptTableError
from service.table import codecs
from service.table.archived_log import archived_keys, latest_archive_file_name
from service.table.codecs import CleanerPlan
from service.table.instant import Action, Instant, State, stored_instant_time
from service.table.lsm_history import read_archived_instants
from service.table.mdt.files_listing import files_partition_served
from service.table.mdt.timeline import load_mdt_timeline, mdt_timeline_layout
from service.table.properties import TableType
from service.table.storage import Storage
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.archival import ArchivalInputs, ArchivalWindow, Archiver, LastClean, window
from strategies.cleaning import LastClean as CleanMetadataSummary

# `getCommitAndReplaceTimeline`: the metadata table's compactions complete as `commit`.
_MDT_COMPACTION_ACTIONS = (Action.COMMIT, Action.REPLACE_COMMIT)


def archiver_of(table: HudiTable) -> Archiver:
    """Hudi's archiver for the table's timeline layout (`TimelineArchivers.getInstance`)."""
    return Archiver.V2 if table.layout.archives_to_lsm else Archiver.V1


def archival_window(
    table: HudiTable, config: HoodieConfig, zone: tzinfo, timeline: Timeline | None = None
) -> ArchivalWindow:
    """What Hudi's archiver would archive from the table now, and what stops it."""
    timeline = timeline if timeline is not None else table.load_timeline()
    has_mdt = files_partition_served(table.config)
    inputs = ArchivalInputs(
        merge_on_read=table.config.table_type is TableType.MERGE_ON_READ,
        zone=zone,
        last_clean=_last_clean(table, timeline),
        has_metadata_table=has_mdt,
        metadata_table_compaction=_mdt_latest_compaction(table) if has_mdt else None,
        already_archived=_already_archived(table, timeline),
    )
    return window(timeline, archiver_of(table), config.archival, config.clean, config.compaction, inputs)


def _last_clean(table: HudiTable, timeline: Timeline) -> LastClean | None:
    """The latest completed clean as the archiver reads it: its plan's earliest instant to retain.
    A completed clean's plan never changes: read once per table, not on every `check` or run."""
    metadata = read_last_clean(table, timeline)
    if metadata is None:
        return None
    requested = Instant(metadata.timestamp, Action.CLEAN, State.REQUESTED)
    return table.facts_reader.derived(
        requested, LastClean.__name__, lambda: _read_last_clean(table, metadata, requested)
    )


def _read_last_clean(table: HudiTable, metadata: CleanMetadataSummary, requested: Instant) -> LastClean:
    path = table.layout.instant_path(requested)
    try:
        data = table.storage.read_bytes(path)
    except FileNotFoundError:
        # Hudi's archiver fails here; the clean's own metadata records the same earliest commit.
        return LastClean(
            metadata.timestamp,
            metadata.earliest_commit_to_retain or None,
            metadata.savepointed_timestamps or (),
        )
    if not data:
        raise CorruptTableError(f"{table.storage.qualify(path)}: empty clean plan")
    source = table.storage.qualify(path)
    plan = codecs.decode(CleanerPlan, data, source)
    ectr = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else None
    ectr = stored_instant_time(ectr, source, "earliestInstantToRetain")
    return LastClean(metadata.timestamp, ectr, savepointed_timestamps(data) or ())


def _mdt_latest_compaction(table: HudiTable) -> str | None:
    """The metadata table's latest completed compaction (`commit`), None when it has none yet."""
    mdt = load_mdt_timeline(table.storage, mdt_timeline_layout(table.layout))
    last = mdt.completed().by_actions(_MDT_COMPACTION_ACTIONS).last
    return last.timestamp if last is not None else None


def _already_archived(table: HudiTable, timeline: Timeline) -> frozenset[str]:
    """Completed instants of the active timeline the archive already holds: a run stopped between
    writing them and deleting their files left them (`service.archival.archiver`). Such a run wrote
    the newest archive file (layout 1) or the history's newest data file (layout 2); on layout 2 the
    name ranges of the latest snapshot's files say which to read, none in the usual case."""
    active = {i.timestamp for i in timeline.completed()}
    storage, folder = table.storage, archive_location(table)
    if not active or not storage.exists(folder):
        return frozenset()
    if table.layout.history_dir is not None:
        return frozenset(read_archived_instants(storage, folder, active))
    latest = latest_archive_file_name(storage.list_file_names(folder))
    status = storage.status(f"{folder}/{latest}") if latest is not None else None
    if latest is None or status is None:
        return frozenset()
    return _completed_in_archive_file(storage, f"{folder}/{latest}", status.size, status.mtime_ns) & active


# Completed instant times in an archive file, by (path, size, modification time): a version-6 table's
# newest archive file changes only when archival writes (Hudi appends where storage allows), while the
# window is computed on every timeline change; a file Hudi grew by appends is not read each time.
_ARCHIVE_FILE_CACHE: OrderedDict[tuple[str, int, int | None], frozenset[str]] = OrderedDict()
_ARCHIVE_FILE_CACHE_SIZE = 1024


def _completed_in_archive_file(storage: Storage, rel: str, size: int, mtime_ns: int | None) -> frozenset[str]:
    key = (storage.qualify(rel), size, mtime_ns)
    found = _ARCHIVE_FILE_CACHE.get(key)
    if found is None:
        keys = archived_keys(storage.read_bytes(rel), key[0])
        found = frozenset(t for t, _action, state in keys if state == State.COMPLETED.name)
        _ARCHIVE_FILE_CACHE[key] = found
        if len(_ARCHIVE_FILE_CACHE) > _ARCHIVE_FILE_CACHE_SIZE:
            _ARCHIVE_FILE_CACHE.popitem(last=False)
    return found


def archive_location(table: HudiTable) -> str:
    """Where the table's archived timeline lives: the LSM history (layout 2) or `archived/` (layout 1,
    `hoodie.archivelog.folder`)."""
    if table.layout.history_dir is not None:
        return table.layout.history_dir
    return f"{table.layout.timeline_dir}/{table.config.archive_folder}"


def archived_timeline_files(table: HudiTable) -> list[str]:
    """The archived timeline's files (data files and manifests), by name; empty when nothing was
    ever archived."""
    names = table.storage.list_file_names(archive_location(table))
    return sorted(n for n in names if not n.endswith(".crc"))
