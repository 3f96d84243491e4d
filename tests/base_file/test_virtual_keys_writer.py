"""Base files of tables without meta fields: null meta columns kept, no record-key footers."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.errors import HudiTableServiceError
from service.table.base_file_writer import BaseFileSchema, RollingBaseFileWriter
from service.table.storage import Storage
from tests.base_file.helpers import INSTANT, parquet_config

META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path")


def _virtual_rows(n: int) -> pa.Table:
    """Rows as Hudi writes them with `hoodie.populate.meta.fields=false`: meta columns null."""
    columns = {name: pa.nulls(n, pa.string()) for name in META}
    columns["_hoodie_file_name"] = pa.array(["old-0_0-0-0_20240101000000000.parquet"] * n)
    columns["id"] = pa.array(range(n), pa.int64())
    columns["name"] = pa.array([f"n{i}" for i in range(n)])
    return pa.table(columns)


def _write(tmp_path: Path, populate_meta_fields: bool) -> Path:
    rows = _virtual_rows(50)
    schema = BaseFileSchema.create(rows.schema, table_name="t", populate_meta_fields=populate_meta_fields)
    [result] = RollingBaseFileWriter(
        Storage.for_base_uri(str(tmp_path)), schema, parquet_config(),
        partition_path="p", instant_time=INSTANT, target_file_size_bytes=10**8,
    ).write_all(rows)  # fmt: skip
    assert result.min_record_key is None and result.max_record_key is None
    return tmp_path / result.path


def test_virtual_key_files_carry_null_meta_columns_and_no_key_footers(tmp_path: Path) -> None:
    path = _write(tmp_path, populate_meta_fields=False)
    data = pq.read_table(path)
    for name in META:
        assert data.column(name).null_count == 50, name
    assert set(data.column("_hoodie_file_name").to_pylist()) == {path.name}
    assert set((pq.read_metadata(path).metadata or {}).keys()) == {
        b"parquet.avro.schema",
        b"writer.model.name",
    }


def test_null_record_keys_are_still_refused_when_meta_fields_are_populated(tmp_path: Path) -> None:
    # The failure, which stays right for tables whose records carry their keys.
    with pytest.raises(HudiTableServiceError, match=r"record keys contain 50 null value\(s\)"):
        _write(tmp_path, populate_meta_fields=True)
