"""The ours-vs-Hudi cleaning benchmark at a toy size: Hudi's `run_clean` and our cleaner, each in a
process of its own, delete the same files from identical copies, under both policies, and the JSON
says so with every round's order, spread and memory (no timings asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cleaning import TINY
from bench.hudi_cleaning import Options, run

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


@pytest.mark.long(table_version=9)
@pytest.mark.parametrize(("table_version", "result"), [(6, "hudi-cleaning"), (9, "hudi-cleaning-v9")])
def test_hudi_cleaning_bench_deletes_the_same_files_as_hudi(
    tmp_path: Path, table_version: int, result: str
) -> None:
    """Version 6 against Hudi 0.15, version 9 against Hudi 1.1.1."""
    options = Options(
        shape=TINY, work_dir=tmp_path, results_dir=tmp_path / "results", table_version=table_version,
        rounds=2, driver_memory="1g",
    )  # fmt: skip
    run(options)

    document = json.loads((tmp_path / "results" / f"{result}.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == result
    assert document["table_version"] == table_version and document["rounds"] == 2
    assert document["shape"]["data_files"] == TINY.data_files
    runs = {r["policy"]: r for r in document["runs"]}
    assert set(runs) == {"KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"}
    for policy, r in runs.items():
        assert r["files_before"] == TINY.data_files, policy
        assert r["same_files_left"] and r["only_hudi_left"] == [] and r["only_ours_left"] == [], policy
        assert r["hudi_deleted"] == r["ours_deleted"] > 0, policy
        assert r["hudi_seconds"] > 0 and r["ours_seconds"] > 0 and r["ours_over_hudi_seconds"] > 0
        assert len(r["hudi_rounds"]) == len(r["ours_rounds"]) == 2
        assert r["first"] == ["hudi", "ours"], policy  # the order alternates
        for name in ("hudi", "ours"):
            rounds = r[f"{name}_rounds"]
            assert r["seconds"][name] == {
                "median": pytest.approx(sum(rounds) / 2, abs=2e-3),
                "min": pytest.approx(min(rounds), abs=1e-3),
                "max": pytest.approx(max(rounds), abs=1e-3),
            }, policy
            peaks = r[f"{name}_peak_rss_mb"]
            assert r["peak_rss_mb"][name] == max(peaks) and min(peaks) > 0, policy
        # Hudi's tree holds a JVM; ours is a Python process that starts none.
        assert min(r["hudi_peak_rss_mb"]) > 300 > max(r["ours_peak_rss_mb"]), policy
    # One commit retained keeps each file group's latest slice and the newest one before the ECTR.
    assert runs["KEEP_LATEST_COMMITS"]["ours_deleted"] == TINY.files_deleted_retaining_one_commit
