"""Parallel deletes of a clean's files (`hoodie.cleaner.parallelism` threads).

Every delete is verified (Hudi 0.15's `CleanActionExecutor.deleteFileAndGetResult`, HUDI-7655 and
HUDI-7867: a file still there after its delete fails the clean). On the local disk
`Storage.delete_file` checks each file itself; on other stores the deletes are verified by listing
each partition once after all its deletes: a listing is strongly consistent on S3 and served by the
NameNode on HDFS, like the per-file status it replaces, and it costs one LIST per partition instead
of a HEAD and a LIST per file.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from service.cleaning.records import PartitionOutcome
from service.errors import DeleteFailedError, HudiTableServiceError
from service.table.storage import Storage

_MAX_BATCH = 256
_LOCAL_WORKERS = 8
DeleteFn = Callable[[str], bool]  # base-relative path -> True if deleted now, False if it was already gone


@dataclass(frozen=True)
class DeleteReport:
    outcomes: Mapping[str, PartitionOutcome]
    failures: Mapping[str, str]  # path -> error: the delete raised or left the file (the clean fails)

    @property
    def deleted(self) -> int:
        return sum(len(o.deleted) for o in self.outcomes.values())

    @property
    def already_gone(self) -> int:
        return sum(len(o.already_gone) for o in self.outcomes.values())


def delete_files(
    storage: Storage,
    files: Mapping[str, Sequence[str]],
    parallelism: int,
    delete: DeleteFn | None = None,
) -> DeleteReport:
    """Delete every file; a file already gone counts as deleted. Errors are collected, not raised,
    so one unreadable file does not hide the outcome of the others. A `delete` given by the caller
    verifies its own deletes (the default one does, see the module docstring)."""
    verify_by_listing = delete is None and not storage.is_local
    remove: DeleteFn
    if delete is not None:
        remove = delete
    elif verify_by_listing:
        remove = functools.partial(storage.delete_file, verify=False)
    else:
        remove = storage.delete_file
    jobs = [(partition, path) for partition, paths in files.items() for path in paths]
    # On a local disk an unlink is a short syscall: beyond a few threads only their start-up costs
    # (200 threads, the default parallelism, took longer to start than 50,000 deletes); object stores
    # get the configured parallelism, their deletes being round trips.
    limit = min(parallelism, _LOCAL_WORKERS) if storage.is_local else parallelism
    workers = max(1, min(limit, len(jobs)))
    # Contiguous batches, a few per worker: one pool task per file cost more than its delete (a
    # 50,000-file clean spent seconds submitting futures); results keep the plan's order.
    size = max(1, min(_MAX_BATCH, -(-len(jobs) // (workers * 4))))
    batches = [jobs[i : i + size] for i in range(0, len(jobs), size)]

    def run_one(partition: str, path: str) -> tuple[str, str, bool | None, str]:
        try:
            return partition, path, remove(path), ""
        except (OSError, HudiTableServiceError) as exc:
            return partition, path, None, f"{type(exc).__name__}: {exc}"

    def run(batch: list[tuple[str, str]]) -> list[tuple[str, str, bool | None, str]]:
        return [run_one(partition, path) for partition, path in batch]

    deleted: dict[str, list[str]] = {p: [] for p in files}
    gone: dict[str, list[str]] = {p: [] for p in files}
    failures: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clean-delete") as pool:
        for results in pool.map(run, batches):
            for partition, path, removed, error in results:
                if removed is None:
                    failures[path] = error
                elif removed:
                    deleted[partition].append(posixpath.basename(path))
                else:
                    gone[partition].append(posixpath.basename(path))
    if verify_by_listing:
        _fail_files_still_listed(storage, files, deleted, gone, failures)
    outcomes = {p: PartitionOutcome(tuple(deleted[p]), tuple(gone[p])) for p in files}
    return DeleteReport(outcomes, failures)


def _fail_files_still_listed(
    storage: Storage,
    files: Mapping[str, Sequence[str]],
    deleted: dict[str, list[str]],
    gone: dict[str, list[str]],
    failures: dict[str, str],
) -> None:
    """Move every file reported deleted (or already gone) that a listing of its directory still
    shows into `failures`: one listing per directory, after every delete in it has returned."""
    for partition, paths in files.items():
        reported = set(deleted[partition]) | set(gone[partition])
        for directory in sorted({posixpath.dirname(p) for p in paths}):
            listed = set(storage.list_file_names(directory)) & reported
            for path in paths:
                name = posixpath.basename(path)
                if posixpath.dirname(path) != directory or name not in listed:
                    continue
                was_gone = name in gone[partition]
                (gone if was_gone else deleted)[partition].remove(name)
                outcome = "reported it already gone" if was_gone else "returned"
                error = DeleteFailedError(
                    f"{storage.qualify(path)} is still on storage after its delete {outcome}"
                )
                failures[path] = f"{type(error).__name__}: {error}"
