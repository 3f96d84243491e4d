"""Tables written by real Hudi 1.0.2 (table version 8) and 1.1.1 (version 9), by `tests.support.hudi_jvm`.

One history per (table type, metadata table on/off): inserts in two partitions, upserts, a delete,
an insert overwrite of one partition, Hudi's own clustering (`CALL run_clustering`) and, on
merge-on-read, Hudi's own compaction (`CALL run_compaction`) followed by upserts into the new slices.
Writers keep each version's defaults except what a daemon deployment needs (automatic table services
and archiving off) and `small.file.limit=0`, so every insert opens new file groups.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from service.table.mdt.index_keys import PARTITION_STATS_PARTITION
from service.table.mdt.index_records import ColumnStats
from service.table.table import HudiTable
from tests.support.hudi_jvm import HudiJvm
from tests.support.hudi_tables import hudi_rs_snapshot
from tests.support.mdt_records import mdt_index_records

SCHEMA = "id long, region string, ts long, value string"
# The record index, kept by every Hudi 1.x writer and procedure given these (one without them drops the
# partition): 1.0's switch and 1.1's.
RLI_OPTIONS = {
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.global.record.level.index.enable": "true",
}
PARTITIONS = ("americas", "asia")


@dataclass(frozen=True)
class Hudi1History:
    base: Path
    table_name: str
    table_type: str
    metadata: bool


def writer_options(table_name: str, table_type: str, metadata: bool) -> dict[str, str]:
    return {
        "hoodie.table.name": table_name,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.metadata.enable": str(metadata).lower(),
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.clustering.inline": "false",
        "hoodie.clustering.async.enabled": "false",
        "hoodie.compact.inline": "false",
        "hoodie.compact.schedule.inline": "false",
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2",
    }


def rows(ids: Sequence[int], batch: int) -> list[dict[str, Any]]:
    return [{"id": i, "region": PARTITIONS[i % 2], "ts": batch, "value": f"v{batch}"} for i in ids]


def _write(jvm: HudiJvm, h: Hudi1History, ids: Sequence[int], batch: int, operation: str) -> None:
    opts: Mapping[str, str] = {
        **writer_options(h.table_name, h.table_type, h.metadata),
        "hoodie.datasource.write.operation": operation,
    }
    jvm.write(h.base, rows(ids, batch), SCHEMA, opts)


def build_history(jvm: HudiJvm, root: Path, table_type: str, metadata: bool) -> Hudi1History:
    """Write the history described in the module docstring with `jvm`'s Hudi; returns where it is."""
    name = f"h{jvm.table_version}_{table_type.lower()}_{'mdt' if metadata else 'nomdt'}"
    h = Hudi1History(root / name, name, table_type, metadata)
    _write(jvm, h, range(0, 12), 0, "insert")
    _write(jvm, h, range(12, 24), 1, "insert")
    _write(jvm, h, range(4, 16), 2, "upsert")
    _write(jvm, h, [1, 2], 3, "delete")
    jvm.sql(f"create table {name} using hudi location '{h.base}'")
    jvm.sql(
        f"call run_clustering(table => '{name}', "
        "options => 'hoodie.clustering.plan.strategy.small.file.limit=100000000')"
    )
    if table_type == "MERGE_ON_READ":
        _write(jvm, h, range(0, 24, 3), 4, "upsert")
        jvm.sql(f"call run_compaction(op => 'scheduleAndExecute', table => '{name}')")
    _write(jvm, h, range(0, 24, 2), 5, "upsert")
    # Overwrite one partition: its file groups are replaced by a replacecommit that is no clustering.
    over = writer_options(h.table_name, table_type, metadata)
    over["hoodie.datasource.write.operation"] = "insert_overwrite"
    jvm.write(h.base, [r for r in rows(range(24, 30), 6) if r["region"] == "asia"], SCHEMA, over)
    _write(jvm, h, range(0, 30, 5), 7, "upsert")
    return h


# Hudi's archiver at its smallest: it keeps 2-3 completed commits on the active timeline and moves the
# rest into the LSM history under `.hoodie/timeline/history/` after each write (`TimelineArchiverV2`).
ARCHIVING = {
    "hoodie.archive.automatic": "true",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
    "hoodie.cleaner.commits.retained": "1",
}


@dataclass(frozen=True)
class ArchivedHistory:
    """A merge-on-read table whose first instants Hudi archived. Deltacommit `late_deltacommit` was
    requested before compaction `compaction` and completed after it (so the compaction left its logs
    out and they joined its slice); both were archived since."""

    history: Hudi1History
    late_deltacommit: str
    compaction: str


def build_archived_history(jvm: HudiJvm, root: Path) -> ArchivedHistory:
    """Two inserts (two file groups per partition), two upserts of every record, a compaction
    scheduled between the second upsert's requested and completion times, then five upserts with
    archiving on. The compaction is scheduled at a chosen instant (`scheduleCompactionAtInstant`): what
    a compaction scheduled by another writer while the upsert ran leaves, without racing two writers."""
    name = f"arch{jvm.table_version}"
    h = Hudi1History(root / name, name, "MERGE_ON_READ", False)
    options = {**writer_options(name, h.table_type, False), **ARCHIVING}

    def write(ids: Sequence[int], batch: int, operation: str) -> None:
        opts = {**options, "hoodie.datasource.write.operation": operation}
        jvm.write(h.base, rows(ids, batch), SCHEMA, opts)

    write(range(0, 8), 0, "insert")
    write(range(8, 16), 1, "insert")
    write(range(16), 2, "upsert")  # logs in every group, completed before the compaction
    write(range(16), 3, "upsert")
    requested, completed = completed_instants(h.base, "deltacommit")[-1]
    compaction = _one_millisecond_after(requested)
    assert compaction < completed, (requested, completed)
    compact = {**options, "hoodie.compact.inline.max.delta.commits": "1"}
    assert jvm.schedule_compaction_at(h.base, compaction, compact)
    jvm.sql(f"create table {name} using hudi location '{h.base}'")
    jvm.sql(f"call run_compaction(op => 'execute', table => '{name}')")
    for batch in range(4, 9):  # the fifth deltacommit since the compaction lets it be archived too
        write(range(0, 16, 3), batch, "upsert")
    return ArchivedHistory(h, requested, compaction)


def completed_instants(base: Path, action: str) -> list[tuple[str, str]]:
    """(requested, completion) of the completed `action` instants on the active timeline, in order."""
    pattern = re.compile(rf"(\d{{17}})_(\d{{17}})\.{action}")
    names = os.listdir(base / ".hoodie" / "timeline")
    return sorted((m[1], m[2]) for n in names if (m := pattern.fullmatch(n)))


def _one_millisecond_after(instant: str) -> str:
    parsed = datetime.strptime(instant, "%Y%m%d%H%M%S%f")  # the last 3 digits are milliseconds
    return (parsed + timedelta(milliseconds=1)).strftime("%Y%m%d%H%M%S%f")[:17]


@dataclass(frozen=True, order=True)
class HudiSlice:
    """A latest file slice as Hudi's `show_fsview_latest` lists it (log file names sorted)."""

    partition: str
    file_id: str
    base_instant: str
    base_file: str
    log_files: tuple[str, ...]


def hudi_latest_slices(jvm: HudiJvm, table_name: str) -> list[HudiSlice]:
    out: list[HudiSlice] = []
    for partition in PARTITIONS:
        args = f"table => '{table_name}', partition_path => '{partition}', limit => 100000"
        call = f"call show_fsview_latest({args})"
        for row in jvm.sql(call):
            logs = _log_names(row.get("delta_files_compaction_scheduled")) + _log_names(
                row.get("delta_files_compaction_unscheduled")
            )
            base = Path(row["data_file"]).name if row.get("data_file") else ""
            out.append(
                HudiSlice(
                    row["partition"] or "", row["file_id"], row["base_instant"], base, tuple(sorted(logs))
                )
            )
    return sorted(out)


def our_latest_slices(table: HudiTable) -> list[HudiSlice]:
    """Our latest slices as `show_fsview_latest` lists them: merged (`getLatestMergedFileSlicesBeforeOrOn`),
    so a group under a pending compaction shows the slice it compacts with the logs appended since."""
    view = table.load_view(from_storage=True)
    out = []
    for fg in view.live_file_groups:
        merged = fg.snapshot_slices
        oldest = merged[-1]
        logs = tuple(sorted(lf.file_name for s in merged for lf in s.log_files))
        base = oldest.base_file.file_name if oldest.base_file else ""
        out.append(HudiSlice(fg.partition_path, fg.file_id, oldest.base_instant_time, base, logs))
    return sorted(out)


def _log_names(text: str | None) -> list[str]:
    """The file names of a procedure's log files: Hudi 1.0/1.1 print
    `[HoodieLogFile{pathStr='file:/…/.f_t.log.1_0-1-2', fileLen=1}, …]`, Hudi 1.2
    `[HoodieLogFile(pathStr=file:/…/.f_t.log.1_0-1-2, fileSize=1),…]`."""
    return [path.rsplit("/", 1)[-1] for path in _LOG_PATH.findall(text or "")]


_LOG_PATH = re.compile(r"pathStr='?([^',)]+)")


def build_upgraded_history(
    spark: Any, jvm: HudiJvm, root: Path, table_type: str, metadata: bool = False
) -> Hudi1History:
    """A table written at version 6 by Hudi 0.15 (`spark`, the test session's), then upserted once by
    `jvm`'s Hudi 1.x with its defaults, which upgrades it in place (`UpgradeDowngrade`: on
    merge-on-read it compacts first) to the writer's table version; with `metadata`, the metadata
    table on throughout (both versions' default)."""
    name = f"up{jvm.table_version}_{table_type.lower()}{'_mdt' if metadata else ''}"
    h = Hudi1History(root / name, name, table_type, metadata)
    for ids, batch, operation in (
        (range(0, 12), 0, "insert"),
        (range(12, 24), 1, "insert"),
        (range(4, 16), 2, "upsert"),
    ):
        opts = {**writer_options(name, table_type, metadata), "hoodie.datasource.write.operation": operation}
        spark.createDataFrame(rows(ids, batch), SCHEMA).write.format("hudi").options(**opts).mode(
            "append"
        ).save(str(h.base))
    _write(jvm, h, range(0, 24, 3), 3, "upsert")
    _write(jvm, h, range(0, 24, 4), 4, "upsert")
    jvm.sql(f"create table {name} using hudi location '{h.base}'")
    return h


# -- what readers and Hudi's metadata procedures say of a table

_names = itertools.count()


def hudi_rows(jvm: HudiJvm, base: Path, *, metadata: bool = False) -> list[tuple[Any, ...]]:
    """Hudi's snapshot read of `base` (metadata table on or off), as sorted tuples."""
    rows = jvm.read(base, {"hoodie.metadata.enable": str(metadata).lower()})
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in rows)


def hudi_rs_rows(base: Path) -> list[tuple[Any, ...]]:
    """hudi-rs's snapshot read of `base`, as `hudi_rows` gives Hudi's."""
    rows = hudi_rs_snapshot(base).to_pylist()
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in rows)


def mdt_views(jvm: HudiJvm, base: Path) -> dict[str, Any]:
    """What Hudi's metadata procedures say of a table: the files and column stats the metadata table
    lists per partition, and `validate_metadata_table_files`' rows (storage against the listing)."""
    name = _catalog_table(jvm, base)
    views: dict[str, Any] = {}
    for partition in PARTITIONS:
        args = f"table => '{name}', partition => '{partition}'"
        files = jvm.sql(f"call show_metadata_table_files({args})")
        views[f"files/{partition}"] = sorted(r["file_path"] for r in files)
        stats = jvm.sql(f"call show_metadata_table_column_stats({args}, targetColumns => 'id,ts,value')")
        views[f"column_stats/{partition}"] = sorted(tuple(sorted(r.items())) for r in stats)
    views["validation"] = sorted(tuple(sorted(r.items())) for r in _validation(jvm, name))
    return views


def _catalog_table(jvm: HudiJvm, base: Path) -> str:
    """A fresh catalog table over `base` in the child's session, for Hudi's procedures; its name."""
    name = f"mdt_{next(_names)}"
    jvm.sql(f"create table {name} using hudi location '{base}'")
    return name


def _validation(jvm: HudiJvm, name: str) -> list[dict[str, Any]]:
    """`validate_metadata_table_files`' rows of catalog table `name`: storage against the listing."""
    return jvm.sql(f"call validate_metadata_table_files(table => '{name}', verbose => true)")


def snapshot_reads(jvm: HudiJvm, base: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Hudi's snapshot read with the metadata table on and off, and hudi-rs's."""
    return {
        "mdt": hudi_rows(jvm, base, metadata=True),
        "no_mdt": hudi_rows(jvm, base, metadata=False),
        "hudi_rs": hudi_rs_rows(base),
    }


def check_mdt_files_agree(jvm: HudiJvm, base: Path) -> None:
    """Hudi's `validate_metadata_table_files`: every file on storage listed, with its size."""
    checked = _validation(jvm, _catalog_table(jvm, base))
    assert checked and all(
        r["is_present_in_fs"] and r["is_present_in_metadata"] and r["fs_size"] == r["metadata_size"]
        for r in checked
    ), checked


def partition_stats_written(base: Path, instant: str) -> dict[str, tuple[Any, ...]]:
    """The `partition_stats` records MDT deltacommit `instant` wrote, by key: bounds, counts, flags
    (not the sizes, which follow each writer's files)."""
    out = {}
    for key, (record, _) in mdt_index_records(base, PARTITION_STATS_PARTITION, instant).items():
        s = record.payload
        assert isinstance(s, ColumnStats)
        out[key] = (s.file_name, s.column_name, s.min_value, s.max_value, s.null_count, s.value_count,
                    s.is_tight_bound, s.value_type)  # fmt: skip
    return out
