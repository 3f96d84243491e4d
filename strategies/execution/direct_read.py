"""Whether a group's writer tasks read its input files themselves instead of through Spark's shuffle.

A group written by few tasks (Hudi's default sizes: 1 GB files in 2 GB groups give two) reaches
them through a shuffle: each row is read by a Python task, converted to Spark's rows, shuffled,
converted back to Arrow and spilled by its writer task. When the writer sorts its own rows
(`writer_sort`), the shuffle only moves rows to the task whose key range holds them, and a task can
do that itself: read every input file, keep the rows of its own range (the same key and boundaries
the shuffle would use, so every row lands in exactly one task) and spill them. Each input is then
read once per task, so this is for groups of at most `DIRECT_READ_MAX_TASKS` tasks, where reading
the inputs again costs less than converting and shuffling every row: at Hudi's default sizes a
LINEAR clustering went from 1.33x to 1.22x the time of reading and writing its rows with pyarrow
alone (docs/benchmarks.md section 5). Each task streams its rows to its spill as the shuffle's
writer task would (`clustering_job._write_spilled`); what it adds is reading every input once per task.

Only base files are read this way (a merge-on-read slice with log files would be merged once per
task), and only columns whose type a round trip through Spark leaves as it is, so a file written
either way holds the same values with the same types.
"""

from __future__ import annotations

import pyarrow as pa

DIRECT_READ_MAX_TASKS = 2


def passes_spark_unchanged(data_type: pa.DataType) -> bool:
    """Whether Arrow values of this type come back from Spark (`mapInArrow` through a shuffle) as
    they went in: signed integers, floats, booleans, strings, binaries, dates, microsecond
    timestamps with a time zone (the same instants; Spark names its session's zone) and decimals.
    Nested, unsigned, large and nanosecond types are converted, and a timestamp without a zone
    comes back with one (`from_arrow_type` reads it as Spark's `TimestampType`)."""
    t = pa.types
    return bool(
        t.is_signed_integer(data_type)
        or (t.is_floating(data_type) and not t.is_float16(data_type))
        or t.is_boolean(data_type)
        or t.is_string(data_type)
        or t.is_binary(data_type)
        or t.is_date32(data_type)
        or (t.is_timestamp(data_type) and data_type.unit == "us" and data_type.tz is not None)
        or t.is_decimal128(data_type)
    )


def reads_inputs_in_writer(schema: pa.Schema, tasks: int, sorts_in_writer: bool, merged: bool) -> bool:
    """Whether the `tasks` writer tasks of a group with rows of `schema` read its inputs themselves:
    they sort their own rows, the inputs are base files alone (`merged`: some slice has log files),
    and every column passes through Spark unchanged."""
    return (
        sorts_in_writer
        and not merged
        and 1 <= tasks <= DIRECT_READ_MAX_TASKS
        and all(passes_spark_unchanged(f.type) for f in schema)
    )
