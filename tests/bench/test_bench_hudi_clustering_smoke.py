"""The ours-vs-Hudi clustering benchmark at a toy size: both contenders, each in a process of its own,
run on the same input with the same plan, Hudi reads the input's every row back from both outputs in
every round, and the JSON says so with the order, spread and memory of each round (no timings
asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.hudi_clustering import CONTENDERS, Options, run
from bench.report import render

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

ROWS = 12_000
LAYOUTS = (("LINEAR", "DIRECT"), ("HILBERT", "SAMPLE"))


def test_hudi_clustering_bench_runs_both_contenders_on_one_plan(spark: Any, tmp_path: Path) -> None:
    options = Options(
        files=12, rows=ROWS, target_file_mb=1, layouts=LAYOUTS, placements=5, rounds=2,
        work_dir=tmp_path, results_dir=tmp_path / "results",
    )  # fmt: skip
    run(options, spark=spark)

    document = json.loads((tmp_path / "results" / "hudi-clustering.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "hudi-clustering"
    inputs = document["input"]
    assert inputs == {"files": 12, "rows": ROWS, "mb": inputs["mb"], "rows_digest": inputs["rows_digest"]}
    runs = {(r["contender"], r["layout"], r["method"]): r for r in document["runs"]}
    assert set(runs) == {(c, layout, method) for c in CONTENDERS for layout, method in LAYOUTS}
    for key, r in runs.items():
        assert r["rows_read_by_hudi"] == ROWS, key  # Hudi's reader, on each contender's output
        assert len(r["round_seconds"]) == 2 and r["seconds"] == pytest.approx(
            sum(r["round_seconds"]) / 2, abs=2e-3
        ), key  # the median of the rounds
        assert r["seconds_spread"] == {
            "median": r["seconds"],
            "min": min(r["round_seconds"]),
            "max": max(r["round_seconds"]),
        }, key
        # A driver JVM with Spark loaded holds hundreds of MB: the tree's memory, not the Python's alone.
        assert min(r["round_peak_rss_mb"]) > 300 and r["peak_rss_mb"] == max(r["round_peak_rss_mb"]), key
        # The file-backed part of the highest round's peak (the JVM's mapped jars at least).
        assert len(r["round_peak_file_rss_mb"]) == 2 and 0 < r["peak_file_rss_mb"] < r["peak_rss_mb"], key
        assert r["plan_groups"] == 1 and len(r["plan_group_file_ids"][0]) == 12, key
        assert r["output_files"] >= 1 and sum(r["output_file_sizes"]) > 0, key
        assert set(r["rows_scanned"]) == set(document["predicates"]), key
        assert all(0 < v <= ROWS for v in r["rows_scanned"].values()), key
    digest = document["input"]["rows_digest"]
    assert digest.startswith(f"{ROWS}:")
    for c in document["comparisons"]:
        assert c["same_plan_groups"] and c["same_output_file_groups"], c
        assert [r["first"] for r in c["rounds"]] == ["hudi", "ours"], c  # the order alternates
        assert all(r["hudi_rows"] == r["ours_rows"] == digest and r["same_rows"] for r in c["rounds"]), c
        assert c["ours_over_hudi_throughput"] > 0
        pair = [runs[(name, c["layout"], c["method"])] for name in CONTENDERS]
        assert pair[0]["instant_time"] != pair[1]["instant_time"]  # each contender committed its own
    assert document["floor"]["processes"] >= 1 and document["floor"]["mb_per_s"] > 0
    assert (tmp_path / "results" / "hudi-clustering.png").stat().st_size > 0
    assert "in parentheses its file-backed part" in render(document)
