"""Tables written by real Hudi 1.0.2 (table version 8) and 1.1.1 (version 9), by `tests.support.hudi_jvm`.

One history per (table type, metadata table on/off): inserts in two partitions, upserts, a delete,
an insert overwrite of one partition, Hudi's own clustering (`CALL run_clustering`) and, on
merge-on-read, Hudi's own compaction (`CALL run_compaction`) followed by upserts into the new slices.
Writers keep each version's defaults except what a daemon deployment needs (automatic table services
and archiving off) and `small.file.limit=0`, so every insert opens new file groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.hudi_jvm import HudiJvm

SCHEMA = "id long, region string, ts long, value string"
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


def _log_names(text: str | None) -> list[str]:
    """`[HoodieLogFile{pathStr='file:/…/.f_t.log.1_0-1-2', fileLen=1}, …]` -> the file names."""
    names = []
    for part in (text or "").split("pathStr='")[1:]:
        names.append(part.split("'", 1)[0].rsplit("/", 1)[-1])
    return names


def build_upgraded_history(spark: Any, jvm: HudiJvm, root: Path, table_type: str) -> Hudi1History:
    """A table written at version 6 by Hudi 0.15 (`spark`, the test session's), then upserted once by
    `jvm`'s Hudi 1.x with its defaults, which upgrades it in place (`UpgradeDowngrade`: on
    merge-on-read it compacts first) to the writer's table version."""
    name = f"up{jvm.table_version}_{table_type.lower()}"
    h = Hudi1History(root / name, name, table_type, False)
    for ids, batch, operation in (
        (range(0, 12), 0, "insert"),
        (range(12, 24), 1, "insert"),
        (range(4, 16), 2, "upsert"),
    ):
        opts = {**writer_options(name, table_type, False), "hoodie.datasource.write.operation": operation}
        spark.createDataFrame(rows(ids, batch), SCHEMA).write.format("hudi").options(**opts).mode(
            "append"
        ).save(str(h.base))
    _write(jvm, h, range(0, 24, 3), 3, "upsert")
    _write(jvm, h, range(0, 24, 4), 4, "upsert")
    jvm.sql(f"create table {name} using hudi location '{h.base}'")
    return h
