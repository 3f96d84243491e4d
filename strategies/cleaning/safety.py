"""Safety rules beyond Hudi's cleaner (`CleanPlanner` has neither), as pure checks.

- The latest snapshot is never a target: a plan naming any file of a live file group's latest
  slice (on merge-on-read with a pending compaction, also the slice it compacts, which snapshot
  readers merge with the new one) is refused, always.
- The volume breaker: a plan deleting more than a fraction (default 0.75) of all data files under
  the table (every version, live or replaced) is refused unless forced.
"""

from __future__ import annotations

from collections.abc import Iterable

from service.errors import PlanRefusedError
from service.table.fs_view import FileSystemView


def latest_snapshot_paths(view: FileSystemView) -> frozenset[str]:
    """Base-relative paths of every file a snapshot reader reads: each live file group's latest
    slice, merged with the slice a pending compaction compacts."""
    return frozenset(path for fg in view.live_file_groups for fs in fg.snapshot_slices for path in fs.paths)


def refuse_latest_snapshot_targets(
    table: str, instant: str, paths: Iterable[str], view: FileSystemView
) -> None:
    """PlanRefusedError naming the first files when the plan would delete part of the latest snapshot."""
    latest = latest_snapshot_paths(view)
    hits = sorted(p for p in paths if p in latest)
    if hits:
        shown = ", ".join(hits[:5]) + (f" and {len(hits) - 5} more" if len(hits) > 5 else "")
        raise PlanRefusedError(
            f"table {table!r}: clean {instant} would delete {len(hits)} file(s) of the latest snapshot "
            f"({shown}); refused (no override)"
        )


def refuse_volume(
    table: str,
    instant: str,
    files_to_delete: int,
    bytes_to_delete: int,
    total_files: int,
    total_bytes: int,
    max_fraction: float,
) -> None:
    """PlanRefusedError when the plan deletes more than `max_fraction` of the table's data files."""
    if total_files <= 0 or files_to_delete / total_files <= max_fraction:
        return
    byte_share = f"{bytes_to_delete / total_bytes:.0%}" if total_bytes else "n/a"
    raise PlanRefusedError(
        f"table {table!r}: clean {instant} would delete {files_to_delete} of {total_files} data files "
        f"({files_to_delete / total_files:.0%}; {bytes_to_delete} of {total_bytes} bytes, {byte_share}), "
        f"more than the limit of {max_fraction:.0%}; check the cleaning policy and retention, or pass "
        "--force to run it anyway"
    )
