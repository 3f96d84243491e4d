"""The clustering benchmark at a toy size: it runs end to end and reports what it promises (no timings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.clustering import Options, run
from bench.report import render

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 20_000


def test_clustering_bench_reports_every_run_with_all_rows(spark: Any, tmp_path: Path) -> None:
    options = Options(
        files=20,
        rows=ROWS,
        target_file_mb=1,
        snappy=False,
        sample=True,
        key_rows=10_000,
        split_groups=2,
        one_task_target_mb=0,
        work_dir=tmp_path,
        results_dir=tmp_path / "results",
        repeat=2,
    )
    run(options, spark=spark)

    document = json.loads((tmp_path / "results" / "clustering.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "clustering"
    assert {"cpu_count", "memory_bytes", "python", "java", "spark", "pyarrow"} <= document["machine"].keys()
    assert document["machine"]["spark"] and document["machine"]["pyarrow"]
    assert document["input"]["files"] == 20 and document["input"]["rows"] == ROWS
    runs = {(r["kind"], r["layout"], r["method"], r["codec"], r["groups"]): r for r in document["runs"]}
    assert set(runs) == {
        ("spark", "SORT", None, "gzip", None),
        ("clustering", "LINEAR", None, "gzip", 1),
        ("clustering", "ZORDER", "DIRECT", "gzip", 1),
        ("clustering", "HILBERT", "DIRECT", "gzip", 1),
        ("clustering", "ZORDER", "SAMPLE", "gzip", 1),
        ("clustering", "HILBERT", "SAMPLE", "gzip", 1),
        ("clustering", "LINEAR", None, "gzip", 2),  # the input split over two groups
    }
    digest = document["input"]["rows_digest"]
    assert digest.startswith(f"{ROWS}:")
    for r in document["runs"]:
        assert r["output_rows"] == ROWS, r["label"]
        # Every round of every run, in its contender's own process: timed, measured, rows compared.
        assert len(r["rounds"]) == 2, r["label"]
        assert all(x["same_rows"] and x["rows"] == digest for x in r["rounds"]), r["label"]
        assert all(x["peak_rss_mb"] > 100 for x in r["rounds"]), r["label"]  # a driver JVM at least
        spread = r["seconds_spread"]
        assert spread["min"] <= r["seconds"] <= spread["max"], r["label"]
        assert r["output_files"] >= 1 and r["seconds"] > 0 and r["input_mb_per_s"] > 0
        assert r["input_mb"] == document["input"]["mb"]  # every run read the same input
        if r["kind"] == "clustering":
            assert r["ratio_to_raw_spark"] is not None
            assert r["groups"] >= 1
            assert 0 < r["file_size_ratio_min"] <= r["file_size_ratio_max"]
    assert runs[("spark", "SORT", None, "gzip", None)]["ratio_to_raw_spark"] == 1.0
    assert {(k["layout"], k["method"]) for k in document["curve_keys"]} >= {
        ("ZORDER", "DIRECT"),
        ("HILBERT", "DIRECT"),
    }
    assert all(k["ns_per_row"] > 0 for k in document["curve_keys"])
    assert {"spark_read_noop_s", "pyarrow_write_gzip_1thread_s"} <= document["components"].keys()
    # docs/benchmarks.md's section 2 is generated from this file: it renders, every run in it.
    rendered = render(document)
    assert all(r["label"] in rendered for r in document["runs"])
