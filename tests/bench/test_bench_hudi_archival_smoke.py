"""The ours-vs-Hudi archival benchmark at a toy size: Hudi's `archive_commits` and our archival, each
in a process of its own, leave the same active timeline on identical copies of a backlog, and the JSON
says so with every round's order, spread and memory (no timings asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.hudi_archival import TINY_COMMITS, Options, run

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


@pytest.mark.long(table_version=9)
@pytest.mark.parametrize(("table_version", "result"), [(6, "hudi-archival"), (9, "hudi-archival-v9")])
def test_hudi_archival_bench_leaves_the_active_timeline_hudi_leaves(
    tmp_path: Path, table_version: int, result: str
) -> None:
    """Version 6 against Hudi 0.15 (CI), version 9 against Hudi 1.1.1 (long variants)."""
    options = Options(
        commits=TINY_COMMITS, table_version=table_version, rounds=2, work_dir=tmp_path,
        results_dir=tmp_path / "results", driver_memory="1g",
    )  # fmt: skip
    run(options)
    document = json.loads((tmp_path / "results" / f"{result}.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == result and document["commits"] == TINY_COMMITS
    r = document["result"]
    assert r["same_active_timeline"] and r["hudi_archived"] == r["ours_archived"] > 0
    assert r["active_before"] > r["ours_archived"]
    assert r["first"] == ["hudi", "ours"]  # the order alternates
    for name in ("hudi", "ours"):
        rounds = r[f"{name}_seconds"]
        assert len(rounds) == 2 and min(rounds) > 0
        assert r["seconds"][name]["median"] == pytest.approx(sum(rounds) / 2, abs=2e-3)
        assert r["peak_rss_mb"][name] == max(r[f"{name}_peak_rss_mb"]) > 0
    # Hudi's tree holds a JVM; ours is a Python process that starts none.
    assert min(r["hudi_peak_rss_mb"]) > 300 > max(r["ours_peak_rss_mb"])
