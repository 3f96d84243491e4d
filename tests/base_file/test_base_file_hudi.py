"""Hudi 0.15's own Java code reads the base files we write: footer, bloom filter, key range, rows."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.table.base_file_writer import BaseFileSchema, BaseFileWriteResult, RollingBaseFileWriter
from service.table.java_string_order import java_min_max
from service.table.storage import Storage
from tests.base_file.helpers import EDGE_KEYS, INSTANT, b64_text, parquet_config, with_meta, write_keys_file
from tests.support.jvm import run_java

pytestmark = pytest.mark.hudi

ORDER_KEYS = ["k\uffee", "k😀", "k\ue000", "ka", "k\U00010000"]


def _write(tmp_path: Path, table: pa.Table, **hoodie: str) -> tuple[BaseFileWriteResult, Path]:
    storage = Storage.for_base_uri(str(tmp_path / "table"))
    [result] = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(table.schema, table_name="trips"),
        parquet_config(**hoodie),
        partition_path="2024/01/01",
        instant_time=INSTANT,
        target_file_size_bytes=1 << 30,
    ).write_all(table)
    return result, tmp_path / "table" / result.path


def _footer(path: Path, keys_file: Path) -> dict[str, str]:
    out = run_java("HudiFooter", "footer", str(path), str(keys_file)).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.mark.parametrize(("filter_type", "n_keys"), [("DYNAMIC_V0", 70_000), ("SIMPLE", 3_000)])
def test_hudi_reads_our_footer(tmp_path: Path, filter_type: str, n_keys: int) -> None:
    # 70k keys: the dynamic filter has grown a second row (60000 per row).
    # All keys start with "k", so the supplementary-vs-U+FFxx order decides the maximum.
    keys = ORDER_KEYS + [f"k{e}" for e in EDGE_KEYS] + [f"k-{i:08d}-é" for i in range(n_keys)]
    table = with_meta({"v": pa.array(range(len(keys)), pa.int64())}, keys)
    result, path = _write(tmp_path, table, **{"hoodie.bloom.index.filter.type": filter_type})
    keys_file = write_keys_file(tmp_path / "keys", keys)

    footer = _footer(path, keys_file)

    assert footer["bloom_type"] == filter_type
    assert footer["bloom_missing"] == "0"
    java_range = (b64_text(footer["min_key"]), b64_text(footer["max_key"]))
    assert java_range == (result.min_record_key, result.max_record_key) == java_min_max(pa.array(keys))
    assert java_range[1] == "k\uffee" and max(keys) == "k😀"
    assert int(footer["row_count"]) == len(keys) == result.record_count
    # Avro's Java parser reads our schema JSON and prints it back byte for byte.
    ours = pq.ParquetFile(path).metadata.metadata[b"parquet.avro.schema"].decode()
    assert footer["avro_schema"] == ours


def test_hudi_merge_reader_reads_our_rows_with_nested_types(tmp_path: Path) -> None:
    keys = ["k1", "k😀", "k\uffee"]
    table = with_meta(
        {
            "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.UTC)] * 3, pa.timestamp("us", "UTC")),
            "dec": pa.array([decimal.Decimal("12.34"), None, decimal.Decimal("-1.00")], pa.decimal128(10, 2)),
            "arr": pa.array([[1, 2, None], None, []], pa.list_(pa.int32())),
            "arrs": pa.array(
                [[{"a": 1, "b": "x"}], None, [{"a": None, "b": None}]],
                pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])),
            ),
            "m": pa.array([[("a", 1)], None, []], pa.map_(pa.string(), pa.int32())),
            "st": pa.array(
                [{"x": 1, "inner": {"z": 2.0}}, None, {"x": 3, "inner": None}],
                pa.struct([("x", pa.int32()), ("inner", pa.struct([("z", pa.float64())]))]),
            ),
            "small": pa.array([1, 2, 3], pa.int8()),
            "d": pa.array([dt.date(2024, 1, 2)] * 3),
        },
        keys,
    )
    result, path = _write(tmp_path, table)

    out = run_java("HudiFooter", "records", str(path)).stdout.splitlines()

    assert out[0] == "record_count=3"
    rows = [json.loads(line) for line in out[1:]]
    assert [r["_hoodie_record_key"] for r in rows] == keys
    assert {r["_hoodie_file_name"] for r in rows} == {result.file_name}
    assert [r["arr"] for r in rows] == [[1, 2, None], None, []]
    assert [r["arrs"] for r in rows] == [[{"a": 1, "b": "x"}], None, [{"a": None, "b": None}]]
    assert [r["m"] for r in rows] == [{"a": 1}, None, {}]
    assert [r["st"] for r in rows] == [{"x": 1, "inner": {"z": 2.0}}, None, {"x": 3, "inner": None}]
    assert [r["small"] for r in rows] == [1, 2, 3]
    assert rows[0]["ts"] == 1704067200000000 and rows[0]["d"] == 19724
    # Decimal(10,2) as a 5-byte big-endian two's-complement fixed: 1234 and -100.
    assert [r["dec"] for r in rows] == [[0, 0, 0, 4, -46], None, [-1, -1, -1, -1, -100]]
