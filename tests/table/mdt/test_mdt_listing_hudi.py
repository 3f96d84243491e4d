"""Listing through the MDT `files` partition equals the storage listing and Hudi's own MDT reader.

Histories are written once per session by Hudi 0.15.0's Spark writer with the MDT on (its default):
inserts, upserts, an insert_overwrite, Hudi's clean, the rollback of a failed write, and enough
deltacommits to cross the MDT's compaction (lowered to every 3), so the `files` slice has a base
HFile and HFile log blocks. Hudi's view comes from `CALL show_metadata_table_partitions` /
`show_metadata_table_files` (names) and `HoodieTableMetadata.create(...).getAllFilesInPartition`
through the JVM (names and sizes).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.errors import UnsupportedTableError
from service.table.mdt.files_listing import (
    latest_files_slice,
    list_partitions_via_mdt,
    metadata_partitions,
)
from service.table.mdt.log_blocks import BlockType, read_log_blocks
from service.table.mdt.timeline import MDT_BASE, load_mdt_timeline
from service.table.properties import load_table_config
from service.table.storage import Storage
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.mdt_histories import MdtHistory

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


# A merge-on-read log file: `.<file id>_<base instant>.log.<version>_<write token>`.
_LOG_FILE = re.compile(r"^\.[^.].*\.log\.\d+_[^/.]+$")


def storage_listing(base_path: Path) -> dict[str, dict[str, int]]:
    """Data files (base and log files) per partition on disk (Hadoop's hidden `.crc` files and the
    partition metafile aside)."""
    out = {}
    for partition in ht.partition_paths(base_path):
        directory = base_path / partition
        out[partition] = {
            p.name: p.stat().st_size
            for p in sorted(directory.iterdir())
            if p.is_file() and (p.suffix == ".parquet" or _LOG_FILE.match(p.name))
        }
    return out


def hudi_mdt_listing(spark: SparkSession, base_path: Path) -> dict[str, dict[str, int]]:
    """Hudi's own MDT reader (HoodieBackedTableMetadata), names and sizes."""
    jvm: Any = spark._jvm
    jsc: Any = spark._jsc
    base = str(base_path)
    context = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(jsc)
    config = jvm.org.apache.hudi.common.config.HoodieMetadataConfig.newBuilder().enable(True).build()
    hadoop_conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(jsc.hadoopConfiguration())
    storage = jvm.org.apache.hudi.storage.HoodieStorageUtils.getStorage(base, hadoop_conf)
    metadata = jvm.org.apache.hudi.metadata.HoodieTableMetadata.create(context, storage, config, base)
    try:
        assert metadata.getClass().getSimpleName() == "HoodieBackedTableMetadata"
        out = {}
        for partition in metadata.getAllPartitionPaths():
            path = jvm.org.apache.hudi.storage.StoragePath(f"{base}/{partition}" if partition else base)
            infos = metadata.getAllFilesInPartition(path)
            out[str(partition)] = {str(i.getPath().getName()): int(i.getLength()) for i in infos}
        return out
    finally:
        metadata.close()


def hudi_procedure_listing(spark: SparkSession, base_path: Path) -> dict[str, set[str]]:
    """File names per partition from Hudi's `show_metadata_table_*` procedures (columns `partition`,
    `file_path`; the latter holds the file name)."""
    out: dict[str, set[str]] = {}
    with ht.registered_table(spark, base_path) as name:
        partitions = [
            r["partition"]
            for r in spark.sql(f"CALL show_metadata_table_partitions(table => '{name}')").collect()
        ]
        for partition in partitions:
            call = f"CALL show_metadata_table_files(table => '{name}', partition => '{partition}')"
            out[partition] = {r["file_path"] for r in spark.sql(call).collect()}
    return out


def test_history_crossed_mdt_compaction_with_hfile_base_and_log_blocks(mdt_history: HudiHistory) -> None:
    storage = Storage.for_base_uri(str(mdt_history.base_path))
    file_slice = latest_files_slice(storage, load_mdt_timeline(storage))
    assert file_slice.base_instant.endswith("001")  # a completed MDT compaction made the base file
    assert file_slice.base_file is not None and file_slice.base_file.endswith(
        f"_{file_slice.base_instant}.hfile"
    )
    assert file_slice.log_files, "the latest slice has log files after the compaction"
    types: set[BlockType] = set()
    for name in file_slice.log_files:
        path = mdt_history.base_path / MDT_BASE / "files" / name
        types.update(b.block_type for b in read_log_blocks(path.read_bytes(), str(path)))
    assert BlockType.HFILE_DATA_BLOCK in types
    actions = {action for _, action in mdt_history.instants}
    assert {"commit", "replacecommit", "clean", "rollback"} <= actions


def test_mdt_listing_equals_storage_and_hudi(spark: SparkSession, mdt_history: HudiHistory) -> None:
    base = mdt_history.base_path
    ours = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    assert ours == storage_listing(base)
    assert ours == hudi_mdt_listing(spark, base)
    assert {p: set(files) for p, files in ours.items()} == hudi_procedure_listing(spark, base)


def test_replaced_file_groups_stay_listed_until_cleaned(
    spark: SparkSession, mdt_history_built: MdtHistory, tmp_path: Path
) -> None:
    """Right after the insert_overwrite the MDT still lists the replaced file groups' files (the
    replacecommit adds files only; readers hide replaced groups through the timeline)."""
    base = tmp_path / "after_replace"
    shutil.copytree(mdt_history_built.after_replace, base, symlinks=True)
    replace = ht.instants_with_action(base, "replacecommit")[-1]
    replaced = json.loads((base / ".hoodie" / f"{replace}.replacecommit").read_text())[
        "partitionToReplaceFileIds"
    ]
    ours = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    assert ours == storage_listing(base)
    assert ours == hudi_mdt_listing(spark, base)
    live_ids = {s.file_id for s in ht.hudi_latest_file_slices(spark, base)}
    for partition, file_ids in replaced.items():
        assert file_ids
        for file_id in file_ids:
            assert file_id not in live_ids
            assert any(name.startswith(file_id) for name in ours[partition]), file_id


def test_blocks_of_a_data_instant_not_completed_are_ignored(
    spark: SparkSession, mdt_history: HudiHistory
) -> None:
    """A crash after the MDT deltacommit T completed but before the data instant T: T's files are on
    storage and in the MDT log, yet no reader may list them (HoodieTableMetadataUtil.
    getValidInstantTimestamps). Simulated by taking `T.commit` of the last write off the data timeline."""
    base = mdt_history.base_path
    last = ht.completed_instants(base)[-1]
    assert (base / MDT_BASE / ".hoodie" / f"{last}.deltacommit").exists()
    (base / ".hoodie" / f"{last}.commit").unlink()
    (base / ".hoodie" / f".{last}.commit.crc").unlink(missing_ok=True)
    ours = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    on_disk = storage_listing(base)
    uncommitted = {(p, n) for p, files in on_disk.items() for n in files if n.endswith(f"_{last}.parquet")}
    assert uncommitted, "the last write added files"
    expected = {
        p: {n: s for n, s in files.items() if (p, n) not in uncommitted} for p, files in on_disk.items()
    }
    assert ours == expected
    assert ours == hudi_mdt_listing(spark, base)


def test_failed_write_files_are_not_listed(spark: SparkSession, mdt_history: HudiHistory) -> None:
    """A failed Hudi write (files written, instant left inflight, no MDT deltacommit) lists nothing new."""
    base = mdt_history.base_path
    before = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    failed = ht.write_failing(
        spark,
        base,
        ht.generate(spark, range(2000, 2030), batch=9),
        "insert",
        mdt_history.table_name,
        partition_fields=mdt_history.partition_fields,
        extra_opts=mdt_history.writer_opts,
    )
    on_disk = storage_listing(base)
    assert any(n.endswith(f"_{failed}.parquet") for files in on_disk.values() for n in files)
    ours = list_partitions_via_mdt(Storage.for_base_uri(str(base)))
    assert ours == before
    assert ours == hudi_mdt_listing(spark, base)


def test_files_partition_still_initialising_is_refused(mdt_history: HudiHistory) -> None:
    props = mdt_history.base_path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(text + "hoodie.table.metadata.partitions.inflight=files\n")
    (mdt_history.base_path / ".hoodie" / ".hoodie.properties.crc").unlink(missing_ok=True)
    with pytest.raises(UnsupportedTableError, match="MDT partition 'files' is still initialising"):
        list_partitions_via_mdt(Storage.for_base_uri(str(mdt_history.base_path)))


def test_column_stats_and_bloom_filters_partitions_are_listed_and_do_not_break_the_listing(
    spark: SparkSession, mdt_indexes_built: HudiHistory, tmp_path: Path
) -> None:
    history = mdt_indexes_built.copy_to(tmp_path / "mdt_indexes")
    storage = Storage.for_base_uri(str(history.base_path))
    partitions = metadata_partitions(load_table_config(storage))
    assert partitions.completed == ("bloom_filters", "column_stats", "files")
    assert partitions.inflight == ()
    for name in partitions.completed:
        assert (history.base_path / MDT_BASE / name).is_dir()
    ours = list_partitions_via_mdt(storage)
    assert ours == storage_listing(history.base_path)
    assert ours == hudi_mdt_listing(spark, history.base_path)
