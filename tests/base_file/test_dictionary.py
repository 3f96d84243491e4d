"""Dictionary encoding per column as parquet-mr decides it: near-unique columns are written plain."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.table.base_file_writer import BaseFileSchema, RollingBaseFileWriter
from service.table.parquet_dictionary import dictionary_columns
from service.table.storage import Storage
from tests.base_file.helpers import INSTANT, parquet_config, with_meta

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PAGE = 1024 * 1024
N = 60_000


def _columns(n: int = N) -> dict[str, pa.Array]:
    rng = np.random.default_rng(7)
    return {
        "low_card": pa.array(rng.integers(0, 50, n), pa.int32()),
        "sorted_runs": pa.array(np.sort(rng.integers(0, 5_000, n)), pa.int64()),
        "unique_int": pa.array(rng.permutation(n), pa.int64()),
        "random_double": pa.array(rng.random(n)),
        "city": pa.array([f"city-{i % 20}" for i in range(n)]),
        "uuid": pa.array([f"{rng.integers(1 << 62):016x}-{i:08d}" for i in range(n)]),
    }


def _dictionary_encoded(path: Path | str) -> set[str]:
    """Columns whose first chunk starts with a dictionary page."""
    meta = pq.ParquetFile(path).metadata
    group = meta.row_group(0)
    return {
        group.column(c).path_in_schema
        for c in range(group.num_columns)
        if group.column(c).has_dictionary_page
    }


def test_first_page_rule_keeps_dictionaries_only_where_they_pay() -> None:
    table = pa.table(_columns())

    kept = set(dictionary_columns(table, PAGE))

    assert kept == {"low_card", "sorted_runs", "city"}


def test_rule_looks_at_the_first_page_only() -> None:
    # Repetitive for the first page's worth of values, unique afterwards: parquet-mr decides on
    # the first page and keeps the dictionary (until it overflows its page limit).
    values = np.concatenate([np.zeros(PAGE // 8, np.int64), np.arange(1, 200_000, dtype=np.int64)])
    assert dictionary_columns(pa.table({"v": values}), PAGE) == ["v"]
    assert dictionary_columns(pa.table({"v": values[::-1].copy()}), PAGE) == []


def test_our_base_files_write_near_unique_columns_plain(tmp_path: Path) -> None:
    keys = [f"key-{i:09d}" for i in range(N)]
    table = with_meta(_columns(), keys)
    storage = Storage.for_base_uri(str(tmp_path))
    [result] = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(table.schema, table_name="t"),
        parquet_config(),
        partition_path="p",
        instant_time=INSTANT,
        target_file_size_bytes=1 << 30,
    ).write_all(table)

    encoded = _dictionary_encoded(tmp_path / result.path)

    assert {"low_card", "sorted_runs", "city"} <= encoded
    assert not encoded & {"unique_int", "random_double", "uuid", "_hoodie_record_key", "_hoodie_commit_seqno"}
    assert pq.read_table(tmp_path / result.path).num_rows == N


@pytest.mark.hudi
def test_same_dictionary_columns_as_hudi_writes(spark: SparkSession, tmp_path: Path) -> None:
    """Hudi's bulk insert (row writer, parquet-mr) writes a file; on the same rows our rule picks
    exactly the columns that Hudi's file dictionary-encodes."""
    from tests.support.hudi_tables import write

    columns = _columns()
    data = pa.table(
        {"id": pa.array([f"id-{i:07d}" for i in range(N)]), "ts": pa.array(np.zeros(N, np.int64)), **columns}
    )
    base = tmp_path / "hudi"
    write(
        spark,
        base,
        spark.createDataFrame(data.to_pandas()).coalesce(1),
        "bulk_insert",
        record_key="id",
        precombine="ts",
        extra_opts={"hoodie.bulkinsert.sort.mode": "NONE", "hoodie.bulkinsert.shuffle.parallelism": "1"},
    )
    [hudi_file] = [p for p in base.rglob("*.parquet")]

    hudi_rows = pq.read_table(hudi_file)
    hudi_encoded = _dictionary_encoded(hudi_file)

    ours = set(dictionary_columns(hudi_rows, PAGE))
    assert ours == hudi_encoded, ours ^ hudi_encoded
    assert {"unique_int", "random_double", "uuid"}.isdisjoint(hudi_encoded)
