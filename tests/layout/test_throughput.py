"""Throughput of curve keys on 1M rows x 2 columns (printed with -s; the floor only catches a lost
vectorisation, a per-row Python loop runs at well under 0.3M rows/s)."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from strategies.layout import (
    LayoutStrategy,
    build_sample_bounds,
    curve_sort_key,
    default_num_buckets,
    sort_indices,
)

ROWS = 1_000_000
FLOOR_ROWS_PER_SECOND = 300_000

pytestmark = pytest.mark.slow


def _rows_per_second(run: object) -> float:
    assert callable(run)
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return ROWS / best


def test_throughput_one_million_rows_two_columns() -> None:
    rng = np.random.default_rng(0)
    table = pa.table({"a": rng.random(ROWS), "b": rng.integers(-(10**9), 10**9, ROWS)})
    columns = ["a", "b"]
    bounds = build_sample_bounds(table.slice(0, 200_000), columns, default_num_buckets(200_000))
    report = {}
    for strategy in (LayoutStrategy.ZORDER, LayoutStrategy.HILBERT):
        for method, b in (("DIRECT", None), ("SAMPLE", bounds)):
            name = f"{strategy.value}/{method}"
            report[f"{name} key"] = _rows_per_second(
                lambda s=strategy, b=b: curve_sort_key(table, columns, s, b)
            )
            report[f"{name} sort"] = _rows_per_second(
                lambda s=strategy, b=b: sort_indices(table, columns, s, b)
            )
    report["LINEAR sort"] = _rows_per_second(
        lambda: sort_indices(table, columns, LayoutStrategy.LINEAR, None)
    )
    print("\n" + "\n".join(f"{name:<22} {rate / 1e6:6.2f} M rows/s" for name, rate in report.items()))
    assert min(report.values()) > FLOOR_ROWS_PER_SECOND
