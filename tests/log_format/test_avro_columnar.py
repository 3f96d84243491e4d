"""The columnar decode of Avro data blocks (`log_format.avro_columnar`) equals the per-record decode on
every type the log reader supports, is taken for every schema it can prove, and gives way to the
per-record decode (which names the record at fault) whenever a record did not decode from exactly
its own bytes. Real Hudi-written blocks: test_merged_read_hudi.py."""

from __future__ import annotations

import datetime as dt
import io
import json
import random
import struct
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from service.errors import CorruptLogBlockError
from service.table.log_format import avro_columnar, content
from service.table.log_format.blocks import DataBlock, HeaderKey, LogBlockType
from service.table.log_format.reader import read_log_blocks
from tests.log_format.encode import block

PATH = "p/.f1-0_001.log.1_0-1-0"
ROWS = 400


def _nullable(avro: Any) -> list[Any]:
    return ["null", avro]


TS_MICROS = {"type": "long", "logicalType": "timestamp-micros"}
DECIMAL_FIXED = {
    "type": "fixed",
    "name": "dec",
    "size": 9,
    "logicalType": "decimal",
    "precision": 20,
    "scale": 4,
}
NESTED = {"type": "record", "name": "nested", "fields": [
    {"name": "n_long", "type": "long"}, {"name": "n_str", "type": _nullable("string"), "default": None},
    {"name": "n_day", "type": {"type": "int", "logicalType": "date"}}]}  # fmt: skip
# Every field type the columnar decode proves (it is taken for this schema).
PROVED = {
    "type": "record", "name": "r", "namespace": "hoodie.t",
    "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
        {"name": "y", "type": "bytes"},
        {"name": "nb", "type": _nullable("boolean")}, {"name": "ni", "type": _nullable("int")},
        {"name": "nl", "type": ["long", "null"]}, {"name": "nf", "type": _nullable("float")},
        {"name": "nd", "type": _nullable("double")}, {"name": "ns", "type": _nullable("string")},
        {"name": "ny", "type": _nullable("bytes")},
        {"name": "fx", "type": {"type": "fixed", "name": "fx8", "size": 8}},
        {"name": "dec", "type": _nullable(DECIMAL_FIXED)},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "tms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tus", "type": _nullable({"type": "long", "logicalType": "time-micros"})},
        {"name": "at", "type": TS_MICROS}, {"name": "nat", "type": _nullable(TS_MICROS)},
        {"name": "ms", "type": _nullable({"type": "long", "logicalType": "timestamp-millis"})},
        {"name": "lts", "type": _nullable({"type": "long", "logicalType": "local-timestamp-micros"})},
        {"name": "rec", "type": NESTED}, {"name": "nrec", "type": _nullable({**NESTED, "name": "nested2"})},
    ],
}  # fmt: skip
# What it leaves to the per-record decode: blocks counts make an array's or map's bytes a writer's
# choice, an enum decodes to its symbol, a decimal as bytes has no fixed size.
LEFT = {
    "array": {"type": "array", "items": "long"},
    "map": {"type": "map", "values": _nullable("string")},
    "enum": {"type": "enum", "name": "colour", "symbols": ["RED", "GREEN"]},
    "bytes_decimal": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
    "reference": "nested",  # a named type used again by name (defined in the field before)
}
EDGE_LONGS = [0, 1, -1, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63)]
EDGE_INTS = [0, 1, -1, 63, 64, -65, 8191, 8192, 2**31 - 1, -(2**31)]


def _value(avro: Any, rng: random.Random, i: int) -> Any:
    if isinstance(avro, list):
        return None if rng.random() < 0.3 else _value(next(b for b in avro if b != "null"), rng, i)
    if avro == "nested":
        avro = NESTED
    if isinstance(avro, str):
        return {
            "boolean": lambda: rng.random() < 0.5,
            "int": lambda: EDGE_INTS[i % len(EDGE_INTS)] if i % 3 else rng.randint(-(2**31), 2**31 - 1),
            "long": lambda: EDGE_LONGS[i % len(EDGE_LONGS)] if i % 3 else rng.randint(-(2**63), 2**63 - 1),
            "float": lambda: rng.uniform(-1e6, 1e6),
            "double": lambda: rng.uniform(-1e300, 1e300),
            "string": lambda: "".join(rng.choice("aé€𝄞 ") for _ in range(rng.choice([0, 1, 5, 70, 200]))),
            "bytes": lambda: rng.randbytes(rng.choice([0, 1, 63, 64, 300])),
        }[avro]()
    logical, kind = avro.get("logicalType"), avro["type"]
    if kind == "record":
        return {f["name"]: _value(f["type"], rng, i) for f in avro["fields"]}
    if logical == "decimal":
        digits = 10 ** avro["precision"] - 1
        return Decimal(rng.randint(-digits, digits)).scaleb(-avro["scale"])
    if kind == "fixed":
        return rng.randbytes(avro["size"])
    if kind == "array":
        return [rng.randint(-100, 100) for _ in range(rng.randint(0, 4))]
    if kind == "map":
        return {f"k{n}": rng.choice([None, "v"]) for n in range(rng.randint(0, 3))}
    if kind == "enum":
        return rng.choice(avro["symbols"])
    if logical == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-50_000, 50_000))
    if logical == "time-millis":
        return dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999) * 1000)
    if logical == "time-micros":
        return dt.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999_999))
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    at = epoch + dt.timedelta(microseconds=rng.randint(-(2**50), 2**50))
    if logical == "timestamp-millis":
        at = at.replace(microsecond=at.microsecond // 1000 * 1000)
    return at.replace(tzinfo=None) if logical.startswith("local-") else at


def _rows(schema: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{f["name"]: _value(f["type"], rng, i) for f in schema["fields"]} for i in range(ROWS)]


def _block(schema: dict[str, Any], datums: list[bytes]) -> bytes:
    import json

    body = struct.pack(">ii", 3, len(datums)) + b"".join(struct.pack(">i", len(d)) + d for d in datums)
    header = {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: json.dumps(schema)}
    return block(LogBlockType.AVRO_DATA_BLOCK, header, body)


def _datums(schema: dict[str, Any], rows: list[dict[str, Any]]) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


def _decode(data: bytes) -> pa.Table:
    [read] = list(read_log_blocks(data, PATH))
    assert isinstance(read, DataBlock)
    return read.records


def _both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[pa.Table, pa.Table, bool]:
    """(the reader's table, the per-record decode's table, whether the columnar decode was taken)."""
    taken: list[bool] = []
    real = avro_columnar.decode_columnar

    def spy(*args: Any) -> pa.Table | None:
        result = real(*args)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(content, "decode_columnar", spy)
    ours = _decode(data)
    monkeypatch.setattr(content, "decode_columnar", lambda *args: None)
    per_record = _decode(data)
    return ours, per_record, taken == [True]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_columnar_decode_equals_the_per_record_one_on_every_type_it_proves(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _block(PROVED, _datums(PROVED, _rows(PROVED, seed)))
    ours, per_record, columnar = _both(data, monkeypatch)
    assert columnar, "the columnar decode was not taken"
    assert ours.schema == per_record.schema and ours.num_rows == ROWS
    assert ours.equals(per_record)


@pytest.mark.parametrize("name", sorted(LEFT))
def test_types_it_cannot_prove_are_left_to_the_per_record_decode(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "n", "type": NESTED},
        {"name": "x", "type": _nullable(LEFT[name])}]}  # fmt: skip
    data = _block(schema, _datums(schema, _rows(schema, 7)))
    ours, per_record, columnar = _both(data, monkeypatch)
    assert not columnar and ours.equals(per_record)


def test_a_record_not_filling_its_length_is_left_to_the_per_record_decode_which_names_it() -> None:
    """Record 5 carries a byte past its datum: read back to back, every later record would be read
    one byte off (garbage, or an error, or a panic in the reader)."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "s", "type": _nullable("string")}]}  # fmt: skip
    datums = _datums(schema, [{"id": i, "s": "x" * i} for i in range(20)])
    datums[5] += b"\x02"
    data = b"".join(struct.pack(">i", len(d)) + d for d in datums)
    arrow_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    assert avro_columnar.decode_columnar(data, 0, len(datums), schema, arrow_schema) is None
    with pytest.raises(CorruptLogBlockError, match="record 5 decodes to 8 bytes, its length says 9"):
        _decode(_block(schema, datums))
    # One byte short, the last record: the reader runs out (a Rust panic there) and gives way too.
    datums = [*datums[:5], datums[5][:-2]]
    data = b"".join(struct.pack(">i", len(d)) + d for d in datums)
    assert avro_columnar.decode_columnar(data, 0, len(datums), schema, arrow_schema) is None


def test_an_overlong_varint_a_java_writer_never_writes_is_left_to_the_per_record_decode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """0x82 0x00 is 1 in two bytes: the sizes computed from the values say 1 byte, so the columnar
    result is not proved, and the per-record decode (which accepts it, as Java's does) is used."""
    schema = {"type": "record", "name": "r", "fields": [{"name": "id", "type": "long"}]}
    ours, per_record, columnar = _both(_block(schema, [b"\x82\x00", b"\x04"]), monkeypatch)
    assert not columnar and ours.column("id").to_pylist() == [1, 2] and ours.equals(per_record)


def test_bytes_after_the_last_record_leave_the_block_to_the_per_record_decode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`HoodieAvroDataBlock` reads its count of records and ignores what follows; read as one
    container block, trailing bytes would be taken for records' bytes, so the columnar decode gives
    way unless the last record ends where the content does."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "id", "type": "long"}, {"name": "s", "type": _nullable("string")}]}  # fmt: skip
    rows = [{"id": i, "s": "x" * i} for i in range(20)]
    datums = _datums(schema, rows)
    clean = _block(schema, datums)
    ours, per_record, columnar = _both(clean, monkeypatch)
    assert columnar and ours.equals(per_record)
    # The same records, and one record's worth of bytes after them that the count does not cover.
    body = struct.pack(">ii", 3, len(datums)) + b"".join(struct.pack(">i", len(d)) + d for d in datums)
    trailing = body + struct.pack(">i", len(datums[3])) + datums[3]
    header = {HeaderKey.INSTANT_TIME: "001", HeaderKey.SCHEMA: json.dumps(schema)}
    ours, per_record, columnar = _both(block(LogBlockType.AVRO_DATA_BLOCK, header, trailing), monkeypatch)
    assert not columnar
    assert ours.equals(per_record) and ours.num_rows == 20
