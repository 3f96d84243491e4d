"""`plan_clean`: the files a clean deletes, per partition, exactly as Hudi 0.15's `CleanPlanner`.

Rules (`CleanPlanner.getFilesToCleanKeepingLatestCommits` / `...KeepingLatestVersions`, checked against the
0.15.0 bytecode):
- KEEP_LATEST_COMMITS / KEEP_LATEST_BY_HOURS, once more completed commits exist than retained
  (0 for hours): every slice of a file group replaced before the ECTR; in other file groups every
  slice older than the ECTR except the latest slice and the newest slice before the ECTR.
- KEEP_LATEST_FILE_VERSIONS: every slice of every replaced file group; in other file groups all but
  the newest V slices (V-1 when a compaction is pending on the group).
- Never: a slice with a file named by a savepoint, or a slice a pending compaction still needs
  (base instant at or after the operation's). Beyond Hudi, which would break the pending operation:
  never a file a pending clustering plan reads (Hudi can delete those under KEEP_LATEST_BY_HOURS /
  FILE_VERSIONS when a writer updated the group after the plan was made), and the compaction rule
  holds for replaced file groups too (Hudi applies it to groups that are not replaced only).
- A scanned partition with no file group left, no uncommitted file and (commit policies) no
  replacecommit at or after the ECTR goes into `partitionsToBeDeleted`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from service.config.cleaning import CleanConfig, CleaningPolicy
from service.errors import TableServicesRefusedError
from service.table.data_files import parse_base_file, parse_log_file
from service.table.fs_view import FileGroup, FileSlice, FileSystemView
from service.table.instant import Instant
from strategies.cleaning.partitions import partitions_to_scan
from strategies.cleaning.plan import CleanPlan, CleanTarget
from strategies.cleaning.retention import earliest_commit_to_retain, previous_retained
from strategies.cleaning.snapshot import CleanSnapshot


def _filtered(partitions: Iterable[str], config: CleanConfig) -> list[str]:
    """Hudi 1.2's partition filter of a full-scan clean, refused with incremental mode on as Java
    refuses it (`CleanPlanner.getPartitionPathsForFullCleaning` throws then)."""
    if config.partition_filter is None:
        return list(partitions)
    if config.incremental_mode:
        raise TableServicesRefusedError(
            f"{config.partition_filter} applies to full-scan cleans only, and Hudi refuses it with "
            "hoodie.cleaner.incremental.mode=true",
            reason="config",
            fix="set hoodie.cleaner.incremental.mode=false for this table, or remove the partition filter",
        )
    return [p for p in partitions if config.filters_partition(p)]


def plan_clean(snapshot: CleanSnapshot, config: CleanConfig, now: datetime) -> CleanPlan | None:
    """The clean plan for `snapshot`, or None when it would delete no file (Hudi saves no plan then)."""
    planning = CleanPlanning(snapshot, config, now)
    for view in snapshot.views:
        planning.add(view)
    return planning.plan()


class CleanPlanning:
    """`plan_clean` a batch of partitions at a time: `add` each of the snapshot's views (disjoint
    partitions), then `plan`. Held between batches: the targets found so far and the partitions to
    delete, never a view (Java's `CleanPlanner` likewise plans partition by partition)."""

    def __init__(self, snapshot: CleanSnapshot, config: CleanConfig, now: datetime) -> None:
        timeline = snapshot.timeline
        previous = previous_retained(snapshot.last_clean)
        self.snapshot = snapshot
        self.config = config
        self.ectr = earliest_commit_to_retain(timeline, config, now, snapshot.timeline_zone, previous)
        self.scope = partitions_to_scan(
            timeline, self.ectr, snapshot.last_clean, snapshot.commit_partitions, config, snapshot.partitioned
        )
        listed = snapshot.listed_partitions
        if self.scope.partitions is None:
            if listed is not None:
                raise ValueError("a full clean scan needs a view that lists every partition")
            self.scanned = 0  # counted as the views come
        else:
            if listed is not None and not self.scope.partitions <= listed:
                missing = sorted(self.scope.partitions - listed)
                raise ValueError(f"the view does not list partitions {missing[:5]} the clean must scan")
            # Partitions the commits name that are gone from storage are scanned too (nothing found).
            self.scanned = len(self.scope.partitions)
        self.completed_commits = len(timeline.commits().completed())
        self.targets: dict[str, tuple[CleanTarget, ...]] = {}
        self.to_delete: list[str] = []

    def add(self, view: FileSystemView) -> dict[str, tuple[CleanTarget, ...]]:
        """Plan the partitions of `view` the clean scans; returns their targets (also kept)."""
        if self.scope.partitions is None:
            partitions = _filtered(view.partitions, self.config)
            self.scanned += len(partitions)
        else:
            partitions = [p for p in view.partitions if p in self.scope.partitions]
        rules = _PartitionRules(self.snapshot, view, self.config, self.ectr, self.completed_commits)
        batch: dict[str, tuple[CleanTarget, ...]] = {}
        for partition in sorted(partitions):
            files, delete_partition = rules.files_to_clean(partition)
            if files:
                batch[partition] = files
            if delete_partition:
                self.to_delete.append(partition)
        self.targets.update(batch)
        return batch

    def plan(self) -> CleanPlan | None:
        if not self.targets:
            return None
        last_completed = self.snapshot.timeline.commits().completed().last
        return CleanPlan(
            policy=self.config.policy,
            earliest_commit_to_retain=self.ectr,
            last_completed_commit_timestamp=last_completed.timestamp if last_completed else "",
            targets=dict(sorted(self.targets.items())),
            partitions_to_be_deleted=tuple(sorted(self.to_delete)),
            incremental=self.scope.incremental,
            partitions_scanned=self.scanned,
            savepointed_timestamps=self.snapshot.savepoint_timestamps,
        )


@dataclass
class _PartitionRules:
    snapshot: CleanSnapshot
    view: FileSystemView
    config: CleanConfig
    ectr: Instant | None
    completed_commits: int

    def __post_init__(self) -> None:
        view = self.view
        self.groups_by_partition: Mapping[str, list[FileGroup]] = _groups_by_partition(view)
        self.uncommitted_by_partition: Mapping[str, list[str]] = _uncommitted_by_partition(view)
        self.listed = frozenset(view.partitions)
        self.savepointed = view.savepointed_file_names
        self.pending_clustering = self.snapshot.pending_clustering_file_names
        # Most tables have no pending compaction and no savepoint: a slice then needs no lookup at all.
        facts = view.facts
        self.compacting = bool(facts.pending_compaction or facts.pending_log_compaction)
        self.protecting_names = bool(self.savepointed or self.pending_clustering)

    def files_to_clean(self, partition: str) -> tuple[tuple[CleanTarget, ...], bool]:
        if self.config.policy is CleaningPolicy.KEEP_LATEST_FILE_VERSIONS:
            return self._keep_latest_versions(partition)
        return self._keep_latest_commits(partition)

    # ------------------------------------------------------------------ policies
    def _keep_latest_commits(self, partition: str) -> tuple[tuple[CleanTarget, ...], bool]:
        retained = (
            self.config.commits_retained if self.config.policy is CleaningPolicy.KEEP_LATEST_COMMITS else 0
        )
        if self.completed_commits <= retained or self.ectr is None:
            return (), False
        ectr = self.ectr.timestamp
        groups = self.groups_by_partition.get(partition, [])
        out: list[CleanTarget] = []
        for fg in groups:
            if fg.replaced_by is not None and fg.replaced_by < ectr:
                out += self._slice_targets(fg.slices)
        active = [fg for fg in groups if fg.replaced_by is None]
        for fg in active:
            latest = fg.slices[0].base_instant_time
            newest_before_ectr = next(
                (s.base_instant_time for s in fg.slices if s.base_instant_time < ectr), None
            )
            for fs in fg.slices:
                if fs.base_instant_time in (latest, newest_before_ectr):
                    continue
                if fs.base_instant_time < ectr and not self._needed_for_pending_compaction(fs):
                    out += self._slice_targets((fs,))
        replaced_later = any(fg.replaced_by is not None and fg.replaced_by >= ectr for fg in groups)
        delete_partition = not active and not self._has_pending_files(partition) and not replaced_later
        return tuple(out), delete_partition

    def _keep_latest_versions(self, partition: str) -> tuple[tuple[CleanTarget, ...], bool]:
        groups = self.groups_by_partition.get(partition, [])
        out: list[CleanTarget] = []
        for fg in groups:
            if fg.replaced_by is not None:
                out += self._slice_targets(fg.slices)
        active = [fg for fg in groups if fg.replaced_by is None]
        for fg in active:
            keep = self.config.file_versions_retained
            if self.view.is_pending_compaction(fg.file_group_id):
                keep -= 1  # the pending (log) compaction's slice is one of the versions kept
            candidates = [fs for fs in fg.slices if not self._needed_for_pending_compaction(fs)]
            out += self._slice_targets(candidates[max(keep, 0) :])
        delete_partition = not active and not self._has_pending_files(partition)
        return tuple(out), delete_partition

    # ------------------------------------------------------------------ helpers
    def _slice_targets(self, slices: Iterable[FileSlice]) -> list[CleanTarget]:
        out: list[CleanTarget] = []
        for fs in slices:
            if self._protected(fs):
                continue
            if fs.base_file is not None:
                out.append(
                    CleanTarget(
                        fs.partition_path,
                        fs.base_file.path,
                        fs.file_id,
                        fs.base_instant_time,
                        fs.base_file.size_bytes,
                    )
                )
            out += [
                CleanTarget(fs.partition_path, lf.path, fs.file_id, fs.base_instant_time, lf.size_bytes)
                for lf in fs.log_files
            ]
        return out

    def _protected(self, fs: FileSlice) -> bool:
        """Savepointed (any file named by a savepoint), read by a pending clustering, or needed by a
        pending compaction (Hudi checks the last only for groups that are not replaced)."""
        if self._needed_for_pending_compaction(fs):
            return True
        if not self.protecting_names:
            return False
        return any(name in self.savepointed or name in self.pending_clustering for name in fs.file_names)

    def _needed_for_pending_compaction(self, fs: FileSlice) -> bool:
        """`isFileSliceNeededForPendingMajorOrMinorCompaction`: the slice a pending compaction or log
        compaction reads, and every newer slice (the new slice `C` writers append to)."""
        if not self.compacting:
            return False
        facts = self.view.facts
        fg_id = fs.file_group_id
        ops = (facts.pending_compaction.get(fg_id), facts.pending_log_compaction.get(fg_id))
        return any(op is not None and fs.base_instant_time >= op[1] for op in ops)

    def _has_pending_files(self, partition: str) -> bool:
        """Java lists the partition with every instant visible: any file of a non-replaced group counts.

        A partition that was not listed (it does not exist) counts as having pending files, as Java's
        failed listing does.
        """
        if partition not in self.listed:
            return True
        replaced = self.view.facts.replaced
        return any(
            (partition, fid) not in replaced for fid in self.uncommitted_by_partition.get(partition, ())
        )


def _groups_by_partition(view: FileSystemView) -> dict[str, list[FileGroup]]:
    out: dict[str, list[FileGroup]] = defaultdict(list)
    for fg_id in sorted(view.file_groups):
        fg = view.file_groups[fg_id]
        if fg.slices:
            out[fg.partition_path].append(fg)
    return out


def _uncommitted_by_partition(view: FileSystemView) -> dict[str, list[str]]:
    """Partition -> file ids of files written by pending or failed instants."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in view.uncommitted_files:
        partition, _, name = path.rpartition("/")
        log = parse_log_file(partition, name)
        file_id = log.file_id if log is not None else parse_base_file(partition, name).file_id
        out[partition].append(file_id)
    return out
