"""Fast fixture tables in Hudi's on-disk format, built with pyarrow and the project's codecs.

For unit tests of the model and the planners: no Spark, no Java. Interop is proven elsewhere with
real Hudi; these tables follow the same format so the pure logic can be tested in milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.fixtures import write_partition_metafile
from service.table import codecs
from service.table.data_files import base_file_name
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1, TimelineLayout
from service.table.properties import TableConfig
from service.table.storage import Storage
from service.table.timeline import create_instant_file

SCHEMA = {
    "type": "record",
    "name": "fixture_record",
    "namespace": "hoodie.fixture",
    "fields": [
        {"name": "id", "type": ["null", "string"], "default": None},
        {"name": "p", "type": ["null", "string"], "default": None},
        {"name": "v", "type": ["null", "long"], "default": None},
    ],
}


def ts(n: int) -> str:
    """Instant time number n: 2024-01-01 00:00 + n minutes, 17 digits."""
    return f"20240101{n // 60:02d}{n % 60:02d}00000"


@dataclass
class FileSpec:
    partition: str
    file_id: str
    rows: int = 3
    size_hint: int = 0  # pad the file to roughly this many bytes (0: natural size)


@dataclass
class LogSpec:
    """A MOR log file of the slice with base instant `base_instant` (0 bytes of real log format)."""

    partition: str
    file_id: str
    base_instant: str
    version: int = 1
    size: int = 64


@dataclass
class FixtureTable:
    base: Path
    name: str = "fixture"
    partitioned: bool = True
    table_type: str = "COPY_ON_WRITE"
    # 6: layout 1 with JSON commit metadata; 8 or 9 (Hudi 1.0 / 1.1): layout 2, only `commit` so far.
    table_version: int = 6
    # Hudi's default is LOCAL (instant times in the writers' JVM zone); fixtures write UTC unless asked.
    timeline_timezone: str = "UTC"
    written: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        (self.base / ".hoodie").mkdir(parents=True, exist_ok=True)
        raw = {
            "hoodie.table.name": self.name,
            "hoodie.table.type": self.table_type,
            "hoodie.table.version": str(self.table_version),
            "hoodie.timeline.layout.version": "1",
            "hoodie.table.recordkey.fields": "id",
            "hoodie.table.precombine.field": "v",
            "hoodie.table.timeline.timezone": self.timeline_timezone,
            "hoodie.archivelog.folder": "archived",
        }
        if self.table_version >= 8:
            # What Hudi 1.0.2 / 1.1.1 write at creation (HoodieTableConfig), trimmed to what is read.
            del raw["hoodie.archivelog.folder"]
            raw |= {
                "hoodie.timeline.layout.version": "2",
                "hoodie.timeline.path": "timeline",
                "hoodie.timeline.history.path": "history",
                "hoodie.table.initial.version": str(self.table_version),
                "hoodie.table.base.file.format": "PARQUET",
                "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                "hoodie.table.keygenerator.type": "SIMPLE" if self.partitioned else "NON_PARTITION",
            }
            if self.table_version >= 9:
                del raw["hoodie.table.precombine.field"]
                raw["hoodie.table.ordering.fields"] = "v"
        if self.partitioned:
            raw["hoodie.table.partition.fields"] = "p"
        self.storage.write_bytes(".hoodie/hoodie.properties", TableConfig(raw).to_text().encode("latin-1"))

    @property
    def layout(self) -> TimelineLayout:
        return TimelineLayout.v2() if self.table_version >= 8 else LAYOUT_1

    @property
    def storage(self) -> Storage:
        return Storage.for_base_uri(str(self.base))

    # ------------------------------------------------------------------ data files
    def write_base_file(self, spec: FileSpec, instant_time: str) -> codecs.WriteStat:
        partition = spec.partition if self.partitioned else ""
        name = base_file_name(spec.file_id, "0-0-0", instant_time)
        rel = f"{partition}/{name}" if partition else name
        keys = [f"{spec.file_id[:8]}-{i}" for i in range(spec.rows)]
        table = pa.table(
            {
                "_hoodie_commit_time": [instant_time] * spec.rows,
                "_hoodie_commit_seqno": [f"{instant_time}_0_{i}" for i in range(spec.rows)],
                "_hoodie_record_key": keys,
                "_hoodie_partition_path": [partition] * spec.rows,
                "_hoodie_file_name": [name] * spec.rows,
                "id": keys,
                "p": [partition] * spec.rows,
                "v": list(range(spec.rows)),
            }
        )
        if spec.size_hint:
            table = table.append_column(
                "pad", pa.array([b"x" * (spec.size_hint // max(spec.rows, 1))] * spec.rows)
            )
        path = self.base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, compression="none")
        self._partition_metafile(partition, instant_time)
        prev = self.written.get((partition, spec.file_id))
        self.written.setdefault((partition, spec.file_id), []).append(instant_time)
        size = path.stat().st_size
        return codecs.WriteStat(
            file_id=spec.file_id,
            path=rel,
            prev_commit=prev[-1] if prev else codecs.NULL_COMMIT,
            num_writes=spec.rows,
            num_inserts=0 if prev else spec.rows,
            num_update_writes=spec.rows if prev else 0,
            total_write_bytes=size,
            partition_path=partition,
            file_size_in_bytes=size,
        )

    def write_log_file(self, spec: LogSpec, instant_time: str) -> codecs.WriteStat:
        """`.<fileId>_<baseInstant>.log.<version>_0-0-0` with filler bytes (the view only reads names)."""
        partition = spec.partition if self.partitioned else ""
        name = f".{spec.file_id}_{spec.base_instant}.log.{spec.version}_0-0-0"
        rel = f"{partition}/{name}" if partition else name
        path = self.base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"#HUDI#" + b"\0" * max(spec.size - 6, 0))
        self._partition_metafile(partition, instant_time)
        return codecs.WriteStat(
            file_id=spec.file_id,
            path=rel,
            prev_commit=spec.base_instant,
            num_writes=1,
            num_update_writes=1,
            total_write_bytes=spec.size,
            partition_path=partition,
            file_size_in_bytes=spec.size,
        )

    def _partition_metafile(self, partition: str, instant_time: str) -> None:
        write_partition_metafile(self.base, partition, instant_time)

    # ------------------------------------------------------------------ timeline
    def _stats_by_partition(
        self, stats: Iterable[codecs.WriteStat]
    ) -> dict[str, tuple[codecs.WriteStat, ...]]:
        out: dict[str, list[codecs.WriteStat]] = {}
        for s in stats:
            out.setdefault(s.partition_path or "", []).append(s)
        return {k: tuple(v) for k, v in out.items()}

    def commit(
        self,
        instant_time: str,
        files: Iterable[FileSpec],
        *,
        state: State = State.COMPLETED,
        operation: codecs.WriteOperationType = codecs.WriteOperationType.UPSERT,
        action: Action = Action.COMMIT,
        logs: Iterable[LogSpec] = (),
        workload_profile: bool = False,
        completion_time: str | None = None,
    ) -> list[codecs.WriteStat]:
        """A write instant; `logs` adds MOR log files (use `action=Action.DELTA_COMMIT` with them).
        `workload_profile`: the inflight file holds what a Spark writer puts there
        (`BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight`): per file group written,
        its file id and the base instant it found (`prevCommit`, "null" for a new group).
        `completion_time`: required on layout 2, where the completed file's name carries it."""
        logs = list(logs)
        stats = [self.write_base_file(f, instant_time) for f in files]
        stats += [self.write_log_file(spec, instant_time) for spec in logs]
        layout, avro = self.layout, self.table_version >= 8
        create_instant_file(self.storage, layout, Instant(instant_time, action, State.REQUESTED))
        if state is State.REQUESTED:
            return stats
        profile = b"" if not avro else codecs.encode_commit(codecs.CommitMetadata(), avro=True)
        if workload_profile:
            found = {(spec.partition, spec.file_id): spec.base_instant for spec in logs}
            written = [
                codecs.WriteStat(
                    file_id=s.file_id,
                    partition_path=s.partition_path,
                    prev_commit=found.get((s.partition_path or "", s.file_id or ""), codecs.NULL_COMMIT),
                )
                for s in stats
            ]
            profile = codecs.encode_commit(
                codecs.CommitMetadata(partition_to_write_stats=self._stats_by_partition(written)), avro=avro
            )
        create_instant_file(self.storage, layout, Instant(instant_time, action, State.INFLIGHT), profile)
        if state is State.INFLIGHT:
            return stats
        meta = codecs.CommitMetadata(
            partition_to_write_stats=self._stats_by_partition(stats),
            extra_metadata={"schema": json.dumps(SCHEMA)},
            operation_type=operation,
        )
        completed = Instant(instant_time, action, State.COMPLETED, completion_time)
        if avro and completion_time is None:
            raise ValueError("a layout-2 fixture commit needs its completion time")
        create_instant_file(self.storage, layout, completed, codecs.encode_commit(meta, avro=avro))
        return stats

    def replace(
        self,
        instant_time: str,
        files: Iterable[FileSpec],
        replaced: Mapping[str, Iterable[str]],
        *,
        operation: codecs.WriteOperationType = codecs.WriteOperationType.INSERT_OVERWRITE,
    ) -> None:
        stats = [self.write_base_file(f, instant_time) for f in files]
        create_instant_file(
            self.storage,
            LAYOUT_1,
            Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED),
            codecs.encode(codecs.RequestedReplaceMetadata(operation_type=operation.value, version=1)),
        )
        create_instant_file(
            self.storage, LAYOUT_1, Instant(instant_time, Action.REPLACE_COMMIT, State.INFLIGHT)
        )
        meta = codecs.ReplaceCommitMetadata(
            partition_to_write_stats=self._stats_by_partition(stats),
            extra_metadata={"schema": json.dumps(SCHEMA)},
            operation_type=operation,
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in replaced.items()},
        )
        create_instant_file(
            self.storage,
            LAYOUT_1,
            Instant(instant_time, Action.REPLACE_COMMIT, State.COMPLETED),
            codecs.encode(meta),
        )

    def pending_clustering(
        self, instant_time: str, slices: Iterable[tuple[str, str]], inflight: bool = False
    ) -> None:
        infos = tuple(
            codecs.SliceInfo(
                data_file_path=self.storage.qualify(self._latest_path(p, fid)),
                delta_file_paths=(),
                file_id=fid,
                partition_path=p,
                bootstrap_file_path="",
            )
            for p, fid in slices
        )
        plan = codecs.RequestedReplaceMetadata(
            operation_type=codecs.CLUSTER_OPERATION,
            clustering_plan=codecs.ClusteringPlan(
                input_groups=(codecs.ClusteringGroup(slices=infos, num_output_file_groups=1),),
                strategy=codecs.ClusteringStrategy(strategy_class_name="x", strategy_params={}),
                extra_metadata={},
                preserve_hoodie_metadata=True,
            ),
            extra_metadata={},
        )
        create_instant_file(
            self.storage,
            LAYOUT_1,
            Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED),
            codecs.encode(plan),
        )
        if inflight:
            create_instant_file(
                self.storage, LAYOUT_1, Instant(instant_time, Action.REPLACE_COMMIT, State.INFLIGHT)
            )

    def complete_clustering(
        self, instant_time: str, outputs: Iterable[FileSpec], replaced: Mapping[str, Iterable[str]]
    ) -> list[codecs.WriteStat]:
        """Complete the clustering planned by `pending_clustering(instant_time, ..., inflight=True)`:
        write `outputs` and the `replacecommit` replacing the file groups `replaced` per partition."""
        stats = [self.write_base_file(f, instant_time) for f in outputs]
        meta = codecs.ReplaceCommitMetadata(
            partition_to_write_stats=self._stats_by_partition(stats),
            extra_metadata={"schema": json.dumps(SCHEMA)},
            operation_type=codecs.WriteOperationType.CLUSTER,
            partition_to_replace_file_ids={p: tuple(ids) for p, ids in replaced.items()},
        )
        create_instant_file(
            self.storage,
            LAYOUT_1,
            Instant(instant_time, Action.REPLACE_COMMIT, State.COMPLETED),
            codecs.encode(meta),
        )
        return stats

    def savepoint(self, instant_time: str, file_names_by_partition: Mapping[str, Iterable[str]]) -> None:
        meta = codecs.SavepointMetadata(
            savepointed_by="test",
            savepointed_at=0,
            comments="",
            partition_metadata={
                p: codecs.SavepointPartitionMetadata(partition_path=p, savepoint_data_file=tuple(names))
                for p, names in file_names_by_partition.items()
            },
        )
        create_instant_file(self.storage, LAYOUT_1, Instant(instant_time, Action.SAVEPOINT, State.INFLIGHT))
        create_instant_file(
            self.storage,
            LAYOUT_1,
            Instant(instant_time, Action.SAVEPOINT, State.COMPLETED),
            codecs.encode(meta),
        )

    def _latest_path(self, partition: str, file_id: str) -> str:
        instant = self.written[(partition, file_id)][-1]
        name = base_file_name(file_id, "0-0-0", instant)
        return f"{partition}/{name}" if partition else name

    def file_name(self, partition: str, file_id: str, instant_time: str) -> str:
        return base_file_name(file_id, "0-0-0", instant_time)

    def pending_compaction(
        self,
        instant_time: str,
        operations: Iterable[tuple[str, str, str]],
        action: Action = Action.COMPACTION,
    ) -> None:
        """`T.compaction.requested` (or `T.logcompaction.requested`) compacting (partition, file id,
        base instant of the slice) each."""
        plan = codecs.CompactionPlan(
            operations=tuple(
                codecs.CompactionOperation(base_instant_time=base, file_id=fid, partition_path=p)
                for p, fid, base in operations
            ),
            version=2,
        )
        create_instant_file(
            self.storage, LAYOUT_1, Instant(instant_time, action, State.REQUESTED), codecs.encode(plan)
        )

    def completed_clean(
        self,
        instant_time: str,
        earliest_commit_to_retain: str,
        last_completed_commit: str,
        policy: str = "KEEP_LATEST_COMMITS",
    ) -> None:
        """A completed clean that deleted nothing: what the trigger and incremental planning read."""
        plan = _cleaner_plan(earliest_commit_to_retain, last_completed_commit, policy, {}, ())
        meta = codecs.CleanMetadata(
            start_clean_time=instant_time,
            time_taken_in_millis=1,
            total_files_deleted=0,
            earliest_commit_to_retain=earliest_commit_to_retain,
            last_completed_commit_timestamp=last_completed_commit,
            partition_metadata={},
        )
        requested = Instant(instant_time, Action.CLEAN, State.REQUESTED)
        create_instant_file(self.storage, LAYOUT_1, requested, codecs.encode(plan))
        create_instant_file(self.storage, LAYOUT_1, requested.with_state(State.INFLIGHT), codecs.encode(plan))
        create_instant_file(
            self.storage, LAYOUT_1, requested.with_state(State.COMPLETED), codecs.encode(meta)
        )

    def requested_clean(
        self,
        instant_time: str,
        paths: Mapping[str, Iterable[str]],
        *,
        last_completed_commit: str,
        earliest_commit_to_retain: str | None = None,
        policy: str = "KEEP_LATEST_COMMITS",
        partitions_to_be_deleted: Iterable[str] = (),
    ) -> None:
        """A version-2 clean plan left requested, as a Java writer stores it: `paths` per partition
        exactly as given (Java writes them qualified: pass `self.storage.qualify(...)` for that)."""
        plan = _cleaner_plan(
            earliest_commit_to_retain, last_completed_commit, policy, paths, tuple(partitions_to_be_deleted)
        )
        create_instant_file(
            self.storage, LAYOUT_1, Instant(instant_time, Action.CLEAN, State.REQUESTED), codecs.encode(plan)
        )

    def log_file_name(self, file_id: str, base_instant: str, version: int = 1) -> str:
        return f".{file_id}_{base_instant}.log.{version}_0-0-0"


def _cleaner_plan(
    earliest_commit_to_retain: str | None,
    last_completed_commit: str,
    policy: str,
    paths: Mapping[str, Iterable[str]],
    partitions_to_be_deleted: tuple[str, ...],
) -> codecs.CleanerPlan:
    """HoodieCleanerPlan v2 as Java writes it (`{}` for the v1 map, no bootstrap files)."""
    return codecs.CleanerPlan(
        earliest_instant_to_retain=(
            codecs.ActionInstant(timestamp=earliest_commit_to_retain, action="commit", state="COMPLETED")
            if earliest_commit_to_retain
            else None
        ),
        last_completed_commit_timestamp=last_completed_commit,
        policy=policy,
        files_to_be_deleted_per_partition={},
        version=2,
        file_paths_to_be_deleted_per_partition={
            p: tuple(codecs.CleanFileInfo(file_path=x, is_bootstrap_base_file=False) for x in xs)
            for p, xs in paths.items()
        },
        partitions_to_be_deleted=partitions_to_be_deleted,
    )
