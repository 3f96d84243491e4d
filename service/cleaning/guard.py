"""Checks every clean plan passes before any file is deleted (ours and plans other writers left).

1. Each path is confined to the table (`read_stored_plan` applies `service.table.paths`), lies in
   its partition's directory, and names a data file (base or log file); a present file must
   belong to a committed slice of a known file group (never a pending write's file). A missing
   file is fine: it is already deleted.
2. No file of the latest snapshot (refused always).
3. The volume breaker against every data file of the table (`--force` overrides; the table is then
   not counted: `total_files` covers the listed partitions only).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from service.errors import PlanRefusedError
from service.table.data_files import PARTITION_METAFILE_PREFIX, parse_base_file, parse_log_file
from service.table.fs_view import FileSystemView
from service.table.table import HudiTable
from strategies.cleaning import refuse_latest_snapshot_targets, refuse_volume


@dataclass(frozen=True)
class CheckedPlan:
    present: Mapping[str, int]  # planned paths still on storage -> size in bytes
    total_files: int  # data files the breaker compared against (the listed partitions' when forced)
    total_bytes: int

    @property
    def bytes_to_delete(self) -> int:
        return sum(self.present.values())


def check_plan(
    table: HudiTable,
    instant: str,
    files: Mapping[str, Sequence[str]],
    view: FileSystemView,
    *,
    view_lists_every_partition: bool,
    max_delete_fraction: float,
    force: bool,
) -> CheckedPlan:
    """Validate a plan's base-relative paths against a view listing at least the plan's partitions."""
    committed = committed_file_sizes(view)
    uncommitted = frozenset(view.uncommitted_files)
    present: dict[str, int] = {}
    for partition, paths in files.items():
        for path in paths:
            _check_data_file(table, instant, partition, path)
            if path in uncommitted:
                raise PlanRefusedError(
                    f"table {table.name!r}: clean {instant} names {table.storage.qualify(path)}, a file of a "
                    "pending or failed write, not of a committed file slice; refused"
                )
            if path in committed:
                present[path] = committed[path]
    refuse_latest_snapshot_targets(table.name, instant, present, view)
    bytes_to_delete = sum(present.values())
    total_files = len(committed) + len(uncommitted)
    total_bytes = sum(committed.values())
    if force:
        # `--force` runs the plan whatever its volume: the whole-table count below would only feed
        # a breaker that is off, at one LIST per partition of the table on an object store.
        return CheckedPlan(present, total_files, total_bytes)
    if not view_lists_every_partition and len(present) > max_delete_fraction * total_files:
        # Over the limit within the listed partitions only: count the whole table before deciding.
        total_files, total_bytes = _count_table_data_files(table)
    refuse_volume(
        table.name, instant, len(present), bytes_to_delete, total_files, total_bytes, max_delete_fraction
    )
    return CheckedPlan(present, total_files, total_bytes)


def _check_data_file(table: HudiTable, instant: str, partition: str, path: str) -> None:
    directory, name = posixpath.split(path)
    if directory != partition:
        raise PlanRefusedError(
            f"table {table.name!r}: clean {instant} lists {table.storage.qualify(path)} under partition "
            f"{partition!r}, outside that partition's directory; refused"
        )
    extension = table.config.base_file_extension
    is_base = name.endswith(extension) and not name.startswith(".")
    if is_base:
        parse_base_file(partition, name)  # CorruptTableError names the file when it is not one
        return
    if parse_log_file(partition, name) is None:
        raise PlanRefusedError(
            f"table {table.name!r}: clean {instant} would delete {table.storage.qualify(path)}, which is "
            "not a Hudi base or log file; refused"
        )


def committed_file_sizes(view: FileSystemView) -> dict[str, int]:
    """Path -> size of every file of every committed slice (live and replaced groups)."""
    out: dict[str, int] = {}
    for fg in view.file_groups.values():
        for fs in fg.slices:
            if fs.base_file is not None:
                out[fs.base_file.path] = fs.base_file.size_bytes
            for lf in fs.log_files:
                out[lf.path] = lf.size_bytes
    return out


def _count_table_data_files(table: HudiTable) -> tuple[int, int]:
    """Every base and log file the table lists, any version: (count, bytes). From storage that includes
    uncommitted files; through a served metadata table only committed ones, a smaller denominator that
    can only make the breaker trip sooner."""
    extension = table.config.base_file_extension
    count = size = 0
    for partition, statuses in table.list_partitions().items():
        for status in statuses:
            name = status.name
            if status.is_dir or name.startswith(PARTITION_METAFILE_PREFIX):
                continue
            if (name.endswith(extension) and not name.startswith(".")) or parse_log_file(partition, name):
                count += 1
                size += status.size
    return count, size
