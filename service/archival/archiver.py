"""Archive a table's timeline: the window (`planning`) moved to the archived timeline, then the active
instant files deleted, all under the table lock, as Hudi's archiver does it.

Order, as `TimelineArchiverV2.archiveIfRequired` runs it: the window is computed and the archived
timeline written first (with each instant's leftover marker folder removed before its record,
`deleteAnyLeftOverMarkers`); then every requested and inflight file of the archived instants, and only
then their completed files, in archive order (`deleteArchivedActions`: a completed file deleted before
its requested file would leave a phantom pending instant). A run stopped anywhere is finished by the
next: the instants the archive already holds while their completed files are still active are in the
next run's window whatever its trigger says (`strategies.archival.window`), and are not written again.

Layout 2 (table versions 8 and 9) writes the LSM history (`service.table.lsm_writer`), then merges
its layers and removes the snapshots and files they replaced (`compact_and_clean`). Layout 1
(version 6) writes one `archived/` log file of `HoodieArchivedMetaEntry` blocks per run
(`service.table.archived_log`), one record per instant file, in Hudi 0.15's order: completed
rollbacks, then cleans, then commits, each instant's requested, inflight and completed file. A rerun
after a kill leaves out the instant files the latest archive file already holds, so none is archived
twice. With `hoodie.archive.merge.enable`, small archive files are then merged
(`service.archival.archive_merge`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo

from service.archival.archive_merge import finish_last_merge, merge_small_files
from service.archival.planning import archival_window, archive_location
from service.config.hoodie import HoodieConfig
from service.errors import CorruptTableError
from service.lock.base import TableLock
from service.table.archived_log import (
    InstantFile,
    archived_keys,
    encode_archive_file,
    key_of,
    latest_archive_file_name,
    next_archive_file_name,
)
from service.table.instant import Action, Instant, State
from service.table.lsm_writer import ArchivedAction, compact_and_clean, write_archived_actions
from service.table.markers import marker_dir
from service.table.table import HudiTable
from service.table.timeline import Timeline, format_instant_time
from strategies.archival import ArchivalWindow


@dataclass(frozen=True)
class ArchiveResult:
    window: ArchivalWindow
    data_file: str | None = None
    files_deleted: int = 0
    dry_run: bool = False

    @property
    def archived(self) -> tuple[Instant, ...]:
        """The instants archived (with `dry_run`: that would be)."""
        return self.window.instants


def merges_small_files(table: HudiTable, config: HoodieConfig) -> bool:
    """Whether a run merges small archive files (`hoodie.archive.merge.enable`, layout 1). Such a run
    has work even when nothing is to be archived, as Hudi's `HoodieTimelineArchiver.archiveIfRequired`
    does: it settles a merge a killed run left, and merges."""
    return table.layout.history_dir is None and config.archival.merge_enable


def archive(
    table: HudiTable, config: HoodieConfig, lock: TableLock, zone: tzinfo, *, dry_run: bool = False
) -> ArchiveResult:
    """Archive what Hudi's archiver would archive now; with `dry_run`, only say what."""
    if dry_run:
        # Nothing is written: no lock a writer would wait on (as `check` computes the window).
        return ArchiveResult(archival_window(table, config, zone), dry_run=True)
    with lock:
        timeline = table.load_timeline()
        window = archival_window(table, config, zone, timeline)
        merging = merges_small_files(table, config)
        if merging:
            finish_last_merge(table.storage, archive_location(table))
        if not window.instants:
            if merging:  # Hudi merges even when nothing was archived
                merge_small_files(table.storage, archive_location(table), config.archival)
            return ArchiveResult(window)
        groups = _state_files(table, timeline, window.instants)
        for instant in window.instants:
            table.storage.delete_dir(marker_dir(instant.timestamp))
        # A stopped run's instants are in the archive already: only their active files are left.
        to_write = [group for group in groups if group[0].timestamp not in window.unfinished]
        data_file: str | None = None
        if table.layout.history_dir is not None:
            actions = [_archived_action(table, group) for group in to_write]
            if actions:
                data_file = write_archived_actions(table.storage, table.layout.history_dir, actions)
        else:
            files = [_instant_file(table, i, zone) for group in to_write for i in group]
            data_file = _write_archive_log(
                table, archive_location(table), files, config.archival.archival_batch_size
            )
        lock.check_held()
        deleted = _delete_state_files(table, groups)
        if merging:
            lock.check_held()
            merge_small_files(table.storage, archive_location(table), config.archival)
        if table.layout.history_dir is not None:
            # `TimelineArchiverV2.archiveIfRequired`: after the active files, the history's layers.
            archival = config.archival
            compact_and_clean(
                table.storage,
                table.layout.history_dir,
                archival.timeline_compaction_batch_size,
                archival.manifests_retained,
            )
    return ArchiveResult(window, data_file, deleted)


def _state_files(table: HudiTable, timeline: Timeline, instants: Sequence[Instant]) -> list[list[Instant]]:
    """Every instant file (requested, inflight, completed) of each archived instant, in that order."""
    by_key: dict[tuple[str, Action], list[Instant]] = defaultdict(list)
    for name in timeline.files:
        parsed = table.layout.parse_file_name(name)
        by_key[(parsed.timestamp, parsed.action.comparable)].append(parsed)
    return [sorted(by_key[(i.timestamp, i.action.comparable)], key=lambda s: int(s.state)) for i in instants]


def _archived_action(table: HudiTable, group: Sequence[Instant]) -> ArchivedAction:
    """`MetadataConversionUtils.createLSMTimelineInstant` of one instant's files."""
    completed = sorted(
        (i for i in group if i.state is State.COMPLETED), key=lambda i: i.completion_time or ""
    )
    if not completed:
        raise CorruptTableError(f"table {table.name!r}: {group[0]} has no completed file to archive")
    done = completed[-1]
    requested = next((i for i in group if i.state is State.REQUESTED), None)
    inflight = next((i for i in group if i.state is State.INFLIGHT), None)
    first_state = requested or inflight
    pending_action = first_state.action if first_state is not None else None
    plan: bytes | None = None
    if pending_action is Action.CLEAN:
        plan = _read(table, first_state)
    elif pending_action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        # The requested file's bytes, replaced by the inflight file's when that is not empty.
        plan = _read(table, inflight) or _read(table, requested) or None
    elif pending_action in (Action.COMPACTION, Action.LOG_COMPACTION) and requested is not None:
        plan = _read(table, requested)
    metadata = _read(table, done) or None
    # A legacy completed name (written before the table's upgrade to layout 2) carries no completion
    # time; Hudi takes the file's modification time, the service its requested time (what its own
    # completion-time view uses for such names).
    return ArchivedAction(
        done.timestamp, done.completion_time or done.timestamp, done.action.value, metadata, plan
    )


def _instant_file(table: HudiTable, instant: Instant, zone: tzinfo) -> InstantFile:
    path = table.layout.instant_path(instant)
    status = table.storage.status(path)
    data = _read(table, instant)
    if status is None or status.mtime_ns is None or data is None:
        raise CorruptTableError(f"{table.storage.qualify(path)} vanished while archiving")
    # `HoodieInstant.getStateTransitionTime`: the file's modification time in the writer's zone.
    moment = datetime.fromtimestamp(status.mtime_ns / 1e9, tz=zone)
    return InstantFile(instant, data, format_instant_time(moment), table.storage.qualify(path))


def _write_archive_log(table: HudiTable, folder: str, files: Sequence[InstantFile], batch: int) -> str | None:
    """One new archive log file of `files`, without those the latest file already holds (a rerun
    after a kill between writing and deleting); None when there is nothing left to write."""
    names = table.storage.list_file_names(folder) if table.storage.exists(folder) else []
    latest = latest_archive_file_name(names)
    held: frozenset[tuple[str, str, str]] = frozenset()
    if latest is not None:
        path = f"{folder}/{latest}"
        held = archived_keys(table.storage.read_bytes(path), table.storage.qualify(path))
    todo = [f for f in files if key_of(f) not in held]
    if not todo:
        return None
    path = f"{folder}/{next_archive_file_name(names)}"
    table.storage.create_if_absent(path, encode_archive_file(todo, batch))
    return path


def _read(table: HudiTable, instant: Instant | None) -> bytes | None:
    if instant is None:
        return None
    path = table.layout.instant_path(instant)
    try:
        return table.storage.read_bytes(path)
    except FileNotFoundError:
        raise CorruptTableError(f"{table.storage.qualify(path)} vanished while archiving") from None


def _delete_state_files(table: HudiTable, groups: Sequence[Sequence[Instant]]) -> int:
    """Requested and inflight files first, then the completed ones, in archive order."""
    pending = [i for group in groups for i in group if i.state is not State.COMPLETED]
    completed = [i for group in groups for i in group if i.state is State.COMPLETED]
    deleted = 0
    for instant in [*pending, *completed]:
        deleted += table.storage.delete_file_and_checksum(table.layout.instant_path(instant))
    return deleted
