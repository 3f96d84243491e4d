"""The HFile reader and MDT log blocks on files Hudi 0.15.0 wrote, and on corrupted copies of them.

`data/` holds two files of a real MDT `files` partition, copied from a table that
`tests/support/mdt_histories.build_mdt_history` wrote with the Spark bundle 0.15.0: a compacted base
HFile (`files-0000-0_<token>_<T>001.hfile`) and a log file holding one HFILE_DATA_BLOCK (the first
deltacommit after the MDT's initialisation). The Spark suite (`test_mdt_listing_hudi.py`) checks the
same code on whole tables against Hudi's own reader.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.hfile.checksum import crc32c
from service.table.hfile.reader import BLOCK_HEADER_SIZE, TRAILER_SIZE, HFileReader
from service.table.mdt.log_blocks import BlockType, HeaderKey, LogBlock, read_log_blocks
from service.table.mdt.records import decode_files_record

DATA = Path(__file__).parent / "data"
BASE_HFILE = DATA / "files-0000-0_0-41-59_20261123182736585001.hfile"
LOG_FILE = DATA / ".files-0000-0_00000000000000010.log.2_0-18-24"
PARTITIONS = ("americas", "asia", "europe")


def _base() -> bytes:
    return BASE_HFILE.read_bytes()


def test_crc32c_matches_the_standard_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_base_hfile_reads_keys_in_hudi_order_with_trailer_and_file_info() -> None:
    reader = HFileReader(_base(), str(BASE_HFILE))
    keys = [key for key, _ in reader.items()]
    assert keys == ["__all_partitions__", *PARTITIONS]
    assert keys == sorted(keys, key=lambda k: k.encode())
    assert reader.trailer.entry_count == 4
    assert reader.trailer.comparator_class_name == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
    assert reader.trailer.compression_codec == 1  # GZ
    assert reader.trailer.num_data_index_levels == 1
    assert reader.schema_text is not None
    assert json.loads(reader.schema_text)["name"] == "HoodieMetadataRecord"
    assert reader.file_info[b"hfile.LASTKEY"][2:].startswith(b"europe")


def test_base_hfile_values_decode_as_files_records() -> None:
    reader = HFileReader(_base(), str(BASE_HFILE))
    assert reader.schema_text is not None
    records = {k: decode_files_record(k, v, reader.schema_text, "test") for k, v in reader.items()}
    assert set(records["__all_partitions__"].live()) == set(PARTITIONS)
    for partition in PARTITIONS:
        files = records[partition].live()
        assert files and all(name.endswith(".parquet") and size > 0 for name, size in files.items())


def test_prefix_lookup_returns_only_matching_keys() -> None:
    reader = HFileReader(_base(), str(BASE_HFILE))
    assert [k for k, _ in reader.items_with_prefix("a")] == ["americas", "asia"]
    assert [k for k, _ in reader.items_with_prefix("europe")] == ["europe"]
    assert reader.items_with_prefix("zzz") == []


def test_log_file_holds_one_hfile_block_with_schema_and_instant_headers() -> None:
    blocks = read_log_blocks(LOG_FILE.read_bytes(), str(LOG_FILE))
    assert [b.block_type for b in blocks] == [BlockType.HFILE_DATA_BLOCK]
    block = blocks[0]
    # MDT data blocks carry exactly SCHEMA and INSTANT_TIME (no BLOCK_IDENTIFIER).
    assert set(block.header) == {HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME}
    assert block.instant_time == "20261123182645169"
    reader = HFileReader(block.content, block.source)
    assert [k for k, _ in reader.items()] == ["__all_partitions__", *PARTITIONS]
    schema = json.loads(block.header[HeaderKey.SCHEMA])
    assert [f["name"] for f in schema["fields"]][:6] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "key",
    ]


def test_our_avsc_equals_the_schema_hudi_writes_without_meta_fields() -> None:
    from service.table.codecs.avro_file import schema_json

    block = read_log_blocks(LOG_FILE.read_bytes(), str(LOG_FILE))[0]
    theirs = json.loads(block.header[HeaderKey.SCHEMA])
    theirs["fields"] = [f for f in theirs["fields"] if not f["name"].startswith("_hoodie_")]
    assert _shape(schema_json("HoodieMetadataRecord")) == _shape(theirs)


def _shape(schema: object) -> object:
    """The schema without docs: names, types, defaults, logical types, field order."""
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k != "doc"}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


# -- corruption: every length is untrusted ----------------------------------------------------


def test_truncated_hfile_is_refused_naming_the_file() -> None:
    with pytest.raises(CorruptTableError, match=r"files-0000-0_.*\.hfile: \d+ bytes, shorter"):
        HFileReader(_base()[:1000], str(BASE_HFILE))


def test_flipped_header_byte_fails_the_block_checksum() -> None:
    data = bytearray(_base())
    data[20] ^= 0xFF  # prevBlockOffset of the first data block: read by nobody, caught only by the CRC
    reader = HFileReader(bytes(data), "flipped.hfile")
    with pytest.raises(CorruptTableError, match=r"flipped.hfile: block at offset 0: checksum mismatch"):
        reader.items()


def test_data_block_size_beyond_the_file_is_refused_with_its_offset() -> None:
    data = bytearray(_base())
    struct.pack_into(">i", data, 8, 10_000_000)  # onDiskSizeWithoutHeader of the data block at 0
    reader = HFileReader(bytes(data), "huge.hfile")
    with pytest.raises(CorruptTableError, match=r"huge.hfile: block at offset 0: on-disk size"):
        reader.items()


def test_cell_key_length_beyond_the_block_is_refused() -> None:
    reader = HFileReader(_base(), "cells.hfile")
    block = reader._read_block(0, b"DATABLK*")
    bad = struct.pack(">ii", 1_000_000, 4) + block.payload[8:]
    forged = type(block)(block.magic, 0, block.on_disk_size, bad)
    with pytest.raises(
        CorruptTableError,
        match=r"cells.hfile \(data block at offset 0\): at offset 4: key length 1000000 out of range",
    ):
        list(reader._block_cells(forged))


def test_trailer_offsets_outside_the_file_are_refused() -> None:
    data = bytearray(_base())
    data[-4:] = b"\x02\x00\x00\x02"  # HFile v2
    with pytest.raises(CorruptTableError, match="major version 2"):
        HFileReader(bytes(data), "v2.hfile")


def test_gzip_garbage_is_refused() -> None:
    data = bytearray(_base())
    start = BLOCK_HEADER_SIZE + 12  # inside the first block's deflate stream
    data[start] ^= 0xFF
    reader_source = "gz.hfile"
    with pytest.raises(CorruptTableError, match=r"gz.hfile: block at offset 0"):
        HFileReader(bytes(data), reader_source).items()


def test_every_truncation_of_a_log_file_yields_corrupt_blocks_not_crashes() -> None:
    raw = LOG_FILE.read_bytes()
    for cut in range(6, len(raw), 997):
        blocks = read_log_blocks(raw[:cut], "cut.log")
        assert [b.block_type for b in blocks] == [BlockType.CORRUPT_BLOCK]


def test_log_reverse_pointer_mismatch_is_a_corrupt_block() -> None:
    raw = bytearray(LOG_FILE.read_bytes())
    raw[-1] ^= 0x01
    assert [b.block_type for b in read_log_blocks(bytes(raw), "ptr.log")] == [BlockType.CORRUPT_BLOCK]


def test_log_file_not_starting_with_magic_is_refused() -> None:
    with pytest.raises(CorruptTableError, match=r"junk.log: at offset 0: no log block magic"):
        read_log_blocks(b"#HUDX#" + b"\x00" * 40, "junk.log")


def test_delete_block_with_records_is_refused() -> None:
    content = struct.pack(">ii", 3, 2) + b"\x02\x00"
    block = LogBlock("x.log", 0, BlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: "1"}, content)
    with pytest.raises(UnsupportedTableError, match=r"x\.log@0: delete block"):
        block.check_empty_delete()
    empty = LogBlock("x.log", 0, BlockType.DELETE_BLOCK, {}, struct.pack(">ii", 3, 1) + b"\x00")
    empty.check_empty_delete()


def test_trailer_size_constant_matches_the_file() -> None:
    data = _base()
    assert data[len(data) - TRAILER_SIZE : len(data) - TRAILER_SIZE + 8] == b'TRABLK"$'
