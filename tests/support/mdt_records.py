"""What a metadata table holds, read for tests: the index records one instant wrote, and Hudi's own
MDT reader in a Spark session (version 6's bundle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from service.table.hfile.reader import HFileReader
from service.table.mdt.index_records import IndexRecord, decode_index_record
from service.table.mdt.log_blocks import BlockType, HeaderKey, read_log_blocks


def mdt_index_records(base: Path, mdt_partition: str, instant: str) -> dict[str, tuple[IndexRecord, str]]:
    """The records the MDT deltacommit `instant` wrote into `mdt_partition` (its HFile data blocks, in
    any log file: version 6 appends to shared files, 1.x writes files of their own), by key, with the
    file group each went to."""
    out = {}
    for path in sorted((base / ".hoodie" / "metadata" / mdt_partition).glob(".*.log.*")):
        if path.name.endswith(".crc"):
            continue
        for block in read_log_blocks(path.read_bytes(), str(path)):
            if block.block_type is not BlockType.HFILE_DATA_BLOCK:
                continue
            if block.header.get(HeaderKey.INSTANT_TIME) != instant:
                continue
            reader = HFileReader(block.content, str(path))
            for key, value in reader.items():
                record = decode_index_record(key, value, reader.schema_text or "", str(path))
                out[key] = (record, path.name.split("_")[0][1:])
    return out


def hudi_metadata_reader(spark: Any, base: Path, **indexes: bool) -> Any:
    """Hudi's own MDT reader (`HoodieTableMetadata.create`) in `spark`'s JVM; `indexes` switch on
    `HoodieMetadataConfig.Builder` options by method name (`withMetadataIndexColumnStats=True`)."""
    jvm: Any = spark._jvm
    jsc: Any = spark._jsc
    context = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(jsc)
    builder = jvm.org.apache.hudi.common.config.HoodieMetadataConfig.newBuilder().enable(True)
    for method, on in indexes.items():
        builder = getattr(builder, method)(on)
    hadoop_conf = jvm.org.apache.hudi.storage.hadoop.HadoopStorageConfiguration(jsc.hadoopConfiguration())
    storage = jvm.org.apache.hudi.storage.HoodieStorageUtils.getStorage(str(base), hadoop_conf)
    return jvm.org.apache.hudi.metadata.HoodieTableMetadata.create(
        context, storage, builder.build(), str(base)
    )
