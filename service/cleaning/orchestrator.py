"""Cleaning end to end: finish pending clean plans, schedule a new one under the lock, execute it.

Order and locking follow Hudi's CleanActionExecutor / CleanPlanActionExecutor under its `TransactionManager`
(docs/format.md, "What Hudi does under the table lock"):
1. Every pending clean (requested or inflight, ours or a Java writer's) is finished first.
2. Scheduling runs under the table lock, on a timeline reloaded under it: trigger, plan, safety
   checks, then `T.clean.requested` (only when the plan deletes a file).
3. Execution: under the lock, the clean's heartbeat and `T.clean.inflight` (the plan's bytes
   again; a clean another executor is running is left alone, see `Cleaner._claim`), parallel
   deletes (a missing file counts as deleted), then `T.clean` under the lock, after checking the
   heartbeat never lapsed. If `T.clean` already exists another writer finished the same plan, which
   is fine. A file that could not be deleted (an error, or still there after its delete) fails the
   clean before `T.clean` is written.
A crash or a failed delete leaves a requested or inflight plan that the next run finishes; deletes
are idempotent, and nothing outside the plan is touched.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta, tzinfo

from service import trash
from service.cleaning.approvals import consume_approval
from service.cleaning.deleter import DeleteFn, delete_files
from service.cleaning.failed_writes import rollback_failed_writes
from service.cleaning.guard import CheckedPlan, PlanChecker, check_plan
from service.cleaning.records import (
    PartitionOutcome,
    StoredPlan,
    files_of_pending_cleans,
    read_stored_plan,
    to_clean_metadata,
    to_cleaner_plan,
)
from service.cleaning.results import CleanFile, CleanInstantResult, CleanRunResult, PartitionSummary
from service.cleaning.snapshot import load_clean_snapshot, read_last_clean
from service.clock import Clock, utc_now
from service.config.hoodie import HoodieConfig
from service.errors import CorruptTableError, DeleteFailedError, InstantExistsError, InstantOwnedError
from service.lock.base import TableLock
from service.table import codecs
from service.table.codecs.clean import CleanMetadata
from service.table.data_files import PARTITION_METAFILE_PREFIX
from service.table.heartbeat import Heartbeat, HeartbeatSettings, refuse_if_alive
from service.table.instant import Action, Instant, State
from service.table.listing_check import check_mdt_listing, verified_storage_view
from service.table.mdt.commit import clean_records, sync_files_partition
from service.table.mdt.index_reader import MdtReader
from service.table.mdt.index_sync import IndexRecords, clean_index_records
from service.table.mdt.mdt_format import MdtFormat
from service.table.paths import PathGuard
from service.table.properties import TableConfig
from service.table.table import HudiTable
from service.table.table_schema import latest_table_schema_of, schema_commit_path
from service.table.timeline import (
    InstantFiles,
    Timeline,
    complete_instant,
    create_instant_file,
    next_instant_time,
)
from strategies.cleaning import (
    DEFAULT_MAX_DELETE_FRACTION,
    CleanPlan,
    CleanPlanning,
    CleanTarget,
    LastClean,
    clean_due,
)
from strategies.cleaning.trigger import commits_since_last_clean

log = logging.getLogger(__name__)

_NOT_DUE = "fewer than hoodie.clean.max.commits={} commits since the last clean"


@dataclass(frozen=True)
class CleanOptions:
    dry_run: bool = False  # report what would be deleted; write and delete nothing
    force: bool = False  # run a plan the volume breaker refuses (never one touching the latest snapshot)
    max_delete_fraction: float = DEFAULT_MAX_DELETE_FRACTION
    # The daemon's `cleaning.max_interval_hours`: due at least this often beside Hudi's trigger.
    max_interval: timedelta | None = None
    # `cleaning.trash_retention_hours` (`clean --trash-retention-hours`): the files go to the trash
    # (`service.trash`) and are deleted once this passed; None: deleted at once, as Hudi deletes them.
    trash_retention: timedelta | None = None


@dataclass(frozen=True)
class _Scheduled:
    """A plan this run wrote, with what it was checked on: the timeline's instant files, the storage
    view and the check. Executing it right away needs no second listing when the timeline is the
    same but for its own requested file (`Cleaner._check_stored`)."""

    instant: Instant
    plan: CleanPlan
    files: Mapping[str, tuple[str, ...]]
    timeline_files: InstantFiles
    checked: CheckedPlan
    from_storage: bool  # the view was storage's listing (not the metadata table's)


def _planned_files(targets: Mapping[str, tuple[CleanTarget, ...]]) -> dict[str, tuple[str, ...]]:
    """Base-relative file paths per partition of a plan's (or a batch's) targets, as the guard checks
    and the plan stores them."""
    return {p: tuple(t.path for t in partition_targets) for p, partition_targets in targets.items()}


class Cleaner:
    """Runs cleaning on one table; `run()` is one pass (what the CLI and a daemon tick call)."""

    def __init__(
        self,
        table: HudiTable,
        config: HoodieConfig,
        lock: TableLock,
        zone: tzinfo,
        options: CleanOptions | None = None,
        now: Clock = utc_now,
        delete: DeleteFn | None = None,
        wall_clock: Callable[[], float] = time.time,
        on_execute: Callable[[], None] | None = None,
    ) -> None:
        self.table = table
        self.config = config
        self.lock = lock
        self.zone = zone
        self.options = options or CleanOptions()
        self.now = now
        self._delete = delete
        self.wall_clock = wall_clock  # judges other executors' heartbeats (real time, unlike `now`)
        self._owned: Heartbeat | None = None  # the heartbeat of the clean being executed
        # Called once this run owns a clean and starts deleting (the daemon's status shows the
        # table "executing" from there; before, the run only decides).
        self._on_execute = on_execute

    # ------------------------------------------------------------------ one pass
    def run(self) -> CleanRunResult:
        started = time.monotonic()
        timeline = self.table.load_timeline()
        # A failed writer's pending attempt would hold the earliest commit to retain back forever.
        if not self.options.dry_run and rollback_failed_writes(
            self.table, self.config, self.lock, self.zone, self.now, timeline
        ):
            timeline = self.table.load_timeline()
        pending = _pending_cleans(timeline)
        results = [self._finish(instant, timeline, resumed=True) for instant in pending]
        since: int | None = None
        if self.options.dry_run:
            skipped, preview = self._preview(timeline)
            results += preview
        elif not pending and (idle := self._not_due(timeline)) is not None:
            # Not due on this snapshot: no lock, no reload (a commit landing meanwhile counts next run).
            skipped, since = idle
        else:
            skipped, scheduled = self._schedule()
            if scheduled is not None:
                done = self._finish(scheduled.instant, self.table.load_timeline(), False, scheduled)
                results.append(replace(done, incremental=scheduled.plan.incremental))
        if self.options.trash_retention is not None and not self.options.dry_run:
            # Each pass, due or not: the trash empties on time even when nothing is cleaned.
            retention = self.options.trash_retention
            trash.purge(self.table.storage, self.now(), retention, cleans=True, lock=self.lock)
        return CleanRunResult(
            table=self.table.name,
            cleans=tuple(results),
            skipped_reason=skipped,
            dry_run=self.options.dry_run,
            duration_seconds=time.monotonic() - started,
            commits_since_last_clean=since,
        )

    def _not_due(self, timeline: Timeline) -> tuple[str, int] | None:
        """(why not, commits since the last clean) when the trigger says no clean on `timeline`."""
        last_clean = read_last_clean(self.table, timeline)
        if self._due(timeline, last_clean):
            return None
        return self._not_due_reason(), commits_since_last_clean(timeline, last_clean)

    def _due(self, timeline: Timeline, last_clean: LastClean | None) -> bool:
        interval = self.options.max_interval
        now = self.now().astimezone(self.zone) if interval is not None else None
        return clean_due(timeline, last_clean, self.config.clean, interval, now)

    def _not_due_reason(self) -> str:
        reason = _NOT_DUE.format(self.config.clean.max_commits)
        interval = self.options.max_interval
        if interval is not None:
            reason += f", and less than {interval.total_seconds() / 3600:g} h (cleaning.max_interval_hours)"
        return reason

    # ------------------------------------------------------------------ scheduling
    def _schedule(self) -> tuple[str | None, _Scheduled | None]:
        """Under the lock: plan on a reloaded timeline, check, write `T.clean.requested`."""
        with self.lock:
            timeline = self.table.load_timeline()
            reason, plan, checked = self._plan(timeline)
            if plan is None or checked is None:
                return reason, None
            instant_time = next_instant_time(timeline, self.now(), self.zone)
            requested = Instant(instant_time, Action.CLEAN, State.REQUESTED)
            content = codecs.encode(to_cleaner_plan(plan, self.table.storage))
            self.lock.check_held()
            create_instant_file(self.table.storage, self.table.layout, requested, content)
        scheduled = _Scheduled(
            requested,
            plan,
            _planned_files(plan.targets),
            timeline.files,
            checked,
            from_storage=not self.table.lists_through_mdt,
        )
        log.debug(
            "table %s: scheduled clean %s: %d files (%d bytes) in %d partitions, ECTR %s",
            self.table.name,
            instant_time,
            plan.file_count,
            checked.bytes_to_delete,
            len(plan.targets),
            plan.earliest_commit_to_retain_time or "none",
        )
        return None, scheduled

    def _plan(self, timeline: Timeline) -> tuple[str | None, CleanPlan | None, CheckedPlan | None]:
        clean = self.config.clean
        if not clean.allow_multiple and _pending_cleans(timeline):
            return "a clean is pending and hoodie.clean.allow.multiple is false", None, None
        last_clean = read_last_clean(self.table, timeline)
        if not self._due(timeline, last_clean):
            return self._not_due_reason(), None, None
        now = self.now()
        snapshot = load_clean_snapshot(self.table, timeline, clean, now, self.zone)
        # Planned and checked a batch of partitions at a time: one batch's view is held, not the table's.
        planning = CleanPlanning(snapshot, clean, now)
        checker = PlanChecker(self.table, "(new plan)")
        for view in snapshot.views:
            batch = planning.add(view)
            checker.add(_planned_files(batch), view)
        plan = planning.plan()
        if plan is None:
            return "nothing to clean", None, None
        files = _planned_files(plan.targets)
        # Planned on the MDT's listing when the table has one: a plan is written (and any cleaner,
        # Hudi's too, may run it) only once storage agrees on its partitions.
        check_mdt_listing(
            self.table,
            timeline,
            set(files) | set(plan.partitions_to_be_deleted),
            may_be_gone=files_of_pending_cleans(self.table, timeline),
        )
        checked = checker.finish(
            files,
            view_lists_every_partition=snapshot.listed_partitions is None,
            max_delete_fraction=self.options.max_delete_fraction,
            force=self.options.force,
        )
        return None, plan, checked

    def _preview(self, timeline: Timeline) -> tuple[str | None, list[CleanInstantResult]]:
        """Dry run: what a new plan would delete now (ignoring pending plans' effects); no lock taken."""
        reason, plan, checked = self._plan(timeline)
        if plan is None or checked is None:
            return reason, []
        files = _planned_files(plan.targets)
        return None, [
            CleanInstantResult(
                instant_time="",
                policy=plan.policy.value,
                earliest_commit_to_retain=plan.earliest_commit_to_retain_time,
                files_planned=plan.file_count,
                files_deleted=0,
                files_already_gone=0,
                bytes_deleted=0,
                partitions=_summaries(files, checked.present, plan.partitions_to_be_deleted),
                dry_run=True,
                incremental=plan.incremental,
                files=_files(files, checked.present),
            )
        ]

    # ------------------------------------------------------------------ execution
    def _finish(
        self, instant: Instant, timeline: Timeline, resumed: bool, scheduled: _Scheduled | None = None
    ) -> CleanInstantResult:
        """Execute one stored plan (requested or inflight) and complete it under the lock.
        `scheduled`: the plan as this run wrote and checked it, when it did."""
        started = time.monotonic()
        storage = self.table.storage
        requested = Instant(instant.timestamp, Action.CLEAN, State.REQUESTED)
        source = storage.qualify(self.table.layout.instant_path(requested))
        try:
            content = storage.read_bytes(self.table.layout.instant_path(requested))
        except FileNotFoundError:
            raise CorruptTableError(
                f"{source} is missing: the plan of pending clean {instant} cannot be read"
            ) from None
        guard = self.table.path_guard(source)
        stored = read_stored_plan(
            instant.timestamp, codecs.decode(codecs.CleanerPlan, content, source), storage, guard
        )
        checked = self._check_stored(instant, stored, timeline, scheduled)
        deletable_partitions = self._deletable_partitions(stored, guard)
        if self.options.dry_run:
            return self._result(stored, checked, None, resumed, started)
        heartbeat = self._claim(instant, content)
        if heartbeat is None:
            return self._result(stored, checked, None, resumed, started, completed_by_other=True)
        self._owned = heartbeat
        try:
            if self._on_execute is not None:
                self._on_execute()
            delete = self._delete if self.options.trash_retention is None else self._to_trash(instant, stored)
            report = delete_files(storage, stored.files, self.config.clean.parallelism, delete)
            if report.failures:
                # Nothing is recorded for a failed delete: `T.clean` is not written, so no metadata
                # ever lists the file, and the inflight plan is retried whole (Hudi 0.15 fails the
                # clean too).
                failures = sorted(report.failures.items())[:3]
                first = [f"{storage.qualify(p)} ({error})" for p, error in failures]
                raise DeleteFailedError(
                    f"table {self.table.name!r}: clean {instant.timestamp} could not delete "
                    f"{len(report.failures)} file(s), e.g. {'; '.join(first)}; the plan stays inflight and "
                    "the next run retries it"
                )
            if self.options.trash_retention is not None:
                trash.mark_completed(storage, trash.clean_run(instant.timestamp))
            self._delete_empty_partitions(deletable_partitions)
            metadata = to_clean_metadata(stored, report.outcomes, int((time.monotonic() - started) * 1000))
            completed_by_other = self._complete(instant, metadata)
            if checked.approval is not None:  # spent: the next plan over the limit needs its own
                consume_approval(storage, checked.approval)
        finally:
            self._owned = None
            heartbeat.stop()
        return self._result(stored, checked, report.outcomes, resumed, started, completed_by_other)

    def _to_trash(self, instant: Instant, stored: StoredPlan) -> DeleteFn:
        """The delete that moves each file of the plan to the clean's trash run instead: its manifest
        (every file still on storage, with its size) is written before the first move, or an earlier
        attempt's is carried on; `completed` is marked by the caller's success (`move_one` reports a
        file moved by an attempt before a stop as moved)."""
        storage = self.table.storage
        run = trash.clean_run(instant.timestamp)
        found = [(path, storage.status(path)) for paths in stored.files.values() for path in paths]
        why = f"clean {instant.timestamp} ({stored.policy})"
        entries = trash.entries_of(
            ((path, status.size, instant.timestamp, why) for path, status in found if status is not None), run
        )
        manifest = trash.TrashManifest(
            run=run, table=self.table.name, created_at=self.now().isoformat(), reason=why, entries=entries
        )
        by_path = {e.path: e for e in trash.manifest_for(storage, manifest).entries}

        def move(path: str) -> bool:
            entry = by_path.get(path)
            return entry is not None and trash.move_one(storage, entry)

        return move

    def _check_stored(
        self, instant: Instant, stored: StoredPlan, timeline: Timeline, scheduled: _Scheduled | None
    ) -> CheckedPlan:
        """The guard's check of a stored plan against storage as it is now.

        A plan this run has just written and checked on storage's listing is not listed again when
        the timeline holds the same instant files but its own requested file, and the stored plan
        names exactly the checked files: no instant was requested, completed or rolled back since,
        so every committed file is where the check saw it (a pending writer's new files are
        uncommitted, which the plan cannot name). On a 100,000-file table the second listing and
        check cost as much as the deletes.
        """
        if (
            scheduled is not None
            and scheduled.from_storage
            and scheduled.instant.timestamp == instant.timestamp
            and timeline.files.names() == scheduled.timeline_files.names() | {scheduled.instant.file_name}
            and {p: frozenset(f) for p, f in stored.files.items() if f}
            == {p: frozenset(f) for p, f in scheduled.files.items() if f}
        ):
            return scheduled.checked
        partitions = set(stored.files) | set(stored.partitions_to_be_deleted)
        # Storage's listing of the plan's partitions (pending writes' files included, which the guard
        # refuses), checked against the MDT's first when the table has one. The plan's own files may
        # be gone already: an interrupted attempt deleted them, the MDT drops them at completion.
        planned = {path for paths in stored.files.values() for path in paths}
        gone = planned | files_of_pending_cleans(self.table, timeline)
        view = verified_storage_view(self.table, timeline, partitions, may_be_gone=gone)
        return check_plan(
            self.table,
            instant.timestamp,
            stored.files,
            view,
            view_lists_every_partition=False,
            max_delete_fraction=self.options.max_delete_fraction,
            force=self.options.force,
        )

    def _claim(self, instant: Instant, content: bytes) -> Heartbeat | None:
        """Under the lock: take clean `instant` (heartbeat, then requested -> inflight); None if completed.

        One executor per clean: an inflight clean alive by `service.table.heartbeat.judge` (another
        cleaner's heartbeat, or Java's young inflight file: Java's cleans keep no heartbeat) raises
        `InstantOwnedError` and is left alone this run; Java's `CleanActionExecutor` would run it again.
        """
        storage = self.table.storage
        settings = HeartbeatSettings.from_config(self.config)
        heartbeat = Heartbeat(storage, instant.timestamp, settings, table_name=self.table.name)
        with self.lock:
            current = self.table.load_timeline().find(instant.timestamp, Action.CLEAN)
            if current is None:
                raise CorruptTableError(f"{storage.base_uri}: pending clean {instant} vanished")
            if current.is_completed:
                log.info("table %s: clean %s was completed by another writer", self.table.name, instant)
                return None
            refuse_if_alive(storage, self.table.layout, current, settings, self.wall_clock(), "executing")
            heartbeat.start()
            try:
                if current.state is State.REQUESTED:
                    self.lock.check_held()
                    # Java re-serialises the same plan into the inflight file (1.1.x leaves it empty).
                    inflight = content if self.table.format.clean_inflight_holds_plan else b""
                    create_instant_file(
                        storage, self.table.layout, current.with_state(State.INFLIGHT), inflight
                    )
            except InstantExistsError:
                heartbeat.stop()
                # A Java cleaner moves its plan to inflight without our lock: it runs it right now.
                raise InstantOwnedError(
                    f"{storage.base_uri}: not executing clean {instant.timestamp}: another writer has just "
                    "made it inflight",
                    instant=instant.timestamp,
                ) from None
            except BaseException:
                heartbeat.stop()
                raise
        return heartbeat

    def _complete(self, instant: Instant, metadata: CleanMetadata) -> bool:
        """Write `T.clean` under the lock, after the MDT deltacommit T (its tombstones: `files`, and the
        index partitions' against the table's latest schema) when the table has the metadata table;
        True when another writer had completed it already."""
        content = codecs.encode(metadata)
        with self.lock:
            timeline = self.table.load_timeline()
            # Looked up on the timeline, not by name: on layout 2 the completed name carries a
            # completion time only its writer knew.
            current = timeline.find(instant.timestamp, Action.CLEAN)
            if current is not None and current.is_completed:
                log.info(
                    "table %s: clean %s was completed by another writer", self.table.name, instant.timestamp
                )
                return True
            self.lock.check_held()
            if self._owned is not None:
                self._owned.check_owned()  # Java's HeartbeatUtils.abortIfHeartbeatExpired before a commit
            storage = self.table.storage

            def indexes(config: TableConfig, mdt: MdtFormat, _: MdtReader) -> IndexRecords:
                found = latest_table_schema_of(self.table, timeline)
                if found is None:
                    return clean_index_records(storage, config, mdt, metadata, instant.timestamp, None)
                source = schema_commit_path(self.table, found)
                return clean_index_records(
                    storage, config, mdt, metadata, instant.timestamp, found.text, schema_source=source
                )

            sync_files_partition(
                storage,
                timeline,
                instant.timestamp,
                clean_records(metadata),
                indexes,
                expected=self.table.format,
                now=self.now(),
                tz=self.zone,
            )
            pending = Instant(instant.timestamp, Action.CLEAN, State.INFLIGHT)
            try:
                complete_instant(
                    storage, self.table.layout, timeline, pending, content, self.now(), self.zone
                )
            except InstantExistsError:
                return True
        log.debug("table %s: completed clean %s", self.table.name, instant.timestamp)
        return False

    def _deletable_partitions(self, stored: StoredPlan, guard: PathGuard) -> list[str]:
        """The `partitionsToBeDeleted` directories that may be deleted, checked before any delete.

        Each path already passed the confinement rule (`read_stored_plan`). `""` is never a
        directory to delete: Java's `CleanActionExecutor` skips it since HUDI-6675 (deleting
        `basePath + "/" + ""` removed a whole non-partitioned table). An existing directory must be
        a partition of the table (it holds a partition metafile, as `FSUtils.getAllPartitionPaths`
        finds partitions); one that is not refuses the plan. An empty directory without a metafile
        (a partition delete interrupted after its files went) is left alone.
        """
        if not self.table.config.partition_fields:
            return []
        storage = self.table.storage
        deletable = []
        for partition in stored.partitions_to_be_deleted:
            if not partition:
                continue
            status = storage.status(partition)
            if status is None:
                continue  # already deleted
            if not status.is_dir:
                raise guard.refuse("partitionsToBeDeleted", partition, "it is not a directory")
            names = [s.name for s in storage.list_dir(partition)]
            if not any(_is_partition_metafile(name) for name in names):
                if names:
                    raise guard.refuse(
                        "partitionsToBeDeleted",
                        partition,
                        f"it is not a partition of the table (no {PARTITION_METAFILE_PREFIX} file)",
                    )
                continue
            deletable.append(partition)
        return deletable

    def _delete_empty_partitions(self, partitions: Sequence[str]) -> None:
        """Java deletes each `partitionsToBeDeleted` directory recursively (partitioned tables only);
        we delete it only when nothing but its partition metafile is left."""
        storage = self.table.storage
        for partition in partitions:
            stray = [
                s.name for s in storage.list_dir(partition) if s.is_dir or not _is_partition_metafile(s.name)
            ]
            if stray:
                log.warning(
                    "table %s: partition %r is planned for deletion but still holds %s; kept",
                    self.table.name,
                    partition,
                    stray[:5],
                )
                continue
            storage.delete_dir(partition)

    def _result(
        self,
        stored: StoredPlan,
        checked: CheckedPlan,
        outcomes: Mapping[str, PartitionOutcome] | None,
        resumed: bool,
        started: float,
        completed_by_other: bool = False,
    ) -> CleanInstantResult:
        done = list((outcomes or {}).items())
        return CleanInstantResult(
            instant_time=stored.instant_time,
            policy=stored.policy,
            earliest_commit_to_retain=stored.earliest_commit_to_retain,
            files_planned=stored.file_count,
            files_deleted=sum(len(o.deleted) for _, o in done),
            files_already_gone=sum(len(o.already_gone) for _, o in done),
            bytes_deleted=sum(checked.present.get(_join(p, n), 0) for p, o in done for n in o.deleted),
            partitions=_summaries(stored.files, checked.present, stored.partitions_to_be_deleted),
            resumed=resumed,
            completed_by_other_writer=completed_by_other,
            dry_run=self.options.dry_run,
            duration_seconds=time.monotonic() - started,
            files=_files(stored.files, checked.present),
        )


def _pending_cleans(timeline: Timeline) -> list[Instant]:
    return list(timeline.by_actions([Action.CLEAN]).pending())


def _is_partition_metafile(name: str) -> bool:
    """`.hoodie_partition_metadata[.parquet]` and its Hadoop checksum (`..hoodie_partition_metadata.crc`)."""
    return name.startswith(PARTITION_METAFILE_PREFIX) or name.startswith("." + PARTITION_METAFILE_PREFIX)


def _join(partition: str, name: str) -> str:
    return posixpath.join(partition, name) if partition else name


def _summaries(
    files: Mapping[str, Sequence[str]], present: Mapping[str, int], deleted_partitions: Sequence[str]
) -> tuple[PartitionSummary, ...]:
    return tuple(
        PartitionSummary(
            partition_path=partition,
            files=sum(1 for p in paths if p in present),
            bytes=sum(present.get(p, 0) for p in paths),
            partition_deleted=partition in deleted_partitions,
        )
        for partition, paths in sorted(files.items())
    )


def _files(files: Mapping[str, Sequence[str]], present: Mapping[str, int]) -> tuple[CleanFile, ...]:
    return tuple(
        CleanFile(partition, posixpath.basename(path), present.get(path, 0), path in present)
        for partition, paths in sorted(files.items())
        for path in sorted(paths)
    )
