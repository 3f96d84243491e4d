"""The group metrics a clustering planner records, as Java's `FileSliceMetricUtils` computes them.

The typed plan itself (and its one decoder) is `service/table/clustering_plan.py`; its Avro form is
written in `service/clustering/records.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from service.table.clustering_plan import PlannedSlice

MIB = 1024 * 1024

# FileSliceMetricUtils keys.
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILES_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


def group_metrics(slices: Sequence[PlannedSlice], parquet_max_file_size_bytes: int) -> dict[str, float]:
    """`FileSliceMetricUtils.addFileSliceCommonMetrics`: MB are whole mebibytes (Java's long division)."""
    log_files = sum(len(s.log_file_paths) for s in slices)
    base_bytes = sum(s.base_file_size_bytes or 0 for s in slices)
    log_bytes = sum(s.log_files_size_bytes for s in slices)
    read_mb = (base_bytes + log_bytes) // MIB  # the base files and all the log files
    write_bytes = sum(
        s.base_file_size_bytes if s.base_file_size_bytes else parquet_max_file_size_bytes for s in slices
    )
    write_mb = write_bytes // MIB
    return {
        TOTAL_IO_READ_MB: float(read_mb),
        TOTAL_IO_WRITE_MB: float(write_mb),
        TOTAL_IO_MB: float(read_mb + write_mb),
        TOTAL_LOG_FILES_SIZE: float(log_bytes),
        TOTAL_LOG_FILES: float(log_files),
    }
