"""Benchmarks and fixtures write `.hoodie_partition_metadata` as Hudi does, so Hudi reads their tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.clustering import build_input_table
from bench.fixtures import partition_metafile_bytes
from service.config import java_properties
from tests.support.hudi_tables import generate, hudi_latest_file_slices, write

ROWS = 3_000


def _without_date_line(text: str) -> list[str]:
    """`Properties.store` writes the store time as the second comment line; everything else is fixed."""
    lines = text.splitlines()
    assert lines[1].startswith("#"), text
    return [lines[0], *lines[2:]]


@pytest.mark.spark
@pytest.mark.hudi
def test_metafile_is_byte_for_byte_hudis_but_for_the_date(spark: Any, tmp_path: Path) -> None:
    base = tmp_path / "hudi_written"
    instant = write(spark, base, generate(spark, range(6)), "insert", partition_fields=["region"])
    hudis = (base / "asia" / ".hoodie_partition_metadata").read_text(encoding="latin-1")
    ours = partition_metafile_bytes(instant, "asia").decode("latin-1")
    assert _without_date_line(ours) == _without_date_line(hudis)
    assert java_properties.loads(hudis) == {"commitTime": instant, "partitionDepth": "1"}


def test_depth_counts_partition_path_segments() -> None:
    def depth(partition: str) -> str:
        return java_properties.loads(partition_metafile_bytes("20240101000000000", partition).decode())[
            "partitionDepth"
        ]

    assert [depth(""), depth("p=1"), depth("year=2024/month=01/day=02")] == ["0", "1", "3"]


@pytest.mark.spark
@pytest.mark.hudi
def test_hudi_clusters_the_clustering_benchmark_input_with_its_defaults(spark: Any, tmp_path: Path) -> None:
    """As a new user would: `run_clustering` with Hudi's defaults builds the metadata table, which lists
    partitions through each partition metafile's `partitionDepth`."""
    table = build_input_table(tmp_path / "input", files=4, rows=ROWS, seed=7)
    assert spark.read.format("hudi").load(str(table.base)).count() == ROWS
    [(instant, groups, state, _)] = spark.sql(
        f"CALL run_clustering(path => '{table.base}', order => 'a,b')"
    ).collect()
    assert (groups, state) == (1, "COMPLETED")
    assert (table.base / ".hoodie" / f"{instant}.replacecommit").exists()
    assert spark.read.format("hudi").load(str(table.base)).count() == ROWS
    assert len(hudi_latest_file_slices(spark, table.base)) == 1  # four small files became one
