"""The trash `repair` moves orphan files to: on the table's own storage, outside every partition, with
a manifest per run, so that `repair --undo RUN` puts every file back byte for byte.

A run `R` lives in `.hoodie/.aux/hudi-table-service/trash/R/` (Hudi's timeline loaders and partition
discovery never descend into `.hoodie/.aux`):
- `manifest.json`, created whole (atomically) before any file moves: what moves, from where, when and
  why (`TrashManifest`);
- `files/<partition>/<name>`: the moved files;
- `completed`, written once every file of the manifest moved; `undone` once an undo put them back
  (`undoing` while it runs).

A move is a copy, its size verified, then the delete of the original; a run killed anywhere leaves
every file either still in place or recorded in a manifest with its copy, never both gone and
unrecorded. The next `repair --execute` settles it first: a file whose original is still there and
still an orphan is moved again (the copy redone), one that no longer is keeps its place and its copy
goes; an interrupted undo is finished. A manifest is untrusted input: one naming a path outside the
table's partitions or outside its run's folder, naming a file twice, or that does not parse is refused
by name, and nothing moves.
"""

from __future__ import annotations

import json
import logging
import posixpath
import re
import secrets
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, ValidationError

from service.errors import CorruptTableError, DeleteFailedError
from service.table.layout import METAFOLDER
from service.table.storage import Storage

log = logging.getLogger(__name__)

TRASH_DIR = f"{METAFOLDER}/.aux/hudi-table-service/trash"
MANIFEST = "manifest.json"
COMPLETED, UNDOING, UNDONE = "completed", "undoing", "undone"
RUN_ID = re.compile(r"\d{14}-[0-9a-f]{6}")  # `new_run_id`


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


def trash_path(run: str, path: str) -> str:
    return f"{run_dir(run)}/files/{path}"


def write_manifest(storage: Storage, manifest: TrashManifest) -> None:
    """Created whole before anything moves (`create_if_absent`: never a partial manifest)."""
    data = json.dumps(manifest.model_dump(), indent=2).encode()
    storage.create_if_absent(f"{run_dir(manifest.run)}/{MANIFEST}", data)


def read_manifest(storage: Storage, run: str) -> TrashManifest:
    """The manifest of run `run`, checked: CorruptTableError naming it when it does not parse, names a
    path outside the table's partitions or outside its run's folder, or names a file twice."""
    if RUN_ID.fullmatch(run) is None:
        raise CorruptTableError(f"{storage.qualify(TRASH_DIR)}: {run!r} is not a trash run's id; refused")
    rel = f"{run_dir(run)}/{MANIFEST}"
    where = storage.qualify(rel)
    try:
        manifest = TrashManifest.model_validate_json(storage.read_bytes(rel))
    except FileNotFoundError:
        raise CorruptTableError(f"{where}: no such trash run {run!r}") from None
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


def runs(storage: Storage) -> list[str]:
    """The trash's runs; a folder that is no run's (not named as `new_run_id` names them) is left
    alone, logged."""
    out = []
    for entry in storage.list_dir(TRASH_DIR):
        if not entry.is_dir:
            continue
        if RUN_ID.fullmatch(entry.name) is None:
            log.warning("%s: not a trash run; left alone", storage.qualify(entry.path))
            continue
        out.append(entry.name)
    return sorted(out)


def move(storage: Storage, manifest: TrashManifest) -> None:
    """Carry out a manifest just written, then mark the run completed."""
    for entry in manifest.entries:
        _move_one(storage, entry)
    storage.write_bytes(f"{run_dir(manifest.run)}/{COMPLETED}", b"")


def _move_one(storage: Storage, entry: TrashEntry) -> None:
    if storage.status(entry.path) is None:
        if storage.status(entry.trash) is None:  # deleted by someone else meanwhile: nothing to keep
            log.warning(
                "%s is neither in place nor in the trash; nothing to move", storage.qualify(entry.path)
            )
        return  # moved before a stop: its copy is whole (the original goes only after the check)
    _copy_whole(storage, entry.path, entry.trash, entry.bytes)
    storage.delete_file(entry.path)


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
    for run in runs(storage):
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
            _move_one(storage, entry)
        storage.write_bytes(f"{run_dir(run)}/{COMPLETED}", b"")
        settled.append(run)
    return settled


def undo(storage: Storage, run: str) -> TrashManifest:
    """Put run `run`'s files back, byte for byte, then mark it undone."""
    manifest = read_manifest(storage, run)
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


def purge(storage: Storage, now: datetime, retention: timedelta) -> list[str]:
    """Delete the trash of settled runs (completed or undone) created more than `retention` ago;
    returns the runs purged."""
    purged = []
    for run in runs(storage):
        names = set(storage.list_file_names(run_dir(run)))
        if MANIFEST not in names or (UNDOING in names and UNDONE not in names):
            continue  # a run stopped before its manifest, or an undo to finish first
        if COMPLETED not in names and UNDONE not in names:
            continue  # a move to settle first
        if now - datetime.fromisoformat(read_manifest(storage, run).created_at) < retention:
            continue
        storage.delete_dir(run_dir(run))
        purged.append(run)
    return purged


def entries_of(orphans: Iterable[tuple[str, int, str, str]], run: str) -> tuple[TrashEntry, ...]:
    return tuple(
        TrashEntry(path=p, trash=trash_path(run, p), bytes=b, instant=i, why=w) for p, b, i, w in orphans
    )
