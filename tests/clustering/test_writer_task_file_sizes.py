"""A writer task's files against a target smaller than a file's footer, without Spark: the task's
even cut (`clustering_job._write_sorted` with two writer tasks) called directly, as a Spark task
calls it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from service.executor.clustering_job import GroupJob, _write_sorted
from strategies.execution.sort_and_size import OrderSpec
from strategies.layout import CurveBuildMethod, LayoutStrategy
from tests.base_file.helpers import INSTANT, parquet_config, random_table

TARGET = 200_000  # below the ~430 KB of Hudi's default bloom filter alone


def test_an_even_cut_under_a_target_smaller_than_the_footer_gives_files_half_a_target_of_data(
    tmp_path: Path,
) -> None:
    rows = pa.concat_tables(
        random_table(2_000, "random", np.random.default_rng(5), start=s) for s in range(0, 20_000, 2_000)
    )
    job = GroupJob(
        base_uri=str(tmp_path),
        storage_options={},
        table_name="t",
        instant_time=INSTANT,
        partition_path="p",
        input_paths=(),
        input_sizes=(),
        order=OrderSpec(LayoutStrategy.LINEAR, ()),
        curve_build_method=CurveBuildMethod.DIRECT,
        curve_sample_size=0,
        target_file_bytes=TARGET,
        parquet=parquet_config(),  # Hudi's default bloom filter
        avro_schema_json=None,
        arrow_schema=rows.schema,
        task_values=(0, 1),  # one of two writer tasks: files cut evenly from a size profile
    )
    written = pa.Table.from_batches(list(_write_sorted(job, rows.to_batches(max_chunksize=5_000))))
    paths, sizes = written["path"].to_pylist(), written["file_size_bytes"].to_pylist()
    footers = [pq.ParquetFile(tmp_path / path).metadata.serialized_size for path in paths]
    assert min(footers) > TARGET, "the footer is not larger than the target: the case is not tested"
    data = [size - footer for size, footer in zip(sizes, footers, strict=True)]
    # Files hold about half the target in data each (the footer counts up to half of it), not a row
    # each: a file of a cut that rolled over (the first cut is sized before any file was measured)
    # and the task's last file may be shorter.
    assert len(data) >= 2 and sum(d < 0.4 * TARGET for d in data) <= 2, (len(data), data[:10])
    assert len(data) <= sum(data) / (0.4 * TARGET) + 2, (len(data), data[:10])
    assert sum(written["record_count"].to_pylist()) == rows.num_rows
