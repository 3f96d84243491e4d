"""The pruning benchmark at a toy size: every layout is clustered and counted, the counting agrees with
a real reader's statistics pruning, LINEAR prunes its leading column, and the chart is a PNG."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.pruning import LAYOUTS, Options, run
from bench.pruning_count import (
    PREDICATES,
    RowGroupStats,
    perfect_floor,
    placements,
    rows_scanned,
    sorted_floor,
    sorted_layout,
    square_tile_floor,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_bench_pruning_reports_every_layout_and_agrees_with_the_reader(spark: Any, tmp_path: Path) -> None:
    options = Options(
        rows=200_000,
        rows_per_group=5_000,
        placements=8,
        work_dir=tmp_path,
        results_dir=tmp_path / "results",
        chart_path=tmp_path / "chart" / "pruning.png",
    )
    run(options, spark=spark)

    document = json.loads((tmp_path / "results" / "pruning.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "pruning"
    assert document["input"]["rows"] == 200_000 and document["input"]["files"] == 40
    granularities = {g["key"] for g in document["granularities"]}
    assert granularities == {"20000", "5000"}
    figures = {(f["layout"], f["granularity"], f["predicate"]): f for f in document["figures"]}
    assert set(figures) == {
        (layout.label, g, p.key) for layout in LAYOUTS for g in granularities for p in PREDICATES
    }
    for layout in document["layouts"]:
        if layout["strategy"] is not None:
            assert layout["clustering_groups"] == 1, layout  # the whole table sorted together
            assert layout["row_groups"]["5000"] > layout["row_groups"]["20000"] > 1
    for f in document["figures"]:
        assert f["matching_mean"] <= f["rows_scanned_mean"] <= f["rows_scanned_worst"] <= 200_000

    checks = document["cross_check"]
    assert checks and document["cross_check_all_equal"] is True
    assert {c["granularity"] for c in checks} == granularities  # the merged groups are checked too
    assert all(c["rows_scanned_counted"] == c["rows_kept_by_reader"] for c in checks)

    unclustered = figures[("as written", "5000", "a_1pct")]["rows_scanned_mean"]
    assert unclustered == 200_000  # random order: every row group spans almost all of a
    for key in ("a_1pct", "a_0_1pct", "a_eq"):
        linear = figures[("LINEAR", "5000", key)]
        assert linear["rows_scanned_mean"] < unclustered / 10, linear
        assert linear["reduction_vs_unclustered"] > 10
    # LINEAR(a, b) leaves b as unordered as the input.
    assert figures[("LINEAR", "5000", "b_1pct")]["rows_scanned_mean"] == 200_000
    # Curves prune both columns.
    for label in ("ZORDER SAMPLE", "HILBERT DIRECT", "HILBERT SAMPLE"):
        assert figures[(label, "5000", "b_1pct")]["rows_scanned_mean"] < unclustered / 2, label
    targets = {t["target"]: t for t in document["targets"]}
    assert len(targets) == 8 and all(isinstance(t["met"], bool) for t in targets.values())
    assert all(t["met"] for name, t in targets.items() if name.startswith("LINEAR"))

    chart = tmp_path / "chart" / "pruning.png"
    assert chart.read_bytes()[:8] == PNG_SIGNATURE and chart.stat().st_size > 10_000


def test_bench_pruning_merged_groups_keep_union_bounds() -> None:
    stats = RowGroupStats(
        rows=np.array([10, 10, 10, 5, 7], dtype=np.int64),
        a_min=np.array([0, 50, 20, 90, 3]),
        a_max=np.array([9, 60, 30, 99, 4]),
        b_min=np.array([5, 1, 7, 2, 8]),
        b_max=np.array([6, 2, 9, 3, 9]),
        file=np.array([0, 0, 0, 0, 1]),
    )
    merged = stats.merged(2)
    assert merged.rows.tolist() == [20, 15, 7]  # runs never cross a file
    assert merged.a_min.tolist() == [0, 20, 3] and merged.a_max.tolist() == [60, 99, 4]
    assert merged.b_min.tolist() == [1, 2, 8] and merged.b_max.tolist() == [6, 9, 9]


def test_bench_pruning_sorted_layout_scans_only_the_group_holding_the_range() -> None:
    a_sorted = np.arange(100, dtype=np.int32) * 10_000  # 0, 10000, ..., 990000; groups of 10 values
    ideal = sorted_layout(a_sorted, np.full(10, 10, dtype=np.int64))
    chosen = placements(PREDICATES[0], 16, np.random.default_rng(1))  # a in a 10,000-wide range
    # Such a range holds exactly one multiple of 10,000 and overlaps no other group's min/max.
    assert rows_scanned(ideal, chosen).tolist() == [10] * 16


def test_bench_pruning_floors() -> None:
    a_and_b = PREDICATES[2]
    # 20M rows in 200k-row square tiles: 10 x 10 tiles of side 1e5; a 1e4-wide range hits 1.1 per axis.
    assert square_tile_floor(a_and_b, 200_000, 20_000_000) == pytest.approx(1.21 * 200_000)
    assert square_tile_floor(PREDICATES[0], 200_000, 20_000_000) == pytest.approx(1.1 * 10 * 200_000)
    assert perfect_floor(200_000, 50_000) == 200_000 and perfect_floor(0, 50_000) == 50_000
    assert sorted_floor(200_000, 50_000, 20_000_000) == 249_999
