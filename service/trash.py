"""The trash `repair` moves orphan files to, and the clean its files when `cleaning.trash_retention_hours`
(or `clean --trash-retention-hours`) is set: on the table's own storage, outside every partition, with
a manifest per run, so that `repair --undo RUN` and `clean --undo INSTANT` put every file back byte
for byte. A repair's run is named by `new_run_id`; a clean's by its instant (`clean_run`), so that a
retried clean carries on with the run it started.

A run `R` lives in `.hoodie/.aux/hudi-table-service/trash/R/` (Hudi's timeline loaders and partition
discovery never descend into `.hoodie/.aux`):
- `manifest.json`, created whole (atomically) before any file moves: what moves, from where, when and
  why (`TrashManifest`);
- `files/<partition>/<name>`: the moved files;
- `completed`, written once every file of the manifest moved; `undone` once an undo put them back
  (`undoing` while it runs); `purging` once its retention passed and its deletion began (under the
  table lock, so an undo and a purge never overlap: an undo refuses a run being purged, a purge
  skips a run being undone).

A move is a copy, its size verified, then the delete of the original; a run killed anywhere leaves
every file either still in place or recorded in a manifest with its copy, never both gone and
unrecorded. The next `repair --execute` settles it first: a file whose original is still there and
still an orphan is moved again (the copy redone), one that no longer is keeps its place and its copy
goes; an interrupted undo is finished. A manifest is untrusted input: one naming a path outside the
table's partitions or outside its run's folder, naming a file twice, or that does not parse is refused
by name, and nothing moves.
"""

from __future__ import annotations

import contextlib
import json
import logging
import posixpath
import re
import secrets
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, ValidationError

from service.errors import CorruptTableError, DeleteFailedError, TrashRunMissingError
from service.table.layout import METAFOLDER
from service.table.storage import Storage

log = logging.getLogger(__name__)

TRASH_DIR = f"{METAFOLDER}/.aux/hudi-table-service/trash"
MANIFEST = "manifest.json"
COMPLETED, UNDOING, UNDONE, PURGING = "completed", "undoing", "undone", "purging"
REPAIR_RUN = re.compile(r"\d{14}-[0-9a-f]{6}")  # `new_run_id`
CLEAN_RUN = re.compile(r"clean-(\d{14}(?:\d{3})?)")  # `clean_run`


class TrashEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str  # base-relative: where the file was
    trash: str  # base-relative: where it is kept
    bytes: int
    instant: str
    why: str


class TrashManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    run: str
    table: str
    created_at: str
    reason: str
    entries: tuple[TrashEntry, ...]


def run_dir(run: str) -> str:
    return f"{TRASH_DIR}/{run}"


def new_run_id(now: datetime) -> str:
    return f"{now.strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(3)}"


def clean_run(instant_time: str) -> str:
    """The trash run of the clean at `instant_time`."""
    return f"clean-{instant_time}"


def is_run_id(run: str) -> bool:
    return REPAIR_RUN.fullmatch(run) is not None or CLEAN_RUN.fullmatch(run) is not None


def trash_path(run: str, path: str) -> str:
    return f"{run_dir(run)}/files/{path}"


def write_manifest(storage: Storage, manifest: TrashManifest) -> None:
    """Created whole before anything moves (`create_if_absent`: never a partial manifest)."""
    data = json.dumps(manifest.model_dump(), indent=2).encode()
    storage.create_if_absent(f"{run_dir(manifest.run)}/{MANIFEST}", data)


def manifest_for(storage: Storage, manifest: TrashManifest) -> TrashManifest:
    """The manifest a (possibly retried) run carries out: `manifest`, written now, or the one an earlier
    attempt of the same run wrote. That one is read back and checked; it may only name files the new
    one names (a retried clean's plan is the same stored plan; a file a first attempt moved is gone
    from the table and absent from the new manifest, but recorded in the old one)."""
    rel = f"{run_dir(manifest.run)}/{MANIFEST}"
    if storage.status(rel) is None:
        write_manifest(storage, manifest)
        return manifest
    earlier = read_manifest(storage, manifest.run)
    wanted = {e.path for e in manifest.entries}
    missing = [e.path for e in earlier.entries if e.path not in wanted]
    if missing and not all(storage.status(p) is None for p in missing):
        raise CorruptTableError(
            f"{storage.qualify(rel)}: an earlier attempt of run {manifest.run} names files this one does "
            f"not move, e.g. {missing[0]!r}; refused"
        )
    known = {e.path for e in earlier.entries}
    if any(e.path not in known for e in manifest.entries):
        raise CorruptTableError(
            f"{storage.qualify(rel)}: names other files than run {manifest.run} moves now; refused"
        )
    return earlier


def read_manifest(storage: Storage, run: str) -> TrashManifest:
    """The manifest of run `run`, checked: CorruptTableError naming it when it does not parse, names a
    path outside the table's partitions or outside its run's folder, or names a file twice."""
    if not is_run_id(run):
        raise CorruptTableError(f"{storage.qualify(TRASH_DIR)}: {run!r} is not a trash run's id; refused")
    rel = f"{run_dir(run)}/{MANIFEST}"
    where = storage.qualify(rel)
    try:
        manifest = TrashManifest.model_validate_json(storage.read_bytes(rel))
    except FileNotFoundError:
        raise TrashRunMissingError(f"{where}: no such trash run {run!r}") from None
    except ValidationError as exc:
        raise CorruptTableError(f"{where}: not a trash manifest: {exc.errors()[0]['msg']}") from None
    if manifest.run != run:
        raise CorruptTableError(f"{where}: names run {manifest.run!r}, not its own {run!r}; refused")
    seen: set[str] = set()
    for entry in manifest.entries:
        if not _inside_partitions(entry.path):
            raise CorruptTableError(
                f"{where}: {entry.path!r} is not a data file of the table's partitions; refused"
            )
        if entry.trash != trash_path(run, entry.path):
            raise CorruptTableError(f"{where}: {entry.trash!r} is not in run {run}'s trash folder; refused")
        if entry.path in seen:
            raise CorruptTableError(f"{where}: names {entry.path!r} twice; refused")
        seen.add(entry.path)
    return manifest


def _inside_partitions(path: str) -> bool:
    parts = path.split("/")
    return (
        bool(path)
        and not path.startswith("/")
        and "\\" not in path
        and ":" not in parts[0]
        and all(p not in ("", ".", "..") for p in parts)
        and parts[0] != METAFOLDER
        and posixpath.normpath(path) == path
    )


def runs(storage: Storage, *, cleans: bool) -> list[str]:
    """The trash's runs of the clean (`cleans`) or of `repair`; a folder that is no run's (not named as
    `new_run_id` or `clean_run` names them) is left alone, logged."""
    out = []
    for entry in storage.list_dir(TRASH_DIR):
        if not entry.is_dir:
            continue
        if not is_run_id(entry.name):
            log.warning("%s: not a trash run; left alone", storage.qualify(entry.path))
            continue
        if (CLEAN_RUN.fullmatch(entry.name) is not None) is cleans:
            out.append(entry.name)
    return sorted(out)


def move(storage: Storage, manifest: TrashManifest) -> None:
    """Carry out a manifest just written, then mark the run completed."""
    for entry in manifest.entries:
        move_one(storage, entry)
    mark_completed(storage, manifest.run)


def move_one(storage: Storage, entry: TrashEntry) -> bool:
    """Move one file; True when it is in the trash now (moved now, or by an attempt before a stop),
    False when it is neither in place nor in the trash (deleted by someone else)."""
    if storage.status(entry.path) is None:
        if storage.status(entry.trash) is None:  # deleted by someone else meanwhile: nothing to keep
            log.warning(
                "%s is neither in place nor in the trash; nothing to move", storage.qualify(entry.path)
            )
            return False
        return True  # moved before a stop: its copy is whole (the original goes only after the check)
    _copy_whole(storage, entry.path, entry.trash, entry.bytes)
    storage.delete_file(entry.path)
    return True


def mark_completed(storage: Storage, run: str) -> None:
    storage.write_bytes(f"{run_dir(run)}/{COMPLETED}", b"")


def _copy_whole(storage: Storage, src: str, dst: str, size: int) -> None:
    """Copy `src` to `dst` and check the copy holds `size` bytes, before anyone deletes `src`."""
    storage.copy_file(src, dst)
    copied = storage.status(dst)
    if copied is None or copied.size != size:
        raise DeleteFailedError(
            f"{storage.qualify(dst)}: the copy of {src} holds "
            f"{copied.size if copied else 'no'} bytes, not {size}; the original stays"
        )


def settle(storage: Storage, still_orphan: Callable[[str], bool]) -> list[str]:
    """Finish what stopped runs left: a move whose manifest has no `completed` (each original still in
    place is moved only if it is still an orphan; otherwise its copy goes and it keeps its place),
    and an undo that has `undoing` but no `undone`. Returns the runs settled."""
    settled = []
    for run in runs(storage, cleans=False):  # a clean's run is finished by the clean's retry
        names = set(storage.list_file_names(run_dir(run)))
        if MANIFEST not in names:
            continue  # a stop before the manifest: nothing moved
        if UNDOING in names and UNDONE not in names:
            undo(storage, run)
            settled.append(run)
            continue
        if COMPLETED in names or UNDONE in names:  # an undone run is never moved again
            continue
        manifest = read_manifest(storage, run)
        for entry in manifest.entries:
            if storage.status(entry.path) is not None and not still_orphan(entry.path):
                log.info("%s: no longer an orphan; it stays, its copy goes", storage.qualify(entry.path))
                storage.delete_file(entry.trash, verify=False)
                continue
            move_one(storage, entry)
        mark_completed(storage, run)
        settled.append(run)
    return settled


def undo(storage: Storage, run: str) -> TrashManifest:
    """Put run `run`'s files back, byte for byte, then mark it undone. The caller holds the table lock
    when a purge may run meanwhile (`purge` marks a run under it before deleting it)."""
    manifest = read_manifest(storage, run)
    if storage.status(f"{run_dir(run)}/{PURGING}") is not None:
        raise TrashRunMissingError(
            f"{storage.qualify(run_dir(run))}: run {run} is being emptied (its retention passed); "
            "its files cannot be put back"
        )
    storage.write_bytes(f"{run_dir(run)}/{UNDOING}", b"")
    for entry in manifest.entries:
        kept = storage.status(entry.trash)
        if kept is None:
            continue  # never copied (the move stopped first), or put back already
        if storage.status(entry.path) is None:
            _copy_whole(storage, entry.trash, entry.path, kept.size)
        storage.delete_file(entry.trash)
    storage.write_bytes(f"{run_dir(run)}/{UNDONE}", b"")
    return manifest


def purge(
    storage: Storage,
    now: datetime,
    retention: timedelta,
    *,
    cleans: bool,
    lock: AbstractContextManager[object] | None = None,
) -> list[str]:
    """Delete the trash of settled runs (completed or undone) of the clean (`cleans`) or of `repair`
    created more than `retention` ago; returns the runs purged. With `lock` (the table's), each run is
    re-checked and marked `purging` under it, so an undo taking the same lock never meets a run half
    deleted; the files are deleted outside it."""
    purged = []
    for run in runs(storage, cleans=cleans):
        if now - _named_time(run) < retention - _NAME_ZONE_MARGIN:
            continue  # young by its name: no read, no lock (the daemon looks at every cleaning tick)
        if not _purgeable(storage, run, now, retention):
            continue
        guard = lock if lock is not None else contextlib.nullcontext()
        with guard:
            if not _purgeable(storage, run, now, retention):
                continue
            storage.write_bytes(f"{run_dir(run)}/{PURGING}", b"")
        storage.delete_dir(run_dir(run))
        purged.append(run)
    return purged


# A run's name carries its time: a repair run's in UTC (`new_run_id`), a clean's as its instant, in the
# timeline's zone, at most 14 hours off UTC. Names only skip runs surely too young; the manifest's
# `created_at` decides.
_NAME_ZONE_MARGIN = timedelta(hours=15)


def _named_time(run: str) -> datetime:
    match = CLEAN_RUN.fullmatch(run)
    stamp = match.group(1)[:14] if match is not None else run[:14]
    return datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)


def _purgeable(storage: Storage, run: str, now: datetime, retention: timedelta) -> bool:
    names = set(storage.list_file_names(run_dir(run)))
    if PURGING in names:
        return True  # a purge stopped midway: finish it
    if MANIFEST not in names or (UNDOING in names and UNDONE not in names):
        return False  # a run stopped before its manifest, or an undo to finish first
    if COMPLETED not in names and UNDONE not in names:
        return False  # a move to settle first
    return now - datetime.fromisoformat(read_manifest(storage, run).created_at) >= retention


def entries_of(orphans: Iterable[tuple[str, int, str, str]], run: str) -> tuple[TrashEntry, ...]:
    return tuple(
        TrashEntry(path=p, trash=trash_path(run, p), bytes=b, instant=i, why=w) for p, b, i, w in orphans
    )
