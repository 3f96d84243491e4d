"""Tables without meta fields (`hoodie.populate.meta.fields=false`, virtual keys), with real Hudi 0.15.

Our clustering of such a table must commit, keep every record for Hudi's reader and hudi-rs, write
files shaped as Hudi's own (null meta columns but `_hoodie_file_name`, no record-key footers), and
let Hudi keep upserting with its SIMPLE index (the only key lookup that works on virtual keys).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.base_file_writer import BLOOM_FILTER_KEY, MAX_RECORD_KEY, MIN_RECORD_KEY
from service.table.key_generator import VirtualKeyGenerator
from service.table.table import HudiTable
from tests.support import hudi_tables as ht

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

VIRTUAL = {"hoodie.populate.meta.fields": "false", "hoodie.index.type": "SIMPLE"}
KEYGEN = "org.apache.hudi.keygen."


def _rows(rows: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Rows without `_hoodie_file_name` (it names the file a row is in), in a stable order."""
    return sorted(tuple(str(r.get(k)) for k in sorted(r) if k != "_hoodie_file_name") for r in rows)


def _latest_files(base: Path) -> list[Path]:
    view = HudiTable.open(str(base)).load_view()
    return [
        base / fg.latest_slice.base_file.path
        for fg in view.live_file_groups
        if fg.latest_slice is not None and fg.latest_slice.base_file is not None
    ]


@pytest.mark.parametrize(
    ("record_key", "key_generator"), [("id", "SimpleKeyGenerator"), ("id,region", "ComplexKeyGenerator")]
)
def test_clustering_a_table_without_meta_fields_keeps_hudi_reading_and_upserting(
    spark: Any, tmp_path: Path, record_key: str, key_generator: str
) -> None:
    base = tmp_path / "virtual"
    opts = {**VIRTUAL, "hoodie.datasource.write.keygenerator.class": KEYGEN + key_generator}

    def write(ids: range, batch: int, operation: str) -> None:
        ht.write(
            spark, base, ht.generate(spark, ids, batch), operation,
            record_key=record_key, partition_fields=["region"], extra_opts=opts,
        )  # fmt: skip

    for start in range(0, 60, 20):  # three commits of small files in each partition
        write(range(start, start + 20), 0, "insert")
    hudi_file = _latest_files(base)[0]
    before = _rows(ht.read_snapshot(spark, base))
    before_rs = _rows(ht.hudi_rs_snapshot(base).to_pylist())
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == [
        ht.expected_row(i, 0) for i in range(60)
    ]

    table = HudiTable.open(str(base))
    assert not table.config.populate_meta_fields
    config = HoodieConfig.from_mapping({"hoodie.clustering.plan.strategy.sort.columns": "qty"}, table.name)
    lock = InProcessTableLock(table.name)
    outcome = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC)
    assert outcome.instant_time is not None, outcome.reason
    result = execute_clustering(
        table, outcome.instant_time, config, SparkExecutor(session=spark).run_group, lock, zone=UTC
    )
    assert result.committed

    assert _rows(ht.read_snapshot(spark, base)) == before
    assert _rows(ht.hudi_rs_snapshot(base).to_pylist()) == before_rs
    ours = _latest_files(base)
    assert len(ours) == 3 and all(outcome.instant_time in p.name for p in ours)
    hudi_footer = set((pq.read_metadata(hudi_file).metadata or {}).keys())
    for path in ours:
        data = pq.read_table(path)
        assert data.schema.names == pq.read_schema(hudi_file).names
        # As in Hudi's own files: meta columns null but the file name, no record-key footers.
        for name in HOODIE_META_FIELDS[:4]:
            assert data.column(name).null_count == data.num_rows, name
        assert set(data.column("_hoodie_file_name").to_pylist()) == {path.name}
        footer = set((pq.read_metadata(path).metadata or {}).keys())
        assert footer == hudi_footer
        assert not {BLOOM_FILTER_KEY.encode(), MIN_RECORD_KEY.encode(), MAX_RECORD_KEY.encode()} & footer

    # Hudi's SIMPLE index derives the keys of our files from their data: updates land on the
    # existing records (no duplicates), inserts are added.
    write(range(50, 70), 7, "upsert")
    rows = ht.read_snapshot(spark, base)
    ids = [r["id"] for r in rows]
    assert sorted(ids) == list(range(70))
    expected = {i: (7 if i >= 50 else 0) for i in range(70)}
    assert ht.normalise_rows(rows) == sorted(
        (ht.expected_row(i, b) for i, b in expected.items()), key=lambda r: r["id"]
    )
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == ht.normalise_rows(rows)


@pytest.mark.parametrize(
    ("record_key", "partition_fields", "key_generator"),
    [
        ("id", ["region"], "SimpleKeyGenerator"),
        ("id", ["region"], "ComplexKeyGenerator"),
        ("id,name", ["region"], "ComplexKeyGenerator"),
        ("event_time,qty", ["region"], "ComplexKeyGenerator"),
        ("id", None, "NonpartitionedKeyGenerator"),
    ],
)
def test_virtual_keys_equal_the_keys_hudi_writes(
    spark: Any, tmp_path: Path, record_key: str, partition_fields: list[str] | None, key_generator: str
) -> None:
    """Hudi fills `_hoodie_record_key` with the same generator when meta fields are on: compare."""
    from pyspark.sql import functions as F

    base = tmp_path / "keys"
    df = ht.generate(spark, range(12), 0)
    # Empty and null values of a complex key are written as `__empty__` and `__null__`.
    name = F.when(F.col("id") == 5, F.lit("")).when(F.col("id") == 7, F.lit(None)).otherwise(F.col("name"))
    df = df.withColumn("name", name)
    opts = {"hoodie.datasource.write.keygenerator.class": KEYGEN + key_generator}
    ht.write(
        spark, base, df, "insert", record_key=record_key, partition_fields=partition_fields, extra_opts=opts
    )
    table = HudiTable.open(str(base))
    keygen = VirtualKeyGenerator.for_table(table.config, table.base_uri)
    checked = 0
    keys: set[str] = set()
    for path in _latest_files(base):
        data = pq.read_table(path)
        assert keygen.record_keys(data).to_pylist() == data.column("_hoodie_record_key").to_pylist()
        checked += data.num_rows
        keys.update(data.column("_hoodie_record_key").to_pylist())
    assert checked == 12
    if record_key == "id,name":
        assert {"id:5,name:__empty__", "id:7,name:__null__"} <= keys
