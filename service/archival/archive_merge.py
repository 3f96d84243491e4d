"""Merging small archive files of a version-6 table, as Hudi 0.14/0.15's `HoodieTimelineArchiver`
does when `hoodie.archive.merge.enable` is set (on storage without append, where every run writes a
new file).

- Before a run writes anything, a merge a stopped run left is settled
  (`verifyLastMergeArchiveFilesIfNecessary`): with every candidate still there, the merged file is
  removed (the merge is undone); with some gone, the merged file is complete and the rest of the
  candidates go. Then the plan goes. An unreadable plan is only deleted.
- After the run (whether or not it archived anything), the newest files up to the first larger than
  `hoodie.archive.merge.small.file.limit.bytes` are the candidates; with at least
  `hoodie.archive.merge.files.batch.size` of them, a plan naming them and the merged file (one version
  after the latest) is written, then the merged file (their records, newest file first), then the
  candidates are deleted, then the plan.
"""

from __future__ import annotations

import posixpath

from service.config.cleaning import ArchivalConfig
from service.errors import CorruptTableError
from service.table.archived_log import (
    MERGE_PLAN_FILE,
    ROLLOVER_WRITE_TOKEN,
    archive_file_version,
    decode_merge_plan,
    encode_merge_plan,
    encode_merged_archive,
)
from service.table.storage import Storage


def finish_last_merge(storage: Storage, folder: str) -> None:
    """Settle a merge a stopped run left behind (nothing when there is no plan)."""
    plan_rel = posixpath.join(folder, MERGE_PLAN_FILE)
    try:
        data = storage.read_bytes(plan_rel)
    except FileNotFoundError:
        return
    plan = decode_merge_plan(data)
    if plan is not None:
        paths, merged_name = plan
        candidates = [_in_folder(storage, folder, path, plan_rel) for path in paths]
        merged = _in_folder(storage, folder, merged_name, plan_rel)
        present = [c for c in candidates if storage.exists(c)]
        if len(present) == len(candidates):
            storage.delete_file_and_checksum(merged)  # the merged file may be partial: undo the merge
        elif storage.exists(merged):
            for rel in present:  # the merged file is whole: finish deleting what it replaced
                storage.delete_file_and_checksum(rel)
    storage.delete_file_and_checksum(plan_rel)


def _in_folder(storage: Storage, folder: str, path: str, plan_rel: str) -> str:
    """The plan's file as a table path: an archive file of `folder` (named by its full path, or by
    name for the merged file); anything else is refused, so a bad plan deletes nothing outside."""
    rel = posixpath.join(folder, posixpath.basename(path))
    if archive_file_version(posixpath.basename(path)) is None or path not in (
        storage.qualify(rel),
        posixpath.basename(path),
    ):
        raise CorruptTableError(
            f"{storage.qualify(plan_rel)}: {path!r} is no archive file of {storage.qualify(folder)}"
        )
    return rel


def merge_small_files(storage: Storage, folder: str, config: ArchivalConfig) -> str | None:
    """Merge the newest small archive files into one when there are enough; returns its name."""
    names = storage.list_file_names(folder) if storage.exists(folder) else []
    versions = sorted(((v, n) for n in names if (v := archive_file_version(n)) is not None), reverse=True)
    candidates: list[str] = []
    for _version, name in versions:
        status = storage.status(posixpath.join(folder, name))
        if status is None or status.size > config.merge_small_file_limit_bytes:
            break
        candidates.append(name)
    if not candidates or len(candidates) < config.merge_files_batch_size:
        return None
    merged_name = f".commits_.archive.{versions[0][0] + 1}_{ROLLOVER_WRITE_TOKEN}"
    paths = [storage.qualify(posixpath.join(folder, n)) for n in candidates]
    plan_rel = posixpath.join(folder, MERGE_PLAN_FILE)
    storage.create_if_absent(plan_rel, encode_merge_plan(paths, merged_name))
    files = [
        (storage.read_bytes(posixpath.join(folder, n)), p) for n, p in zip(candidates, paths, strict=True)
    ]
    storage.create_if_absent(
        posixpath.join(folder, merged_name), encode_merged_archive(files, config.archival_batch_size)
    )
    for name in candidates:
        storage.delete_file_and_checksum(posixpath.join(folder, name))
    storage.delete_file_and_checksum(plan_rel)
    return merged_name
