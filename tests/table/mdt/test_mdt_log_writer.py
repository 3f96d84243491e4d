"""MDT log files we write: byte for byte what Hudi 0.15.0 writes, and read by Hudi's own log reader.

The log file in `data/` (one HFILE_DATA_BLOCK of a real MDT, see test_hfile_reader.py) re-encoded
from its decoded records and instant must equal the original; a log file we write for new records
must read back through `HoodieLogFormat.newReader` (the reader `HoodieMetadataLogRecordReader`
drives), keys restored from the HFile rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from service.errors import InstantExistsError
from service.table.hfile.reader import HFileReader
from service.table.mdt.files_listing import FilesSlice
from service.table.mdt.log_blocks import BlockType, HeaderKey, read_log_blocks
from service.table.mdt.log_writer import files_data_block, merge_by_key, write_files_log
from service.table.mdt.records import FileInfo, FilesRecord, decode_files_record
from service.table.storage import Storage
from tests.support.jvm import run_java

DATA = Path(__file__).parent / "data"
LOG_FILE = DATA / ".files-0000-0_00000000000000010.log.2_0-18-24"


def test_reencoding_a_hudi_written_log_file_is_byte_identical() -> None:
    original = LOG_FILE.read_bytes()
    (block,) = read_log_blocks(original, str(LOG_FILE))
    assert block.block_type is BlockType.HFILE_DATA_BLOCK
    reader = HFileReader(block.content, block.source)
    assert reader.schema_text is not None
    records = [decode_files_record(k, v, reader.schema_text, "t") for k, v in reader.items()]
    data, count = files_data_block(reversed(records), block.header[HeaderKey.INSTANT_TIME], "t")
    assert count == len(records)
    assert data == original


def test_duplicate_keys_merge_into_one_record_in_byte_order() -> None:
    merged = merge_by_key(
        [
            FilesRecord("b", 2, {"f1": FileInfo(10, False)}),
            FilesRecord("a", 2, {"f2": FileInfo(5, False)}),
            FilesRecord("b", 2, {"f1": FileInfo(0, True), "f3": FileInfo(7, False)}),
        ],
        "t",
    )
    assert merged == [
        FilesRecord("a", 2, {"f2": FileInfo(5, False)}),
        FilesRecord("b", 2, {"f3": FileInfo(7, False)}),
    ]


def _mdt_copy(tmp_path: Path) -> tuple[Storage, FilesSlice]:
    files = tmp_path / "t" / ".hoodie" / "metadata" / "files"
    files.mkdir(parents=True)
    shutil.copy(LOG_FILE, files / LOG_FILE.name)
    return Storage.for_base_uri(str(tmp_path / "t")), FilesSlice("00000000000000010", None, (LOG_FILE.name,))


@pytest.mark.hudi
def test_hudis_log_reader_reads_our_log_file(tmp_path: Path) -> None:
    storage, file_slice = _mdt_copy(tmp_path)
    records = [
        FilesRecord("__all_partitions__", 1, {"americas": FileInfo(0, False), "new=1": FileInfo(0, False)}),
        FilesRecord("new=1", 2, {"a_0-1-2_20260101000000000.parquet": FileInfo(1234, False)}),
        FilesRecord("americas", 2, {"gone_0-1-1_20250101000000000.parquet": FileInfo(0, True)}),
    ]
    append = write_files_log(storage, file_slice, "20260101000000000", records)
    assert append.log_file == ".files-0000-0_00000000000000010.log.3_0-0-0"
    path = tmp_path / "t" / ".hoodie" / "metadata" / append.path
    assert path.stat().st_size == append.size and append.num_records == 3
    out = run_java("HudiMdtRead", "log", str(path)).stdout.splitlines()
    assert out == [
        "block HFILE_DATA_BLOCK 20260101000000000 null",
        "record __all_partitions__ 1 {americas=0:false, new=1=0:false}",
        "record americas 2 {gone_0-1-1_20250101000000000.parquet=0:true}",
        "record new=1 2 {a_0-1-2_20260101000000000.parquet=1234:false}",
    ]
    with pytest.raises(InstantExistsError):
        storage.create_if_absent(f".hoodie/metadata/{append.path}", b"")
    assert write_files_log(storage, file_slice, "20260101000000001", records[:1]).version == 4
