"""Checks every clean plan passes before any file is deleted (ours and plans other writers left).

1. Each path is confined to the table (`read_stored_plan` applies `service.table.paths`), lies in
   its partition's directory, and names a data file (base or log file); a present file must
   belong to a committed slice of a known file group (never a pending write's file). A missing
   file is fine: it is already deleted.
2. No file of the latest snapshot (refused always).
3. The volume breaker (`strategies.cleaning.safety`): the plan's files of live file groups against
   every file of the table's live file groups, every retained version; files of file groups a
   completed replacecommit replaced count on neither side. When the view lists only some
   partitions (an incremental clean, the plan's partitions at execution) and the plan is over the
   limit within them, the whole table's view is loaded to count before deciding (not with
   `--force`: `volume` then covers the listed partitions only). A plan over the limit is held
   (`VolumeBreakerError`, with its digest and counts) unless that very plan was approved
   (`service.cleaning.approvals`) or the run is forced.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.cleaning.approvals import approved_digests
from service.errors import PlanRefusedError, VolumeBreakerError
from service.table.data_files import parse_base_file, parse_log_file
from service.table.fs_view import FileSystemView
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.cleaning import (
    VolumeCount,
    count_volume,
    file_sizes,
    live_file_sizes,
    plan_digest,
    refuse_latest_snapshot_targets,
    suspect_replaced_groups,
    volume_refusal,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckedPlan:
    present: Mapping[str, int]  # planned paths still on storage -> size in bytes
    volume: VolumeCount  # the breaker's count (the listed partitions' when forced)
    approval: str | None = None  # the digest of the approval that let the plan pass the breaker

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
    checker = PlanChecker(table, instant)
    checker.add(files, view)
    return checker.finish(
        files,
        view_lists_every_partition=view_lists_every_partition,
        max_delete_fraction=max_delete_fraction,
        force=force,
    )


class PlanChecker:
    """`check_plan` a batch of partitions at a time: `add` each batch's files with the view of its
    partitions (disjoint batches, `HudiTable.iter_views`), then `finish` with the whole plan. Held
    between batches: the present files' sizes and the breaker's counts, never a view."""

    def __init__(self, table: HudiTable, instant: str) -> None:
        self.table = table
        self.instant = instant
        self.present: dict[str, int] = {}
        self.volume = VolumeCount(0, 0, 0, 0)
        self.listed: set[str] = set()
        self.timeline: Timeline | None = None

    def add(self, files: Mapping[str, Sequence[str]], view: FileSystemView) -> None:
        """Rules 1 and 2 for `files` (the plan's paths in `view`'s partitions), and the breaker's
        count of `view`'s live file groups."""
        table, instant = self.table, self.instant
        live = live_file_sizes(view)
        # Every group is live or replaced: the files a plan may name, with no second walk of the view.
        committed = live | file_sizes(view.replaced_file_groups)
        uncommitted = frozenset(view.uncommitted_files)
        present: dict[str, int] = {}
        for partition, paths in files.items():
            for path in paths:
                _check_data_file(table, instant, partition, path)
                if path in uncommitted:
                    raise PlanRefusedError(
                        f"table {table.name!r}: clean {instant} names {table.storage.qualify(path)}, a file "
                        "of a pending or failed write, not of a committed file slice; refused"
                    )
                if path in committed:
                    present[path] = committed[path]
        refuse_latest_snapshot_targets(table.name, instant, present, view)
        suspects = suspect_replaced_groups(view)
        if suspects:
            named = ", ".join(f"{p}/{f}" for p, f in suspects[:5])
            log.warning(
                "table %s: clean %s: %d file group(s) a replacecommit names as replaced were written to by "
                "a later instant (%s); the volume breaker counts them as live",
                table.name, instant, len(suspects), named,
            )  # fmt: skip
        self.volume = self.volume + count_volume(present, live, suspects)
        self.present.update(present)
        self.listed.update(view.partitions)
        self.timeline = view.timeline

    def finish(
        self,
        files: Mapping[str, Sequence[str]],
        *,
        view_lists_every_partition: bool,
        max_delete_fraction: float,
        force: bool,
    ) -> CheckedPlan:
        """Rule 3, the volume breaker, for the whole plan `files` once every batch was added."""
        table, instant, volume = self.table, self.instant, self.volume
        if force:
            # `--force` runs the plan whatever its volume: the whole-table count below would only feed
            # a breaker that is off, at one LIST per partition of the table on an object store.
            return CheckedPlan(self.present, volume)
        if not view_lists_every_partition and volume.fraction > max_delete_fraction:
            # Over the limit within the listed partitions only: count the rest of the table before
            # deciding. Its views, not a raw listing: which files belong to live file groups is the
            # view's to say (through the metadata table when served, as the planner lists). The listed
            # partitions keep the count of the views the plan was checked on.
            for whole in table.iter_views(self.timeline):
                rest = [p for p in whole.partitions if p not in self.listed]
                if rest:
                    volume = volume + count_volume({}, *_live_in(whole, frozenset(rest)))
        reason = volume_refusal(table.name, instant, volume, max_delete_fraction)
        if reason is None:
            return CheckedPlan(self.present, volume)
        digest = plan_digest(files)
        if digest in approved_digests(table.storage):  # listed only for a plan over the limit
            log.info(
                "table %s: clean %s passes the volume breaker by its approval %s", table.name, instant, digest
            )
            return CheckedPlan(self.present, volume, approval=digest)
        counts = {
            "files_to_delete": volume.files_to_delete,
            "live_files": volume.live_files,
            "bytes_to_delete": volume.bytes_to_delete,
            "live_bytes": volume.live_bytes,
            "replaced_files": volume.replaced_files,
            "fraction": round(volume.fraction, 4),
            "limit": max_delete_fraction,
            "partitions": {p: len(paths) for p, paths in sorted(files.items()) if paths},
        }
        approve = approve_command(table, digest)
        raise VolumeBreakerError(
            f"{reason}; held: approve exactly this plan once with `{approve}` after checking the cleaning "
            "policy and retention (or pass --force)",
            digest=digest,
            counts=counts,
            approve=approve,
        )


def _live_in(
    view: FileSystemView, partitions: frozenset[str]
) -> tuple[dict[str, int], tuple[tuple[str, str], ...]]:
    """`live_file_sizes` and `suspect_replaced_groups` of `view`, restricted to `partitions`."""
    live = live_file_sizes(view)
    live = {path: size for path, size in live.items() if posixpath.dirname(path) in partitions}
    suspects = tuple(fg for fg in suspect_replaced_groups(view) if fg[0] in partitions)
    return live, suspects


def held_json(exc: VolumeBreakerError) -> dict[str, Any]:
    """A held clean as `clean --json`, `check` and the daemon's status show it."""
    return {"digest": exc.digest, **exc.counts, "approve": exc.approve, "reason": str(exc)}


def approve_command(table: HudiTable, digest: str) -> str:
    """The command that approves the held plan `digest` of `table` once."""
    return f"hudi-table-service clean --base-path {table.base_uri} --approve {digest}"


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
