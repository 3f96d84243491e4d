"""The ours-vs-Hudi compaction benchmark at a toy size: Hudi's `run_compaction` and our
schedule + execute, each in a process of its own, compact identical copies of one merge-on-read table
into the same rows, and the JSON says so with every round's order, spread and memory (no timings
asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.hudi_compaction import TINY, Options, run

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def test_hudi_compaction_bench_compacts_into_the_same_rows_as_hudi(spark: Any, tmp_path: Path) -> None:
    run(Options(shape=TINY, work_dir=tmp_path, results_dir=tmp_path / "results", rounds=2), spark=spark)

    document = json.loads((tmp_path / "results" / "hudi-compaction.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "hudi-compaction"
    assert document["shape"]["rows"] == TINY.rows
    result = document["run"]
    assert result["same_rows"] and result["rows"] == TINY.rows
    assert result["log_files"] > 0
    hudi, ours = result["hudi"], result["ours"]
    assert hudi["output_files"] == ours["output_files"] > 0
    assert hudi["seconds"] > 0 and ours["seconds"] > 0 and ours["schedule_seconds"] > 0
    assert hudi["schedule_seconds"] is None and result["ours_over_hudi_seconds"] > 0
    rounds = document["rounds"]
    assert len(rounds) == 2 and all(r["same_rows"] for r in rounds)
    assert [r["first"] for r in rounds] == ["hudi", "ours"]  # the order alternates
    for r in rounds:  # both outputs as Hudi reads them: every row, digested alike
        assert r["hudi_rows"] == r["ours_rows"] and r["hudi_rows"].startswith(f"{TINY.rows}:")
        assert r["load_before"] >= 0 and r["load_after"] >= 0
    for name in ("hudi", "ours"):  # the medians of the rounds, and their spread
        times = [r[f"{name}_seconds"] for r in rounds]
        assert result[name]["seconds"] == pytest.approx(sum(times) / 2, abs=2e-3)
        assert document["seconds"][name] == {
            "median": pytest.approx(sum(times) / 2, abs=2e-3),
            "min": min(times),
            "max": max(times),
        }
        # A driver JVM with Spark loaded holds hundreds of MB: the tree's memory, not the Python's alone.
        peaks = [r[f"{name}_peak_rss_mb"] for r in rounds]
        assert min(peaks) > 300 and document["peak_rss_mb"][name] == max(peaks)
