"""Pure parts of the `column_stats` / `bloom_filters` records: hashes, file groups, footer ranges, Avro.

The keys and records themselves are proven against Hudi-written MDTs in
test_mdt_index_records_hudi.py; these pin the arithmetic that one history cannot reach (Java's
`Integer.MIN_VALUE` hash, XXH64's long-input path, several row groups, deletions).
"""

from __future__ import annotations

import io
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.mdt.column_ranges import column_ranges, columns_to_index
from service.table.mdt.index_keys import (
    BLOOM_FILTERS_PARTITION,
    COLUMN_STATS_PARTITION,
    _java_string_hash,
    bloom_filter_key,
    column_stats_key,
    file_group_ids,
    file_group_index,
    file_id,
    partition_index_id,
    xxhash64,
)
from service.table.mdt.index_records import (
    ColumnStats,
    WrappedValue,
    bloom_filter_deletion,
    bloom_filter_record,
    column_stats_deletions,
    column_stats_record,
    decode_index_record,
    encode_index_record,
)
from service.table.mdt.records import log_block_schema_text

FILE = "f1-0_0-1-2_20240101000000000.parquet"


def test_xxhash64_matches_the_reference_vectors() -> None:
    # Reference values of XXH64 (xxhash's sanity tests): empty input, and a >= 32-byte input.
    assert xxhash64(b"", 0) == 0xEF46DB3751D8E999
    assert xxhash64(b"abc", 0) == 0x44BC2CF5AD770999
    assert xxhash64(b"Nobody inspects the spammish repetition", 0) == 0xFBCEA83C8A378BF1


def test_java_string_hash_overflows_like_java() -> None:
    assert _java_string_hash("abc") == 96354
    assert _java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE
    assert _java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # hashed as two UTF-16 units


def test_file_group_index_is_abs_hash_mod_count() -> None:
    assert file_group_index("abc", 4) == 96354 % 4
    assert file_group_index("polygenelubricants", 3) == (1 << 31) % 3
    assert {file_group_index(f"k{i}", 4) for i in range(100)} == {0, 1, 2, 3}


def test_non_partitioned_tables_hash_the_dot() -> None:
    assert partition_index_id("") == partition_index_id(".")
    assert bloom_filter_key("", FILE) == bloom_filter_key(".", FILE)
    assert column_stats_key("a", FILE, "id") != column_stats_key("a", FILE, "qty")
    with pytest.raises(ValueError):
        bloom_filter_key("a", f"a/{FILE}")


def test_file_group_ids_must_be_contiguous() -> None:
    ids = [file_id(COLUMN_STATS_PARTITION, i) for i in (1, 0)]
    assert file_group_ids(COLUMN_STATS_PARTITION, ids, "src") == ("col-stats-0000-0", "col-stats-0001-0")
    with pytest.raises(CorruptTableError, match=r"not 0\.\.1"):
        file_group_ids(BLOOM_FILTERS_PARTITION, ["bloom-filters-0000-0", "bloom-filters-0002-0"], "src")
    with pytest.raises(CorruptTableError, match="does not belong"):
        file_group_ids(BLOOM_FILTERS_PARTITION, ["col-stats-0000-0"], "src")


def test_columns_to_index() -> None:
    assert columns_to_index(["b", "a"], ["a", "b", "c"], True) == ["b", "a"]
    assert columns_to_index([], ["a", "b"], True) == [*HOODIE_META_FIELDS, "a", "b"]
    assert columns_to_index([], [*HOODIE_META_FIELDS, "a"], False) == ["a"]


def _footer(table: pa.Table, tmp_path: Path, row_group_size: int) -> pq.FileMetaData:
    path = tmp_path / FILE
    pq.write_table(table, path, row_group_size=row_group_size)
    return pq.read_metadata(path)


def test_column_ranges_merge_row_groups_in_java_order(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array([5, 1, 9, 3], pa.int64()),
            "qty": pa.array([7, None, -2, 4], pa.int32()),
            "name": pa.array(["\uffff", "b", "\U0001f600", "a"]),
            "price": pa.array([0.0, -0.0, 2.5, -1.5]),
            "day": pa.array([19000, 19001, 18000, 19500], pa.int32()).cast(pa.date32()),
            "raw": pa.array([b"\x01", b"\x02", b"\x90", b"\x91"]),
            "nested": pa.array([{"x": 1}] * 4),
        }
    )
    footer = _footer(table, tmp_path, row_group_size=2)
    assert footer.num_row_groups == 2
    got = {
        s.column_name: s
        for s in column_ranges(footer, FILE, ["id", "qty", "name", "price", "day", "raw", "nested"])
    }
    assert set(got) == {"id", "qty", "name", "price", "day", "raw"}  # a struct's leaf is `nested.x`
    assert (got["id"].min_value, got["id"].max_value) == (
        WrappedValue("LongWrapper", 1),
        WrappedValue("LongWrapper", 9),
    )
    assert got["qty"].min_value == WrappedValue("IntWrapper", -2)
    assert (got["qty"].null_count, got["qty"].value_count) == (1, 4)
    # Java's String.compareTo: a supplementary character (surrogates) sorts below U+FFFF.
    assert got["name"].max_value == WrappedValue("StringWrapper", "\uffff")
    assert got["price"].min_value == WrappedValue("DoubleWrapper", -1.5)
    assert got["day"].min_value == WrappedValue("DateWrapper", 18000)
    # Row groups merge by ByteBuffer.compareTo, on signed bytes: 0x90 < 0x01 and 0x02 > 0x91.
    assert (got["raw"].min_value, got["raw"].max_value) == (
        WrappedValue("BytesWrapper", b"\x90"),
        WrappedValue("BytesWrapper", b"\x02"),
    )
    sizes = [footer.row_group(i).column(0) for i in range(2)]
    assert got["id"].total_size == sum(c.total_compressed_size for c in sizes)
    assert got["id"].total_uncompressed_size == sum(c.total_uncompressed_size for c in sizes)


def test_column_ranges_of_nulls_and_decimals(tmp_path: Path) -> None:
    table = pa.table(
        {
            "q": pa.array([None, None, 3], pa.int32()),
            "s": pa.array([None, None, "x"]),
            "d": pa.array([Decimal("1.25"), Decimal("-7.50"), None], pa.decimal128(10, 2)),
            "fine": pa.array([Decimal("1.12345678901234567")], pa.decimal128(20, 17)).take([0, 0, 0]),
        }
    )
    got = {s.column_name: s for s in column_ranges(_footer(table, tmp_path, 2), FILE, ["q", "s", "d"])}
    # The all-null first row group's unset int min/max read as 0, and merge as a value.
    assert (got["q"].min_value, got["q"].max_value) == (
        WrappedValue("IntWrapper", 0),
        WrappedValue("IntWrapper", 3),
    )
    assert (got["s"].min_value, got["s"].max_value) == (WrappedValue("StringWrapper", "x"),) * 2
    assert got["d"].min_value == WrappedValue("DecimalWrapper", Decimal("-7.500000000000000"))
    with pytest.raises(UnsupportedTableError, match="decimal places"):
        column_ranges(_footer(table, tmp_path, 2), FILE, ["fine"])
    fixed = pa.table({"f": pa.array([b"abcd"], pa.binary(4))})
    with pytest.raises(UnsupportedTableError, match="FIXED_LEN_BYTE_ARRAY"):
        column_ranges(_footer(fixed, tmp_path, 2), FILE, ["f"])


def test_deletions() -> None:
    stubs = column_stats_deletions("asia", FILE, ["id", "qty"])
    assert [r.payload for r in stubs] == [
        ColumnStats(FILE[5:], c, None, None, -1, -1, -1, -1, True) for c in ("id", "qty")
    ]
    assert column_stats_deletions("", FILE, ["id"])[0].key == column_stats_key("", FILE, "id")
    assert column_stats_deletions("asia", ".f1-0_1.log.1_0-1-2", ["id"]) == []
    tomb = bloom_filter_deletion("asia", FILE, "20240102000000000")
    assert tomb is not None and tomb.key == bloom_filter_key("asia", FILE)
    assert bloom_filter_deletion("asia", ".f1-0_1.log.1_0-1-2", "20240102000000000") is None


def test_records_round_trip_through_the_log_block_schema() -> None:
    int_stats = ColumnStats(
        FILE, "qty", WrappedValue("IntWrapper", 3), WrappedValue("IntWrapper", 9), 0, 5, 40, 42, False
    )
    # DateWrapper has IntWrapper's shape: the branch must still come back by name.
    dates = ColumnStats(
        FILE, "day", WrappedValue("DateWrapper", 3), WrappedValue("DateWrapper", 9), 0, 5, 40, 42, False
    )
    for record in (
        column_stats_record("asia", int_stats),
        column_stats_record("", dates),
        *column_stats_deletions("asia", FILE, ["id"]),
        bloom_filter_record("asia", FILE, "20240101000000000", "DYNAMIC_V0", "AAAA"),
        bloom_filter_deletion("asia", FILE, "20240102000000000"),
    ):
        assert record is not None
        value = encode_index_record(record)
        assert decode_index_record(record.key, value, log_block_schema_text(), "test") == record
    with pytest.raises(CorruptTableError):
        decode_index_record("k", io.BytesIO(b"\x00").getvalue(), log_block_schema_text(), "test")
