"""Parallel deletes of a clean's files (`hoodie.cleaner.parallelism` threads)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from service.cleaning.records import PartitionOutcome
from service.errors import HudiTableServiceError
from service.table.storage import Storage

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
    so one unreadable file does not hide the outcome of the others."""
    remove = delete or storage.delete_file
    jobs = [(partition, path) for partition, paths in files.items() for path in paths]
    workers = max(1, min(parallelism, len(jobs)))

    def run(job: tuple[str, str]) -> tuple[str, str, bool | None, str]:
        partition, path = job
        try:
            return partition, path, remove(path), ""
        except (OSError, HudiTableServiceError) as exc:
            return partition, path, None, f"{type(exc).__name__}: {exc}"

    deleted: dict[str, list[str]] = {p: [] for p in files}
    gone: dict[str, list[str]] = {p: [] for p in files}
    failures: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clean-delete") as pool:
        for partition, path, removed, error in pool.map(run, jobs):
            if removed is None:
                failures[path] = error
            elif removed:
                deleted[partition].append(posixpath.basename(path))
            else:
                gone[partition].append(posixpath.basename(path))
    outcomes = {p: PartitionOutcome(tuple(deleted[p]), tuple(gone[p])) for p in files}
    return DeleteReport(outcomes, failures)
