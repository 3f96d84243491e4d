"""Base files written from Arrow: footers, meta columns, Parquet conventions, size roll-over."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.config.parquet import BloomFilterType, ParquetWriteConfig
from service.errors import HudiTableServiceError
from service.table.avro_schema import arrow_to_avro_schema, avro_schema_to_json
from service.table.base_file_writer import (
    BaseFileSchema,
    BaseFileWriteResult,
    RollingBaseFileWriter,
    base_file_name,
)
from service.table.bloom import BloomFilterConfig, HoodieBloomFilter
from service.table.storage import Storage
from tests.base_file.helpers import (
    EDGE_KEYS,
    INSTANT,
    parquet_config,
    random_table,
    small_bloom_config,
    with_meta,
)

HUDI_FOOTER_KEYS = {
    b"parquet.avro.schema",
    b"writer.model.name",
    b"org.apache.hudi.bloomfilter",
    b"hoodie_bloom_filter_type_code",
    b"hoodie_min_record_key",
    b"hoodie_max_record_key",
}
# Java order puts U+FFEE after the surrogate pair of U+1F600; Python's order is the reverse.
ORDER_KEYS = ["k\uffee", "k😀", "k\ue000", "ka", "k\U00010000"]


def typed_table(keys: list[str]) -> pa.Table:
    n = len(keys)
    return with_meta(
        {
            "id": pa.array(keys),
            "ts": pa.array([dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)] * n, pa.timestamp("us", "UTC")),
            "dec": pa.array([decimal.Decimal("12.34")] * n, pa.decimal128(10, 2)),
            "small": pa.array(range(n), pa.int8()),
            "arr": pa.array([[1, None]] * n, pa.list_(pa.int32())),
            "m": pa.array([[("a", 1)]] * n, pa.map_(pa.string(), pa.int32())),
        },
        keys,
    )


def write_one(tmp_path: Path, table: pa.Table, **hoodie: str) -> tuple[BaseFileWriteResult, pq.ParquetFile]:
    storage = Storage.for_base_uri(str(tmp_path / "table"))
    results = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(table.schema, table_name="trips"),
        parquet_config(**hoodie),
        partition_path="2024/01/01",
        instant_time=INSTANT,
        target_file_size_bytes=120 * 1024 * 1024,
        file_id_prefix="0b5dd9a2-4a5e-4e5c-9d3c-5d2f2b0a1c11",
    ).write_all(table)
    assert len(results) == 1
    return results[0], pq.ParquetFile(tmp_path / "table" / results[0].path)


def test_base_file_footer_has_hudis_keys_and_bloom_over_all_keys(tmp_path: Path) -> None:
    keys = ORDER_KEYS + EDGE_KEYS
    _, parquet = write_one(tmp_path, typed_table(keys))
    footer = parquet.metadata.metadata
    assert set(footer) == HUDI_FOOTER_KEYS  # in particular no ARROW:schema
    assert footer[b"writer.model.name"] == b"avro"
    assert footer[b"hoodie_bloom_filter_type_code"] == b"DYNAMIC_V0"
    expected_bloom = HoodieBloomFilter(BloomFilterConfig())
    expected_bloom.add_keys(keys)
    assert footer[b"org.apache.hudi.bloomfilter"].decode() == expected_bloom.serialize_to_string()
    bloom = HoodieBloomFilter.from_string(
        footer[b"org.apache.hudi.bloomfilter"].decode(), BloomFilterType.DYNAMIC_V0
    )
    assert bloom.might_contain_keys(keys).all()
    avro = json.loads(footer[b"parquet.avro.schema"])
    assert (avro["name"], avro["namespace"]) == ("trips_record", "hoodie.trips")
    assert [f["name"] for f in avro["fields"]] == parquet.schema_arrow.names


def test_base_file_min_max_keys_are_in_java_order(tmp_path: Path) -> None:
    result, parquet = write_one(tmp_path, typed_table(ORDER_KEYS))
    footer = parquet.metadata.metadata
    assert footer[b"hoodie_min_record_key"].decode() == "ka"
    assert footer[b"hoodie_max_record_key"].decode() == "k\uffee"  # Python's max() would say k😀
    assert max(ORDER_KEYS) == "k\U0001f600"
    assert (result.min_record_key, result.max_record_key) == ("ka", "k\uffee")


def test_base_file_rewrites_only_the_file_name_meta_column(tmp_path: Path) -> None:
    table = typed_table(EDGE_KEYS)
    result, parquet = write_one(tmp_path, table)
    assert re.fullmatch(
        r"0b5dd9a2-4a5e-4e5c-9d3c-5d2f2b0a1c11-0_0-0-0_" + INSTANT + r"\.parquet", result.file_name
    )
    assert result.path == f"2024/01/01/{result.file_name}"
    assert result.file_id == "0b5dd9a2-4a5e-4e5c-9d3c-5d2f2b0a1c11-0"
    assert result.record_count == len(EDGE_KEYS)
    assert result.file_size_bytes == os.path.getsize(tmp_path / "table" / result.path)
    assert result.write_time_ms >= 0
    back = parquet.read()
    assert back.column("_hoodie_file_name").to_pylist() == [result.file_name] * len(EDGE_KEYS)
    for name in (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
    ):
        assert back.column(name).to_pylist() == table.column(name).to_pylist()
    assert back.column("arr").to_pylist() == table.column("arr").to_pylist()


def test_base_file_physical_types_follow_parquet_avro(tmp_path: Path) -> None:
    _, parquet = write_one(tmp_path, typed_table(["a", "b"]))
    schema = parquet.schema
    columns = {schema.column(i).path: schema.column(i) for i in range(len(schema))}
    assert columns["_hoodie_record_key"].physical_type == "BYTE_ARRAY"
    assert columns["_hoodie_record_key"].logical_type.type == "STRING"
    ts = columns["ts"]
    assert ts.physical_type == "INT64"
    logical = json.loads(ts.logical_type.to_json())
    assert (logical["Type"], logical["isAdjustedToUTC"], logical["timeUnit"]) == (
        "Timestamp",
        True,
        "microseconds",
    )
    assert columns["dec"].physical_type == "FIXED_LEN_BYTE_ARRAY" and columns["dec"].length == 5
    assert columns["small"].physical_type == "INT32" and columns["small"].logical_type.type == "NONE"
    assert "arr.list.element" in columns  # standard 3-level list (see base_file_writer's docstring)
    assert columns["m.key_value.key"].max_definition_level == 2  # map key required
    row_group = parquet.metadata.row_group(0)
    assert {row_group.column(i).compression for i in range(row_group.num_columns)} == {"GZIP"}


@pytest.mark.parametrize(
    ("codec", "expected"), [("snappy", "SNAPPY"), ("zstd", "ZSTD"), ("uncompressed", "UNCOMPRESSED")]
)
def test_base_file_compression_codec_from_hoodie_key(tmp_path: Path, codec: str, expected: str) -> None:
    _, parquet = write_one(tmp_path, typed_table(EDGE_KEYS), **{"hoodie.parquet.compression.codec": codec})
    row_group = parquet.metadata.row_group(0)
    assert {row_group.column(i).compression for i in range(row_group.num_columns)} == {expected}


def test_base_file_simple_bloom_has_no_type_code(tmp_path: Path) -> None:
    _, parquet = write_one(tmp_path, typed_table(EDGE_KEYS), **{"hoodie.bloom.index.filter.type": "SIMPLE"})
    footer = parquet.metadata.metadata
    assert b"hoodie_bloom_filter_type_code" not in footer
    bloom = HoodieBloomFilter.from_string(footer[b"org.apache.hudi.bloomfilter"].decode(), None)
    assert bloom.type_code is BloomFilterType.SIMPLE and bloom.might_contain_keys(EDGE_KEYS).all()


def test_base_file_embeds_the_given_avro_schema_and_its_nullability(tmp_path: Path) -> None:
    table = typed_table(["x", "y"])
    avro = arrow_to_avro_schema(table.schema, "trips")
    avro["fields"] = avro["fields"][5:]  # as commit metadata holds it: no meta fields
    for field in avro["fields"]:
        if field["name"] == "id":
            field["type"], _ = "string", field.pop("default")
    schema = BaseFileSchema.create(table.schema, avro_schema_to_json(avro))
    storage = Storage.for_base_uri(str(tmp_path))
    [result] = RollingBaseFileWriter(
        storage,
        schema,
        parquet_config(),
        partition_path="",
        instant_time=INSTANT,
        target_file_size_bytes=10**8,
    ).write_all(table)
    parquet = pq.ParquetFile(tmp_path / result.path)
    embedded = json.loads(parquet.metadata.metadata[b"parquet.avro.schema"])
    assert [f["name"] for f in embedded["fields"][:5]] == table.schema.names[:5]
    assert embedded["fields"][5:] == avro["fields"]
    assert not parquet.schema_arrow.field("id").nullable  # Parquet `required`, like parquet-avro
    with pytest.raises(HudiTableServiceError, match="has nulls"):
        schema.conform(table.set_column(5, "id", pa.array(["x", None])))


def test_base_file_schema_checks_meta_columns_and_names() -> None:
    table = typed_table(["x"])
    with pytest.raises(HudiTableServiceError, match="meta columns"):
        BaseFileSchema.create(table.drop_columns(["_hoodie_file_name"]).schema, table_name="t")
    wrong = arrow_to_avro_schema(table.drop_columns(["small"]).schema, "t")
    with pytest.raises(HudiTableServiceError, match="do not match"):
        BaseFileSchema.create(table.schema, avro_schema_to_json(wrong))
    with pytest.raises(HudiTableServiceError, match="base file name"):
        base_file_name("a_b", "0-0-0", INSTANT)


def test_base_file_refuses_null_record_keys(tmp_path: Path) -> None:
    table = typed_table(["x", "y"]).set_column(2, "_hoodie_record_key", pa.array(["x", None]))
    storage = Storage.for_base_uri(str(tmp_path))
    with pytest.raises(HudiTableServiceError, match="null"):
        RollingBaseFileWriter(
            storage,
            BaseFileSchema.create(table.schema, table_name="t"),
            parquet_config(),
            partition_path="p",
            instant_time=INSTANT,
            target_file_size_bytes=10**8,
        ).write_all(table)
    assert not list((tmp_path / "p").iterdir())  # the partial file was deleted


def test_base_file_row_groups_follow_block_size(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    batches = [random_table(5000, "random", rng, start=i * 5000) for i in range(20)]
    storage = Storage.for_base_uri(str(tmp_path))
    config = small_bloom_config(
        **{"hoodie.parquet.block.size": str(300_000), "hoodie.parquet.page.size": "65536"}
    )
    [result] = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(batches[0].schema, table_name="t"),
        config,
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=50_000_000,
    ).write_all(batches)
    metadata = pq.ParquetFile(tmp_path / result.path).metadata
    sizes = [
        sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
        for rg in (metadata.row_group(i) for i in range(metadata.num_row_groups))
    ]
    assert len(sizes) > 5
    assert max(sizes) <= 1.2 * 300_000


def _roll_over(
    tmp_path: Path, batches: list[pa.Table], config: ParquetWriteConfig, target: int
) -> list[BaseFileWriteResult]:
    """`batches` through one rolling writer into partition `p` under `tmp_path`, file ids `f-<n>`."""
    with RollingBaseFileWriter(
        Storage.for_base_uri(str(tmp_path)),
        BaseFileSchema.create(batches[0].schema, table_name="t"),
        config,
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=target,
        file_id_prefix="f",
    ) as writer:
        for batch in batches:
            writer.write(batch)
        return writer.close()


@pytest.mark.parametrize(
    ("kind", "target", "batch_rows"),
    [
        ("random", 1_500_000, 7000),
        ("random", 4_000_000, 50_000),
        ("lowcard", 300_000, 20_000),
        ("drift", 1_000_000, 9000),
        ("drift", 2_500_000, 3000),
    ],
)
def test_base_file_roll_over_keeps_files_near_target(
    tmp_path: Path, kind: str, target: int, batch_rows: int
) -> None:
    rng = np.random.default_rng([target, batch_rows])
    total_rows = 200_000
    batches = [random_table(batch_rows, kind, rng, start=s) for s in range(0, total_rows, batch_rows)]
    results = _roll_over(tmp_path, batches, small_bloom_config(), target)
    sizes = [r.file_size_bytes / target for r in results]
    assert len(results) >= 2, sizes
    assert all(size <= 1.05 for size in sizes), sizes
    assert all(size >= 0.8 for size in sizes[:-1]), sizes
    assert [r.file_id for r in results] == [f"f-{i}" for i in range(len(results))]
    keys: list[str] = []
    for r in results:
        assert r.file_size_bytes == os.path.getsize(tmp_path / r.path)
        keys.extend(pq.read_table(tmp_path / r.path, columns=["_hoodie_record_key"]).column(0).to_pylist())
    assert keys == [k for b in batches for k in b.column("_hoodie_record_key").to_pylist()]  # order kept
    assert sum(r.record_count for r in results) == sum(b.num_rows for b in batches)


def test_a_target_smaller_than_the_footer_still_gives_files_half_a_target_of_data(tmp_path: Path) -> None:
    """Hudi's default bloom filter (dynamic, 60,000 entries at 1e-9) takes about 430 KB of every
    footer. A target of 200 KB cannot hold it: each file then holds at least half the target in
    data, as Hudi's writer holds the whole target (`HoodieBaseParquetWriter.canWrite` compares only
    the data written), instead of a file per row (5,000 files of 435 KB for 1.3 MB of input)."""
    rng = np.random.default_rng(11)
    batches = [random_table(2_000, "random", rng, start=s) for s in range(0, 20_000, 2_000)]
    target = 200_000
    results = _roll_over(tmp_path, batches, parquet_config(), target)  # Hudi's default bloom filter
    footers = [pq.ParquetFile(tmp_path / r.path).metadata.serialized_size for r in results]
    assert min(footers) > target, "the footer is not larger than the target: the case is not tested"
    data = [r.file_size_bytes - footer for r, footer in zip(results, footers, strict=True)]
    assert all(d >= 0.4 * target for d in data[:-1]), (len(results), data[:10])
    assert sum(r.record_count for r in results) == 20_000


def test_base_file_abort_deletes_every_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    batches = [random_table(10_000, "random", rng, start=i * 10_000) for i in range(10)]
    storage = Storage.for_base_uri(str(tmp_path))
    with (
        pytest.raises(RuntimeError, match="boom"),
        RollingBaseFileWriter(
            storage,
            BaseFileSchema.create(batches[0].schema, table_name="t"),
            small_bloom_config(),
            partition_path="p",
            instant_time=INSTANT,
            target_file_size_bytes=400_000,
        ) as writer,
    ):
        for batch in batches:
            writer.write(batch)
        assert writer.results  # some files were completed
        raise RuntimeError("boom")
    assert not list((tmp_path / "p").iterdir())


def test_base_file_no_rows_no_files(tmp_path: Path) -> None:
    table = typed_table(["x"]).slice(0, 0)
    storage = Storage.for_base_uri(str(tmp_path))
    results = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(table.schema, table_name="t"),
        parquet_config(),
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=10**6,
    ).write_all([table])
    assert results == []


def test_base_file_on_create_is_told_each_path_before_the_file_exists(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    batches = [random_table(5000, "random", rng, start=i * 5000) for i in range(8)]
    storage = Storage.for_base_uri(str(tmp_path))
    announced: list[str] = []

    def on_create(path: str) -> None:
        assert not (tmp_path / path).exists()
        announced.append(path)

    with RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(batches[0].schema, table_name="t"),
        small_bloom_config(),
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=500_000,
        on_create=on_create,
    ) as writer:
        for batch in batches:
            writer.write(batch)
        results = writer.close()
    assert len(results) > 1
    assert announced == [r.path for r in results]


def test_base_file_write_file_gives_the_rows_one_file_unless_they_exceed_the_target(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = random_table(100_000, "random", rng)
    storage = Storage.for_base_uri(str(tmp_path))
    with RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(rows.schema, table_name="t"),
        small_bloom_config(),
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=2_000_000,
        file_id_prefix="f",
    ) as writer:
        per_row = writer.compressed_bytes(rows, rows.num_rows) / rows.num_rows
        fits = int(0.7 * 2_000_000 / per_row)  # a file's worth, by the writer's own estimate
        writer.write_file(rows.slice(0, fits))
        writer.write_file(rows.slice(fits, fits // 2))
        data_after_two = writer.data_bytes_written
        writer.write_file(rows.slice(fits + fits // 2))  # more than one file holds: it rolls over
        results = writer.close()
    assert [r.record_count for r in results[:2]] == [fits, fits // 2]
    assert len(results) >= 4 and sum(r.record_count for r in results) == rows.num_rows
    assert all(r.file_size_bytes <= 2_000_000 for r in results), [r.file_size_bytes for r in results]
    assert 0 < data_after_two < results[0].file_size_bytes + results[1].file_size_bytes
    keys = [
        k for r in results for k in pq.read_table(tmp_path / r.path).column("_hoodie_record_key").to_pylist()
    ]
    assert keys == rows.column("_hoodie_record_key").to_pylist()


def test_base_file_a_cut_file_of_two_pages_or_more_is_written_as_two_even_row_groups(tmp_path: Path) -> None:
    # Footer min/max per half file lets a pruning reader skip half a file; a file under two pages
    # stays one row group (a row group smaller than a page only adds footer bytes).
    rng = np.random.default_rng(11)
    rows = random_table(60_000, "random", rng)
    storage = Storage.for_base_uri(str(tmp_path))
    config = small_bloom_config(**{"hoodie.parquet.page.size": "65536"})
    with RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(rows.schema, table_name="t"),
        config,
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=50_000_000,
        file_id_prefix="f",
    ) as writer:
        writer.write_file(rows.slice(0, 50_001))
        writer.write_file(rows.slice(50_001, 100))  # far below two pages
        results = writer.close()
    groups = [
        [md.row_group(g).num_rows for g in range(md.num_row_groups)]
        for md in (pq.ParquetFile(tmp_path / r.path).metadata for r in results)
    ]
    assert groups == [[25_001, 25_000], [100]]
