"""Pruning sanity: 1M points in 200 blocks; a small box query touches few blocks after curve sorting.

A block is skipped when its [min, max] per column misses the query, as column-stats data skipping does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from strategies.layout import LayoutStrategy, build_sample_bounds, default_num_buckets, sort_indices
from strategies.layout.sample import Bounds

ROWS = 1_000_000
BLOCKS = 200
QUERIES = 200

pytestmark = pytest.mark.slow


def _block_ranges(values: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    blocks = values[order].reshape(BLOCKS, -1)
    return blocks.min(axis=1), blocks.max(axis=1)


def _blocks_read(
    ranges: list[tuple[np.ndarray, np.ndarray]], boxes: list[list[tuple[float, float]]]
) -> float:
    """Mean number of blocks whose min/max overlap the query box, over the queries."""
    total = 0
    for box in boxes:
        hit = np.ones(BLOCKS, dtype=bool)
        for (low, high), (q_low, q_high) in zip(ranges, box, strict=True):
            hit &= (high >= q_low) & (low <= q_high)
        total += int(hit.sum())
    return total / len(boxes)


def _sample_bounds(table: pa.Table, columns: list[str]) -> Bounds:
    rng = np.random.default_rng(99)
    sample = table.take(rng.choice(table.num_rows, 200_000, replace=False))
    return build_sample_bounds(sample, columns, default_num_buckets(200_000))


@pytest.fixture(scope="module")
def points() -> pa.Table:
    rng = np.random.default_rng(2024)
    return pa.table({"a": rng.random(ROWS), "b": rng.random(ROWS)})


def _boxes(seed: int, width: float, dims: int) -> list[list[tuple[float, float]]]:
    rng = np.random.default_rng(seed)
    starts = rng.random((QUERIES, dims)) * (1 - width)
    return [[(float(s), float(s) + width) for s in row] for row in starts]


def _ranges(table: pa.Table, columns: list[str], order: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    return [_block_ranges(table.column(c).to_numpy(), order) for c in columns]


def test_pruning_curves_read_far_fewer_blocks_than_unsorted(points: pa.Table) -> None:
    boxes = _boxes(1, 0.01, 2)
    unsorted = _blocks_read(_ranges(points, ["a", "b"], np.arange(ROWS)), boxes)
    assert unsorted > 0.95 * BLOCKS
    bounds = _sample_bounds(points, ["a", "b"])
    results = {}
    for strategy in (LayoutStrategy.ZORDER, LayoutStrategy.HILBERT):
        for method, b in (("DIRECT", None), ("SAMPLE", bounds)):
            order = sort_indices(points, ["a", "b"], strategy, b)
            results[f"{strategy.value}/{method}"] = _blocks_read(_ranges(points, ["a", "b"], order), boxes)
    print(f"\nblocks read per 1%x1% box query (of {BLOCKS}): unsorted {unsorted:.1f}, {results}")
    for name, read in results.items():
        assert read < 0.05 * unsorted, name


def test_pruning_linear_is_at_the_floor_for_a_range_of_its_column(points: pa.Table) -> None:
    order = sort_indices(points, ["a"], LayoutStrategy.LINEAR, None)
    ((low, high),) = _ranges(points, ["a"], order)
    a = points.column("a").to_numpy()
    rows_per_block = ROWS // BLOCKS
    for ((q_low, q_high),) in _boxes(2, 0.01, 1):
        read = int(((high >= q_low) & (low <= q_high)).sum())
        matching = int(((a >= q_low) & (a <= q_high)).sum())
        floor = -(-matching // rows_per_block)  # no layout can hold the matches in fewer blocks
        assert floor <= read <= floor + 1


def test_pruning_sample_balances_columns_of_different_scales() -> None:
    """DIRECT keys of a float in [0, 1) swamp an int in [0, 10^6); SAMPLE buckets weigh both equally."""
    rng = np.random.default_rng(5)
    table = pa.table({"f": rng.random(ROWS), "n": rng.integers(0, 1_000_000, ROWS)})
    boxes = [[(0.0, 1.0), (float(s), float(s) + 10_000)] for s in rng.integers(0, 990_000, QUERIES)]
    read = {}
    for method, bounds in (("DIRECT", None), ("SAMPLE", _sample_bounds(table, ["f", "n"]))):
        order = sort_indices(table, ["f", "n"], LayoutStrategy.ZORDER, bounds)
        read[method] = _blocks_read(_ranges(table, ["f", "n"], order), boxes)
    print(f"\nblocks read per 1% range query on n alone: {read}")
    assert read["SAMPLE"] < 0.5 * read["DIRECT"]
