"""Decode timeline metadata into the facts the file-system view needs, caching immutable files.

Completed instant files and `.requested` plans never change once written, so their decoded form is
cached by file name: a daemon tick re-lists `.hoodie` but decodes only what is new.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TypeVar, cast

from service.errors import CorruptTableError
from service.table.clustering_plan import PlannedClustering, decode_clustering_plan
from service.table.codecs import (
    AvroRootModel,
    CommitMetadata,
    CommitSummary,
    CompactionPlan,
    ReplaceCommitMetadata,
    RequestedReplaceMetadata,
    SavepointMetadata,
    decode,
    decode_commit_summary,
)
from service.table.codecs.json_stream import CHUNK_BYTES
from service.table.fs_view import FileGroupId, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.layout import TimelineLayout
from service.table.paths import PathGuard
from service.table.storage import Storage
from service.table.timeline import Timeline

M = TypeVar("M", bound=AvroRootModel | CommitMetadata)
V = TypeVar("V")

_CACHE_LIMIT = 20_000


class TimelineFactsReader:
    def __init__(
        self, storage: Storage, layout: TimelineLayout, path_guard: Callable[[str], PathGuard]
    ) -> None:
        self._storage = storage
        self._layout = layout
        self._path_guard = path_guard  # `HudiTable.path_guard`: confinement for paths of a stored file
        # Decoded and derived values of immutable instant files, per kind, by instant. An instant
        # (requested time, action, state) names one file for good: a completed instant file is never
        # rewritten, and Java never completes a requested time twice (`createNewInstantTime` moves
        # on past a rolled-back or restored one). Keyed by the timeline's own `Instant`s, an entry
        # costs its dict slot: a daemon keeps these for every completed commit of every table.
        self._cache: dict[str, dict[Instant, object]] = {}
        self._entries = 0
        self._last_summary: CommitSummary | None = None
        self._partition_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._summaries: dict[tuple[object, ...], CommitSummary] = {}  # by `CommitSummary.value_key`
        self._lock = threading.Lock()

    def metadata(self, instant: Instant, model_type: type[M]) -> M:
        """Decode the file of `instant` in its current state (cached when immutable)."""
        return self._decode_file(instant, model_type)

    def requested_file(self, instant: Instant) -> Instant | None:
        """The `.requested` instant file of `instant` on storage, None when it has none. On layout 2 a
        clustering is requested as `clustering` and completes as `replacecommit` (an insert overwrite
        is requested as `replacecommit`): for a replacecommit both are looked for."""
        candidates = [Instant(instant.timestamp, instant.action, State.REQUESTED)]
        if self._layout.plans_clustering_apart and instant.action is Action.REPLACE_COMMIT:
            candidates.insert(0, Instant(instant.timestamp, Action.CLUSTERING, State.REQUESTED))
        for requested in candidates:
            if self._storage.exists(self._layout.instant_path(requested)):
                return requested
        return None

    def requested_plan(self, instant: Instant, model_type: type[M]) -> M | None:
        """Decode the `.requested` file of a pending instant (plans are read from there, as Java does)."""
        requested = self.requested_file(instant)
        if requested is None:
            return None
        return self._decode_file(requested, model_type)

    def derived(self, instant: Instant, kind: str, compute: Callable[[], V]) -> V:
        """`compute()`, a value read from the file of `instant` alone, cached like decoded files."""
        hit = self._cached(instant, kind)
        if hit is not None:
            return cast(V, hit)
        value = compute()
        if instant.state is State.COMPLETED or instant.state is State.REQUESTED:
            with self._lock:
                if self._entries >= _CACHE_LIMIT:
                    self._cache.clear()
                    self._partition_sets.clear()
                    self._summaries.clear()
                    self._entries = 0
                self._entries += 1
                self._cache.setdefault(kind, {})[instant] = value
        return value

    def _cached(self, instant: Instant, kind: str) -> object | None:
        with self._lock:
            of_kind = self._cache.get(kind)
            return None if of_kind is None else of_kind.get(instant)

    def is_clustering_plan(self, instant: Instant) -> bool:
        """Whether the `.requested` file of `instant` is a clustering plan; only the answer is cached
        (a completed clustering's plan can list thousands of slices nobody reads again)."""
        requested = self.requested_file(instant)
        if requested is None:
            return False
        return self.derived(
            requested, "is_clustering", lambda: self._read(requested, RequestedReplaceMetadata).is_clustering
        )

    def clustering_plan(self, instant: Instant, *, file_names_only: bool) -> PlannedClustering | None:
        """The typed clustering plan the `.requested` file of `instant` holds, confined to the table
        (`decode_clustering_plan`, whose `file_names_only` is passed on); None when there is no such
        file or it is not a clustering plan (cached like decoded files)."""
        requested = self.requested_plan(instant, RequestedReplaceMetadata)
        if requested is None or not requested.is_clustering or requested.clustering_plan is None:
            return None
        requested_file = self.requested_file(instant)
        assert requested_file is not None  # requested_plan found it
        guard = self._path_guard(self._storage.qualify(self._layout.instant_path(requested_file)))
        kind = f"{PlannedClustering.__name__}:{'names' if file_names_only else 'paths'}"
        return self.derived(
            requested_file,
            kind,
            lambda: decode_clustering_plan(requested, guard, file_names_only=file_names_only),
        )

    def _decode_file(self, instant: Instant, model_type: type[M]) -> M:
        return self.derived(instant, model_type.__name__, lambda: self._read(instant, model_type))

    def _read(self, instant: Instant, model_type: type[M]) -> M:
        return decode(
            model_type,
            self._read_bytes(instant),
            self._storage.qualify(self._layout.instant_path(instant)),
            avro_commit=self._layout.commit_metadata_is_avro(instant),
        )

    def _read_bytes(self, instant: Instant) -> bytes:
        path = self._layout.instant_path(instant)
        try:
            return self._storage.read_bytes(path)
        except FileNotFoundError:
            raise self._vanished(path) from None

    def _read_chunks(self, instant: Instant) -> Iterator[bytes]:
        """`_read_bytes` as the caller takes it, `CHUNK_BYTES` at a time."""
        path = self._layout.instant_path(instant)
        try:
            yield from self._storage.read_chunks(path, CHUNK_BYTES)
        except FileNotFoundError:
            raise self._vanished(path) from None

    def _vanished(self, path: str) -> CorruptTableError:
        return CorruptTableError(f"{self._storage.qualify(path)} vanished while reading the timeline")

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        """Completed commit/deltacommit (CommitMetadata) or replacecommit (ReplaceCommitMetadata)."""
        model = ReplaceCommitMetadata if instant.action is Action.REPLACE_COMMIT else CommitMetadata
        return self.metadata(instant, model)

    def commit_summary(self, instant: Instant) -> CommitSummary:
        """What planners read of a completed commit/deltacommit/replacecommit, without its write stats;
        fails on exactly the files `commit_metadata` fails on, with the same error."""
        return self.derived(instant, CommitSummary.__name__, lambda: self._summarize(instant))

    def _summarize(self, instant: Instant) -> CommitSummary:
        replace = instant.action is Action.REPLACE_COMMIT
        model = ReplaceCommitMetadata if replace else CommitMetadata
        decoded = self._cached(instant, model.__name__)
        if isinstance(decoded, CommitMetadata):  # already decoded in full: no need to read the file again
            summary = CommitSummary.of(decoded)
        else:
            source = self._storage.qualify(self._layout.instant_path(instant))
            avro = self._layout.commit_metadata_is_avro(instant)
            summary = decode_commit_summary(self._read_chunks(instant), source, replace, avro=avro)
        # Commits of a table mostly write the same partitions with the same extra metadata: equal
        # summaries are one object (a summary names no instant), and a new one shares what equals the
        # last one's, and one tuple of each set of partitions written.
        key = summary.value_key()
        with self._lock:
            known = self._summaries.get(key)
            if known is not None:
                return known
            written = self._partition_sets.setdefault(summary.partitions_written, summary.partitions_written)
            summary = summary.sharing(self._last_summary, written)
            self._last_summary = self._summaries[key] = summary
        return summary

    def read(self, timeline: Timeline) -> TimelineFacts:
        replaced: dict[FileGroupId, str] = {}
        pending_clustering: dict[FileGroupId, str] = {}
        pending_compaction: dict[FileGroupId, tuple[str, str]] = {}
        pending_log_compaction: dict[FileGroupId, tuple[str, str]] = {}
        savepoints: dict[str, frozenset[str]] = {}
        for instant in timeline:
            if instant.action is Action.REPLACE_COMMIT and instant.is_completed:
                summary = self.commit_summary(instant)
                for fg_id in summary.replaced_file_groups():
                    replaced[fg_id] = instant.timestamp  # timeline is ordered: the later replace wins
            elif instant.action in (Action.COMMIT, Action.DELTA_COMMIT):
                # Nothing for the view: slices come from file names and the completed instants, as in
                # Java's `AbstractTableFileSystemView`, which reads no commit's metadata. A completed
                # commit is decoded (and checked) when a service needs what it holds (the incremental
                # clean's partitions, the schema, the write stats of a doubled base file); decoding
                # every one here cost a planning pass 6 of its 27 s at 10^6 files (four commit files
                # of 200 MB), and at 10^7 files would read 8 GB a pass.
                continue
            elif instant.action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
                # Pending: a clustering plan (`clustering` on layout 2, `replacecommit` on layout 1),
                # or an insert overwrite's requested file, which holds no plan.
                plan = self.clustering_plan(instant, file_names_only=True)
                for group in plan.groups if plan is not None else ():
                    for fg_id in group.file_group_ids:
                        if fg_id in pending_clustering:
                            raise CorruptTableError(
                                f"file group {fg_id} is in two pending clustering plans "
                                f"({pending_clustering[fg_id]} and {instant.timestamp})"
                            )
                        pending_clustering[fg_id] = instant.timestamp
            elif instant.action in (Action.COMPACTION, Action.LOG_COMPACTION) and instant.is_pending:
                compaction = self.requested_plan(instant, CompactionPlan)
                into = pending_compaction if instant.action is Action.COMPACTION else pending_log_compaction
                for op in (compaction.operations or ()) if compaction else ():
                    into[(op.partition_path or "", op.file_id or "")] = (
                        instant.timestamp,
                        op.base_instant_time or "",
                    )
            elif instant.action is Action.SAVEPOINT and instant.is_completed:
                sp = self.metadata(instant, SavepointMetadata)
                savepoints[instant.timestamp] = frozenset(
                    name for pm in sp.partition_metadata.values() for name in pm.savepoint_data_file
                )
        return TimelineFacts(
            replaced, pending_clustering, pending_compaction, savepoints, pending_log_compaction
        )
