"""The HFile v3 writer against HFiles Hudi 0.15.0 wrote and against HBase's reader in Hudi's bundle.

`data/` holds a log file of a real MDT `files` partition (see test_hfile_reader.py): its HFile data
block re-encoded from its decoded records must come out byte for byte; a block we write from new
records must read back through HBase's HFile reader exactly as Hudi opens log blocks
(`HoodieHFileUtils.createHFileReader` over the bytes, run as a Java program on the real bundle).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.hfile.reader import HFileReader
from service.table.hfile.writer import HFileCell, write_hfile
from service.table.mdt.log_blocks import BlockType, HeaderKey, read_log_blocks
from service.table.mdt.records import (
    FileInfo,
    FilesRecord,
    decode_files_record,
    encode_files_record,
    log_block_schema_text,
)
from tests.support.jvm import run_java

DATA = Path(__file__).parent / "data"
LOG_FILE = DATA / ".files-0000-0_00000000000000010.log.2_0-18-24"


def _hudi_block() -> tuple[bytes, str]:
    blocks = read_log_blocks(LOG_FILE.read_bytes(), str(LOG_FILE))
    block = next(b for b in blocks if b.block_type is BlockType.HFILE_DATA_BLOCK)
    return block.content, block.header[HeaderKey.SCHEMA]


def test_reencoding_a_hudi_written_block_is_byte_identical() -> None:
    content, header_schema = _hudi_block()
    reader = HFileReader(content, str(LOG_FILE))
    assert reader.schema_text == header_schema == log_block_schema_text()
    records = [decode_files_record(k, v, header_schema, "test") for k, v in reader.items()]
    cells = [HFileCell(r.key.encode(), encode_files_record(r)) for r in records]
    assert write_hfile(cells, {b"schema": header_schema.encode()}, source="test") == content


def _records() -> list[FilesRecord]:
    partitions = [f"p{i:02d}/day=2024-01-{i % 28 + 1:02d}" for i in range(40)]
    out = [FilesRecord("__all_partitions__", 1, {p: FileInfo(0, False) for p in partitions})]
    for i, p in enumerate(partitions):
        out.append(
            FilesRecord(
                p,
                2,
                {
                    f"{i:08d}-aaaa-0_0-1-{j}_20240101000000{j:03d}.parquet": FileInfo(1000 + i * j, False)
                    for j in range(30)
                }
                | {f"old-{i}_0-1-1_20230101000000000.parquet": FileInfo(0, True)},
            )
        )
    return sorted(out, key=lambda r: r.key.encode())


def test_our_hfile_reads_back_through_our_reader() -> None:
    records = _records()
    cells = [HFileCell(r.key.encode(), encode_files_record(r)) for r in records]
    data = write_hfile(cells, {b"schema": log_block_schema_text().encode()}, source="test")
    reader = HFileReader(data, "ours")
    assert [k for k, _ in reader.items()] == [r.key for r in records]
    assert reader.schema_text is not None
    assert [decode_files_record(k, v, reader.schema_text, "t") for k, v in reader.items()] == records


def test_unsorted_or_empty_cells_are_refused() -> None:
    with pytest.raises(CorruptTableError, match="sorts before"):
        write_hfile([HFileCell(b"b", b"1"), HFileCell(b"a", b"2")], {}, source="t")
    with pytest.raises(CorruptTableError, match="at least one cell"):
        write_hfile([], {}, source="t")


@pytest.mark.hudi
def test_hbase_reader_in_hudis_bundle_reads_our_hfile(tmp_path: Path) -> None:
    records = _records()
    cells = [HFileCell(r.key.encode(), encode_files_record(r)) for r in records]
    path = tmp_path / "block.hfile"
    path.write_bytes(write_hfile(cells, {b"schema": log_block_schema_text().encode()}, source="test"))
    out = run_java("HudiMdtRead", "hfile", str(path)).stdout.splitlines()
    seen = [line.split(" ", 2)[1:] for line in out if line.startswith("cell ")]
    assert [(row, base64.b64decode(value)) for row, value in seen] == [
        (c.row.decode(), c.value) for c in cells
    ]
    assert f"schema {log_block_schema_text()}" in out


def _big_cells() -> list[HFileCell]:
    """Cells of about 300 KB each, like `bloom_filters` records: four pass 1 MiB, so ten make three
    data blocks (4, 4, 2 cells)."""
    return [HFileCell(f"key{i:03d}".encode(), bytes([i]) * 300_000) for i in range(10)]


def test_cells_past_one_mib_split_into_data_blocks_read_back() -> None:
    cells = _big_cells()
    data = write_hfile(cells, {b"schema": b"s"}, source="test")
    reader = HFileReader(data, "ours")
    assert reader.trailer.data_index_count == 3  # a block is closed once it holds >= 1 MiB
    assert reader.items() == [(c.row.decode(), c.value) for c in cells]


@pytest.mark.hudi
def test_hbase_reader_scans_and_seeks_our_multi_block_hfile(tmp_path: Path) -> None:
    """HBase's scanner reads every cell of every block, and its seeks (Hudi's key lookups in a log
    block) find each key through the root index, including the first key of later blocks."""
    cells = _big_cells()
    path = tmp_path / "blocks.hfile"
    path.write_bytes(write_hfile(cells, {b"schema": b"s"}, source="test"))
    out = run_java("HudiMdtRead", "hfile", str(path)).stdout.splitlines()
    seen = [line.split(" ", 2)[1:] for line in out if line.startswith("cell ")]
    assert [(row, base64.b64decode(value)) for row, value in seen] == [
        (c.row.decode(), c.value) for c in cells
    ]
    keys = [c.row.decode() for c in cells]
    out = run_java("HudiMdtRead", "seek", str(path), *keys, "key0035", "zzz").stdout.splitlines()
    assert out == [f"seek {k} 0 {k}" for k in keys] + ["seek key0035 1 -", "seek zzz 1 -"]
