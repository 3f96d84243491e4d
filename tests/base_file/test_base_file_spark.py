"""A base file Hudi's Spark writer made, rewritten by ours: same footers, same rows for Hudi and Spark."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from service.table.base_file_writer import BaseFileSchema, RollingBaseFileWriter
from service.table.storage import Storage
from tests.base_file.helpers import parquet_config
from tests.support.hudi_tables import writer_options
from tests.support.jvm import run_java

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NEW_INSTANT = "20990101000000000"


def _hudi_rows(path: Path) -> list[dict[str, object]]:
    out = run_java("HudiFooter", "records", str(path)).stdout.splitlines()
    rows = [json.loads(line) for line in out[1:]]
    for row in rows:
        row.pop("_hoodie_file_name")
    return rows


def test_rewritten_hudi_file_keeps_footers_and_rows(spark: SparkSession, tmp_path: Path) -> None:
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("id", T.StringType(), False),
            T.StructField("part", T.StringType()),
            T.StructField("ts", T.TimestampType()),
            T.StructField("dec", T.DecimalType(10, 2)),
            T.StructField("d", T.DateType()),
            # No null elements: Hudi's Avro writer (2-level lists) cannot write them.
            T.StructField("arr", T.ArrayType(T.IntegerType())),
            # Two fields: parquet-avro misreads Hudi's own 2-level list of one-field records.
            T.StructField(
                "arrs",
                T.ArrayType(
                    T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])
                ),
            ),
            T.StructField("m", T.MapType(T.StringType(), T.IntegerType())),
            T.StructField("st", T.StructType([T.StructField("x", T.IntegerType(), False)])),
            T.StructField("b", T.ByteType()),
            T.StructField("l", T.LongType(), False),
        ]
    )
    rows = [
        (
            f"k{i}" + ("😀" if i % 3 == 0 else "\uffee" if i % 3 == 1 else ""),
            "p1",
            dt.datetime(2024, 1, 1, 12, i % 60, tzinfo=dt.UTC),
            decimal.Decimal(f"{i}.25"),
            dt.date(2024, 1, 1 + i % 28),
            [i, i + 1],
            [(i, f"b{i}")],
            {"a": i},
            (i,),
            i % 100,
            i,
        )
        for i in range(200)
    ] + [("knull", "p1", None, None, None, None, None, None, None, None, 0)]
    base = tmp_path / "table"
    options = {**writer_options("tt", "id", "l", ["part"]), "hoodie.datasource.write.operation": "insert"}
    spark.createDataFrame(rows, schema).coalesce(1).write.format("hudi").options(**options).mode(
        "overwrite"
    ).save(str(base))
    [source] = list((base / "p1").glob("*.parquet"))
    original = pq.ParquetFile(source)
    footer = original.metadata.metadata

    table = original.read()
    storage = Storage.for_base_uri(str(base))
    [result] = RollingBaseFileWriter(
        storage,
        BaseFileSchema.create(table.schema, footer[b"parquet.avro.schema"].decode()),
        parquet_config(),
        partition_path="p1",
        instant_time=NEW_INSTANT,
        target_file_size_bytes=1 << 30,
    ).write_all(table)
    ours = base / result.path
    our_footer = pq.ParquetFile(ours).metadata.metadata

    # Same keys in the same order: the bloom filter is byte-identical to the one Hudi wrote, and
    # the key range (Java order) and the embedded Avro schema are the same.
    for key in (
        b"org.apache.hudi.bloomfilter",
        b"hoodie_bloom_filter_type_code",
        b"hoodie_min_record_key",
        b"hoodie_max_record_key",
        b"parquet.avro.schema",
        b"writer.model.name",
    ):
        assert our_footer[key] == footer[key], key
    # Hudi's merge-path reader sees the same records in both files.
    assert _hudi_rows(ours) == _hudi_rows(source)
    # So does Spark's Parquet reader (3-level lists in ours, parquet-avro's 2-level in theirs).
    theirs_df = spark.read.parquet(str(source)).drop("_hoodie_file_name")
    ours_df = spark.read.parquet(str(ours)).drop("_hoodie_file_name")
    assert sorted(map(tuple, ours_df.collect())) == sorted(map(tuple, theirs_df.collect()))
