"""Safety rules beyond Hudi's cleaner (`CleanPlanner` has neither), as pure checks.

- The latest snapshot is never a target: a plan naming any file of a live file group's latest
  slice (on merge-on-read with a pending compaction, also the slice it compacts, which snapshot
  readers merge with the new one) is refused, always.
- The volume breaker guards the history readers still use: a plan deleting more than a fraction
  (default 0.75) of the files of the table's live file groups (every retained version: base and log
  files of each committed slice) is held until that very plan is approved (`plan_digest`) or
  forced. Files of file groups replaced by a completed replacecommit (clustering, insert
  overwrite; `TimelineFacts.replaced`) count in neither the numerator nor the denominator: no
  reader reads them once the replacecommit completed, and Hudi's cleaner deletes them whole once
  retention releases them (`CleanPlanner.getReplacedFilesEligibleToClean`). Counting them made the
  normal clean after a clustering (which replaced most files) trip the breaker.
- A replacecommit's word is not taken blindly: a group it names as replaced that an instant at or
  after it still wrote to (a base file, or on versions 8 and 9 a log file, named by that instant) is
  no replaced group Hudi would produce (its writers refuse updates to groups under clustering, and a
  clustering conflicting with one fails), so a corrupt list naming live groups would let their files
  through uncounted. Such a group counts as live, and is named (`suspect_replaced_groups`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from service.errors import PlanRefusedError
from service.table.fs_view import FileGroup, FileSlice, FileSystemView

DIGEST_LENGTH = 20  # hex digits of a held plan's digest (`plan_digest`)


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


def live_file_sizes(view: FileSystemView) -> dict[str, int]:
    """Path -> size of every file of every committed slice of the view's live file groups (those no
    completed replacecommit replaced, and those it names although later instants wrote to them):
    what the volume breaker counts."""
    suspects = set(suspect_replaced_groups(view))
    return file_sizes(
        fg for fg in view.file_groups.values() if not fg.is_replaced or fg.file_group_id in suspects
    )


def file_sizes(groups: Iterable[FileGroup]) -> dict[str, int]:
    """Path -> size of every file of every committed slice of `groups` (a view's groups hold only
    committed slices). Asked per batch of a plan for every file of the batch: no tuple per slice."""
    out: dict[str, int] = {}
    for fg in groups:
        for fs in fg.slices:
            base = fs.base_file
            if base is not None:
                out[base.path] = base.size_bytes
            for lf in fs.log_files:
                out[lf.path] = lf.size_bytes
    return out


def suspect_replaced_groups(view: FileSystemView) -> tuple[tuple[str, str], ...]:
    """(partition, file id) of each group a completed replacecommit names as replaced although an
    instant at or after that replacecommit wrote one of its files (see the module docstring)."""
    return tuple(
        fg.file_group_id
        for fg in view.replaced_file_groups
        if fg.replaced_by is not None and _newest_write(fg.slices) >= fg.replaced_by
    )


def _newest_write(slices: Iterable[FileSlice]) -> str:
    """The newest instant a file name of these slices carries (a log file's name carries the
    deltacommit that wrote it on versions 8 and 9, the slice's base instant on 6)."""
    names = [fs.base_instant_time for fs in slices]
    names += [lf.base_instant_time for fs in slices for lf in fs.log_files]
    return max(names, default="")


@dataclass(frozen=True)
class VolumeCount:
    """What the volume breaker compares: the plan's deletions of files of live file groups against
    every file of the live file groups; `replaced_files` (deletions of replaced groups' files) is
    reported, not counted."""

    files_to_delete: int
    bytes_to_delete: int
    live_files: int
    live_bytes: int
    replaced_files: int = 0
    # "partition/fileId" of the groups a replacecommit names that count as live (`suspect_replaced_groups`).
    suspect_groups: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        return self.files_to_delete / self.live_files if self.live_files else 0.0

    def __add__(self, other: VolumeCount) -> VolumeCount:
        """The count of two disjoint sets of partitions (a plan checked a batch at a time)."""
        return VolumeCount(
            files_to_delete=self.files_to_delete + other.files_to_delete,
            bytes_to_delete=self.bytes_to_delete + other.bytes_to_delete,
            live_files=self.live_files + other.live_files,
            live_bytes=self.live_bytes + other.live_bytes,
            replaced_files=self.replaced_files + other.replaced_files,
            suspect_groups=tuple(sorted((*self.suspect_groups, *other.suspect_groups))),
        )


def count_volume(
    targets: Mapping[str, int], live: Mapping[str, int], suspects: Iterable[tuple[str, str]] = ()
) -> VolumeCount:
    """The breaker's count for `targets` (a plan's files present on storage -> size) over `live`
    (`live_file_sizes` of a view listing at least the targets' partitions): a target outside `live`
    is a file of a replaced file group (a plan names only committed slices' files). `suspects`: the
    view's `suspect_replaced_groups`, named in the count."""
    deleting = [size for path, size in targets.items() if path in live]
    return VolumeCount(
        files_to_delete=len(deleting),
        bytes_to_delete=sum(deleting),
        live_files=len(live),
        live_bytes=sum(live.values()),
        replaced_files=len(targets) - len(deleting),
        suspect_groups=tuple(sorted(f"{p}/{f}" if p else f for p, f in suspects)),
    )


def volume_refusal(table: str, instant: str, count: VolumeCount, max_fraction: float) -> str | None:
    """Why the breaker holds the plan (it deletes more than `max_fraction` of the files of the table's
    live file groups, `count_volume`); None when it does not."""
    if count.live_files <= 0 or count.fraction <= max_fraction:
        return None
    byte_share = f"{count.bytes_to_delete / count.live_bytes:.0%}" if count.live_bytes else "n/a"
    replaced = (
        f"; besides {count.replaced_files} file(s) of replaced file groups, not counted"
        if count.replaced_files
        else ""
    )
    suspects = (
        f"; counted as live: {len(count.suspect_groups)} file group(s) a replacecommit names as replaced "
        f"although a later instant wrote to them ({', '.join(count.suspect_groups[:5])})"
        if count.suspect_groups
        else ""
    )
    return (
        f"table {table!r}: clean {instant} would delete {count.files_to_delete} of the "
        f"{count.live_files} files of live file groups (every retained version; {count.fraction:.0%}; "
        f"{count.bytes_to_delete} of {count.live_bytes} bytes, {byte_share}{replaced}), "
        f"more than the limit of {max_fraction:.0%}{suspects}"
    )


def plan_digest(files: Mapping[str, Iterable[str]]) -> str:
    """What an approval of a held clean is bound to: the files the plan deletes (base-relative paths,
    in any order or grouping), as 20 hex digits of their SHA-256. A plan deleting one file more or
    less has another digest, so an approval never lets a different plan through."""
    digest = hashlib.sha256()
    for path in sorted({p for paths in files.values() for p in paths}):
        digest.update(path.encode())
        digest.update(b"\n")
    return digest.hexdigest()[:DIGEST_LENGTH]
