"""The log block reader on crafted bytes: framing, torn writes as Java's HoodieLogFileReader skips them,
refusals by name, and sizes that lie. Real Hudi-written logs are read in test_merged_read_hudi.py."""

from __future__ import annotations

import struct

import pytest

from service.errors import CorruptLogBlockError, UnsupportedLogBlockError
from service.table.log_format.blocks import (
    MAGIC,
    CommandBlock,
    CorruptBlock,
    DataBlock,
    DeleteBlock,
    HeaderKey,
    LogBlock,
    LogBlockType,
)
from service.table.log_format.reader import read_log_blocks
from tests.log_format.encode import avro_block, block, delete_block, rollback_block, row

PATH = "p/.f1-0_001.log.1_0-1-0"


def _read(data: bytes, transactional: bool = False) -> list[LogBlock]:
    return list(read_log_blocks(data, PATH, write_transactional=transactional))


def test_reader_reads_data_delete_and_command_blocks() -> None:
    first = avro_block("002", [row("1", 5, "a", "002"), row("2", 6, "b", "002")])
    second = delete_block("003", [("1", ("LongWrapper", 9)), ("2", None)])
    third = rollback_block("005", "004")
    blocks = _read(first + second + third)
    assert [type(b) for b in blocks] == [DataBlock, DeleteBlock, CommandBlock]
    data, deletes, command = blocks
    assert data.instant_time == "002" and data.block_type is LogBlockType.AVRO_DATA_BLOCK
    assert data.records.column("name").to_pylist() == ["a", "b"]
    assert data.location.offset == 0 and data.location.length == len(first)
    assert [(d.record_key, d.ordering_value, d.ordering_type) for d in deletes.records] == [
        ("1", 9, "LongWrapper"),
        ("2", None, None),
    ]
    assert deletes.location.offset == len(first)
    assert command.target_instant_time == "004" and command.instant_time == "005"


def test_reader_turns_a_torn_tail_into_a_corrupt_block() -> None:
    good = avro_block("002", [row("1", 5)])
    torn = avro_block("003", [row("2", 6)])[:-20]
    blocks = _read(good + torn)
    assert isinstance(blocks[0], DataBlock)
    assert isinstance(blocks[1], CorruptBlock)
    assert blocks[1].location.offset == len(good) and blocks[1].location.length == len(torn)


def test_reader_skips_a_corrupt_block_up_to_the_next_magic() -> None:
    """A block whose reverse pointer disagrees with its size spans to the next `#HUDI#`
    (`HoodieLogFileReader.scanForNextAvailableBlockOffset`); the block after it is read."""
    bad = bytearray(avro_block("002", [row("1", 5)]))
    bad[-1] ^= 0xFF  # the reverse pointer no longer equals block size + 6
    good = avro_block("003", [row("2", 6)])
    blocks = _read(bytes(bad) + good)
    assert isinstance(blocks[0], CorruptBlock) and "reverse pointer" in blocks[0].reason
    assert blocks[0].location.length == len(bad)
    assert isinstance(blocks[1], DataBlock) and blocks[1].instant_time == "003"


def test_reader_refuses_torn_blocks_on_write_transactional_storage() -> None:
    torn = avro_block("003", [row("2", 6)])[:-20]
    with pytest.raises(CorruptLogBlockError, match=r"block at offset 0: .*write-transactional"):
        _read(torn, transactional=True)


def test_reader_refuses_bytes_without_magic() -> None:
    with pytest.raises(CorruptLogBlockError, match="offset 0: no #HUDI# magic"):
        _read(b"#NOPE#" + b"\0" * 40)


def test_reader_ends_quietly_on_a_partial_magic() -> None:
    good = avro_block("002", [row("1", 5)])
    assert len(_read(good + MAGIC[:3])) == 1


@pytest.mark.parametrize("ordinal", [9, 42])
def test_reader_refuses_header_keys_of_newer_writers(ordinal: int) -> None:
    data = block(LogBlockType.AVRO_DATA_BLOCK, {HeaderKey.INSTANT_TIME: "001", ordinal: "x"}, b"")
    with pytest.raises(UnsupportedLogBlockError, match=rf"key ordinal {ordinal} .*newer Hudi"):
        _read(data)


@pytest.mark.parametrize("version", [1, 2])
def test_reader_refuses_kryo_delete_blocks_by_name(version: int) -> None:
    data = delete_block("002", [("1", None)], version=version)
    with pytest.raises(UnsupportedLogBlockError, match=rf"content version {version} holds Kryo"):
        _read(data)


def test_reader_refuses_hfile_data_blocks_by_name() -> None:
    data = block(LogBlockType.HFILE_DATA_BLOCK, {HeaderKey.INSTANT_TIME: "001"}, b"HFILE")
    with pytest.raises(UnsupportedLogBlockError, match="HFILE_DATA_BLOCK"):
        _read(data)


def test_reader_refuses_unknown_block_types_and_format_versions() -> None:
    with pytest.raises(UnsupportedLogBlockError, match="block type 9"):
        _read(block(9, {HeaderKey.INSTANT_TIME: "001"}, b""))
    with pytest.raises(UnsupportedLogBlockError, match="log format version 2"):
        _read(block(LogBlockType.COMMAND_BLOCK, {HeaderKey.INSTANT_TIME: "001"}, b"", format_version=2))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (struct.pack(">ii", 3, 2**31 - 1), "claims 2147483647 records"),
        (struct.pack(">iii", 3, 1, 2**31 - 1), "record 0 needs 2147483647 bytes"),
        (struct.pack(">iii", 3, 1, -5), "record 0 needs -5 bytes"),
    ],
)
def test_reader_checks_lengths_inside_a_block_before_using_them(content: bytes, message: str) -> None:
    import json

    from tests.log_format.encode import SCHEMA

    header = {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: json.dumps(SCHEMA)}
    with pytest.raises(CorruptLogBlockError, match=message):
        _read(block(LogBlockType.AVRO_DATA_BLOCK, header, content))


def test_reader_checks_header_and_content_lengths_against_the_block() -> None:
    frame = bytearray(block(LogBlockType.COMMAND_BLOCK, {HeaderKey.INSTANT_TIME: "001"}, b""))
    # The header's only value length (after magic, size, version, type, count, key) claims 2 GiB.
    struct.pack_into(">i", frame, 6 + 8 + 4 + 4 + 4 + 4, 2**31 - 1)
    with pytest.raises(CorruptLogBlockError, match="header value of 2147483647 bytes does not fit"):
        _read(bytes(frame))
    frame = bytearray(block(LogBlockType.COMMAND_BLOCK, {}, b""))
    struct.pack_into(">q", frame, 6 + 8 + 4 + 4 + 4, 2**62)  # content length
    with pytest.raises(CorruptLogBlockError, match="content of 4611686018427387904 bytes does not fit"):
        _read(bytes(frame))


def _one_record_block(schema: dict[str, object], datum: bytes, length: int | None = None) -> bytes:
    import json

    content = struct.pack(">iii", 3, 1, len(datum) if length is None else length) + datum
    header = {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: json.dumps(schema)}
    return block(LogBlockType.AVRO_DATA_BLOCK, header, content)


def test_reader_refuses_a_datum_that_does_not_fill_its_length() -> None:
    # Records are decoded in place from one stream over the block: a datum shorter than its length
    # prefix would otherwise leave the next record misaligned, a longer one would eat into it.
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    datum = b"\x02"  # id = 1 (zig-zag)
    padded = datum + b"\x00"
    with pytest.raises(CorruptLogBlockError, match="record 0 decodes to 1 bytes, its length says 2"):
        _read(_one_record_block(schema, padded))
    two_fields = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "id", "type": "long"}, {"name": "n", "type": "long"}],
    }
    content = struct.pack(">iii", 3, 2, 1) + b"\x02" + struct.pack(">i", 1) + b"\x04"
    import json

    header = {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: json.dumps(two_fields)}
    with pytest.raises(CorruptLogBlockError, match="record 0 decodes to 2 bytes, its length says 1"):
        _read(block(LogBlockType.AVRO_DATA_BLOCK, header, content))


def test_reader_reads_date_time_and_timestamp_fields_as_their_arrow_types() -> None:
    import datetime as dt
    import io

    import fastavro
    import pyarrow as pa

    ts_micros = {"type": "long", "logicalType": "timestamp-micros"}
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "at", "type": ts_micros},
            {"name": "maybe_at", "type": ["null", ts_micros], "default": None},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
            {"name": "tod", "type": {"type": "long", "logicalType": "time-micros"}},
            {
                "name": "nested",
                "type": {
                    "type": "record",
                    "name": "n",
                    "fields": [{"name": "d", "type": {"type": "int", "logicalType": "date"}}],
                },
            },
        ],
    }
    at = dt.datetime(2026, 11, 26, 1, 2, 3, 456789, tzinfo=dt.UTC)
    record = {
        "at": at,
        "maybe_at": None,
        "day": dt.date(2026, 11, 26),
        "ms": dt.datetime(1969, 12, 31, 23, 59, 59, 995000, tzinfo=dt.UTC),
        "local": dt.datetime(2026, 1, 2, 3, 4, 5, 6),
        "tod": dt.time(1, 2, 3, 4),
        "nested": {"d": dt.date(1970, 1, 2)},
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    [data] = _read(_one_record_block(schema, buf.getvalue()))
    assert isinstance(data, DataBlock)
    assert data.records.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert data.records.schema.field("day").type == pa.date32()
    assert data.records.schema.field("tod").type == pa.time64("us")
    assert data.records.to_pylist() == [record]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "record", "name": "r", "fields": [{"name": "id", "type": "rtring"}]},  # a bit flipped
        {"type": "record", "name": "r", "fields": [{"name": "id"}]},
        {"type": "record", "name": "r", "fields": "id"},
    ],
)
def test_reader_refuses_a_header_schema_that_is_json_but_no_avro_schema(schema: dict[str, object]) -> None:
    with pytest.raises(CorruptLogBlockError, match="header SCHEMA is not an Avro schema"):
        _read(_one_record_block(schema, b"\x02"))
