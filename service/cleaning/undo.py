"""`clean --undo INSTANT`: the clean at INSTANT, which moved its files to the trash
(`cleaning.trash_retention_hours`), is taken back as if it never ran.

Hudi's readers refuse time travel before the latest completed clean's earliest commit to retain
(`TimelineUtils.validateTimestampAsOf`), and with the metadata table they list the files its `files`
partition lists. Putting the files back is therefore not enough for a snapshot the clean released to
be read again: the clean itself goes. Under the table lock:

1. checks, before anything changes: INSTANT is the latest clean of the active timeline (later cleans
   are undone first, newest first), no other clean is pending, its trash run exists and is not being
   emptied, and the metadata table has not compacted since its deltacommit INSTANT (whose records a
   compaction folds into a base file for good: `HoodieBackedTableMetadataWriter.validateRollback`);
2. every file goes back from the trash, byte for byte (`service.trash.undo`);
3. the metadata table forgets its deltacommit INSTANT (`service.table.mdt.rollback.forget_clean`),
   so its `files` partition lists the files again;
4. the clean's instant files go, completed first, then inflight, then requested.

A run killed anywhere is finished by running the undo again: the files already back stay, a clean
left inflight by step 4 (its completed file gone) is recognised by its undone trash run. Until the undo
is run again, the next clean resumes that inflight clean and moves the files back to the trash:
nothing is lost either way.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from datetime import datetime, tzinfo

from service import trash
from service.errors import PlanRefusedError, TrashRunMissingError
from service.lock.base import TableLock
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.mdt.rollback import check_clean_forgettable, forget_clean
from service.table.table import HudiTable

log = logging.getLogger(__name__)

_NOT_WHOLE = "it cannot be undone whole, and nothing was changed"


def undo_clean(
    table: HudiTable, lock: TableLock, instant_time: str, now: Callable[[], datetime], zone: tzinfo
) -> trash.TrashManifest:
    """Take clean `instant_time` back (see the module docstring); returns its trash manifest."""
    storage = table.storage
    run = trash.clean_run(instant_time)
    where = f"table {table.name!r}"
    with lock:
        timeline = table.load_timeline()
        cleans = timeline.by_actions([Action.CLEAN])
        mine = [i for i in cleans if i.timestamp == instant_time]
        resuming = bool(mine) and not mine[-1].is_completed and _undone(table, run)
        if not mine:
            raise PlanRefusedError(f"{where}: no clean {instant_time} on the active timeline to undo")
        later = [i.timestamp for i in cleans if i.timestamp > instant_time]
        if later:
            raise PlanRefusedError(
                f"{where}: clean {instant_time} is not the latest (then came {', '.join(later)}); undo "
                "those first, newest first (one still pending: once it completed)"
            )
        if not mine[-1].is_completed and not resuming:
            raise PlanRefusedError(
                f"{where}: clean {instant_time} is still pending; undo it once it completed"
            )
        try:
            manifest = trash.read_manifest(storage, run)
        except TrashRunMissingError:
            raise TrashRunMissingError(
                f"{where}: clean {instant_time} has no files in the trash: it ran without "
                "cleaning.trash_retention_hours (clean --trash-retention-hours), or its retention "
                "passed and they were deleted"
            ) from None
        if not resuming:
            _check_whole(table, mine[-1], manifest)
        check_clean_forgettable(storage, timeline, instant_time)
        trash.undo(storage, run)
        forget_clean(storage, timeline, instant_time, now=now(), tz=zone)
        current = mine[-1]
        if current.is_completed:  # completed first: a stop from here on leaves the clean inflight
            storage.delete_file_and_checksum(table.layout.instant_path(current))
        for state in (State.INFLIGHT, State.REQUESTED):
            storage.delete_file_and_checksum(
                table.layout.instant_path(Instant(instant_time, Action.CLEAN, state))
            )
    log.info("%s: clean %s undone, %d files back in place", where, instant_time, len(manifest.entries))
    return manifest


def _check_whole(table: HudiTable, clean: Instant, manifest: trash.TrashManifest) -> None:
    """Refuse, before anything changes, an undo that could not bring back every file the clean
    deleted: once the clean is off the timeline, Hudi's readers (through the metadata table too)
    expect every one of them again. Each file the clean's metadata records as deleted must be in the
    manifest, and each entry whole in the trash or back in place (a run whose moves did not complete,
    or a file missing from both, is refused by name)."""
    storage = table.storage
    where = f"table {table.name!r}: clean {clean.timestamp}"
    run_files = set(storage.list_file_names(trash.run_dir(manifest.run)))
    if trash.COMPLETED not in run_files:
        raise PlanRefusedError(
            f"{where}: its trash run {manifest.run} never completed; it cannot be undone whole"
        )
    recorded = {e.path for e in manifest.entries}
    metadata = table.facts_reader.metadata(clean, codecs.CleanMetadata)
    for partition, outcome in metadata.partition_metadata.items():
        for name in outcome.success_delete_files:
            path = f"{partition}/{posixpath.basename(name)}" if partition else posixpath.basename(name)
            if path not in recorded:
                raise PlanRefusedError(
                    f"{where}: deleted {path} without the trash; it cannot be undone whole"
                )
    for entry in manifest.entries:
        if storage.status(entry.trash) is None and storage.status(entry.path) is None:
            raise PlanRefusedError(
                f"{where}: {entry.path} is neither in the trash nor in place; {_NOT_WHOLE}"
            )


def _undone(table: HudiTable, run: str) -> bool:
    names = set(table.storage.list_file_names(trash.run_dir(run)))
    return trash.UNDOING in names or trash.UNDONE in names
