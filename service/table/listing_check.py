"""Before a destructive step, the metadata table's listing is compared with storage's.

Planning lists through the MDT (`HudiTable.list_partitions`). A clean's deletes and a clustering's
replace are decided on file slices, so before them the partitions they touch are listed on storage
too and both views, built on the same timeline, must hold the same committed files with the same
sizes. Hudi's writers keep the two in step (`HoodieBackedTableMetadataWriter.update` before every
data commit); a difference means one of them is wrong, and a guess could delete the only copy of a
slice or replace a file group whose newer slice one side misses. So it stops the table
(`MetadataListingMismatchError`) instead. Two differences are expected and allowed:

- a log file of a file group's latest slice that storage has and the MDT lacks or holds smaller:
  a writer's deltacommit is appending to it (`HoodieAppendHandle`) and has not completed yet;
- a file the caller names as possibly gone: the files of pending cleans (Hudi's cleaner deletes them
  before it writes the clean to the MDT; an interrupted attempt of ours may have deleted some
  already), which the MDT drops when the clean completes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from service.errors import MetadataListingMismatchError
from service.table.fs_view import FileSystemView
from service.table.table import HudiTable
from service.table.timeline import Timeline


@dataclass(frozen=True)
class _Listed:
    partition: str
    name: str
    size: int
    open_log: bool  # a log file of its group's latest slice: a writer may be appending to it


def _committed_files(view: FileSystemView) -> dict[str, _Listed]:
    out: dict[str, _Listed] = {}
    for group in view.file_groups.values():
        latest = group.slices[0] if group.slices else None  # slices are newest first
        for file_slice in group.slices:
            if file_slice.base_file is not None:
                b = file_slice.base_file
                out[b.path] = _Listed(group.partition_path, b.file_name, b.size_bytes, False)
            for lf in file_slice.log_files:
                is_open = file_slice is latest
                out[lf.path] = _Listed(group.partition_path, lf.file_name, lf.size_bytes, is_open)
    return out


def check_listings_agree(
    table: HudiTable,
    mdt_view: FileSystemView,
    storage_view: FileSystemView,
    may_be_gone: Collection[str] = (),
) -> None:
    """Raise MetadataListingMismatchError at the first committed file the two views disagree on."""
    in_mdt = _committed_files(mdt_view)
    on_storage = _committed_files(storage_view)
    for path in sorted(set(in_mdt) | set(on_storage)):
        mdt, stored = in_mdt.get(path), on_storage.get(path)
        if mdt is not None and stored is not None and mdt.size == stored.size:
            continue
        if stored is None and path in may_be_gone:
            continue
        if stored is not None and stored.open_log and (mdt is None or stored.size > mdt.size):
            continue
        listed = stored if stored is not None else mdt
        assert listed is not None
        says_mdt = f"{mdt.size} bytes" if mdt is not None else "no such committed file"
        says_storage = f"{stored.size} bytes" if stored is not None else "no such committed file"
        raise MetadataListingMismatchError(
            f"table {table.name!r} at {table.base_uri}: the metadata table and storage disagree on "
            f"partition {listed.partition!r} file {listed.name!r}: the metadata table says {says_mdt}, "
            f"storage says {says_storage}; nothing is deleted or replaced on this table until they "
            "agree (Hudi's writers keep them in step; a file changed behind the metadata table's back "
            "needs Hudi's metadata table repaired or rebuilt)",
            table=table.name,
            partition=listed.partition,
            file_name=listed.name,
        )


def check_mdt_listing(
    table: HudiTable, timeline: Timeline, partitions: Iterable[str], may_be_gone: Collection[str] = ()
) -> None:
    """With the MDT served, list `partitions` on storage and compare (`check_listings_agree`); a
    table without the MDT is not listed at all."""
    if table.lists_through_mdt:
        verified_storage_view(table, timeline, partitions, may_be_gone)


def verified_storage_view(
    table: HudiTable, timeline: Timeline, partitions: Iterable[str], may_be_gone: Collection[str] = ()
) -> FileSystemView:
    """The storage view of `partitions`; with the MDT served, only once the MDT's listing of the same
    partitions agrees with it (`check_listings_agree`)."""
    partitions = sorted(set(partitions))
    storage_view = table.load_view(timeline, partitions, from_storage=True)
    if table.lists_through_mdt:
        check_listings_agree(table, table.load_view(timeline, partitions), storage_view, may_be_gone)
    return storage_view
