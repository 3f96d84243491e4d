"""The cleaning benchmark at a toy size: it runs end to end, its incremental and full-scan plans agree,
and its JSON says what the docs promise (no timing assertions)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bench.cleaning import TINY, build_table, run
from service.table.data_files import parse_base_file

pytestmark = pytest.mark.slow


def test_bench_cleaning_table_holds_every_version(tmp_path: Path) -> None:
    build_table(tmp_path / "t", TINY)

    data = list((tmp_path / "t").rglob("*.parquet"))
    assert len(data) == TINY.data_files
    per_group = Counter(
        (base.partition_path, base.file_id) for base in (parse_base_file(p.parent.name, p.name) for p in data)
    )
    assert len(per_group) == TINY.file_groups
    assert sorted(set(per_group.values())) == [TINY.versions, TINY.versions + 1]  # + the small commits' slice
    completed_cleans = list((tmp_path / "t" / ".hoodie").glob("*.clean"))
    assert len(completed_cleans) == 1


def test_bench_cleaning_incremental_and_full_plans_agree(tmp_path: Path) -> None:
    payload = run(
        False,
        shape=TINY,
        repeat=2,
        parallelisms=(1, 4),
        work_dir=tmp_path / "work",
        results_dir=tmp_path / "results",
        report=lambda _: None,
    )

    document = json.loads((tmp_path / "results" / "cleaning.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "cleaning"
    assert {"cpu_count", "memory_bytes", "python", "pyarrow"} <= document["machine"].keys()
    assert document["shape"]["data_files"] == TINY.data_files
    assert document["shape"]["partitions"] == TINY.partitions
    planning = document["planning"]
    assert planning["plans_equal"] is True
    assert planning["plans_match_expected"] is True
    assert planning["commit_json_parse_s"] > 0
    incremental, full = planning["incremental"], planning["full"]
    # Incremental mode applied: it listed only the partitions the small commits rewrote.
    assert incremental["partitions_listed"] == TINY.touched_partitions
    assert full["partitions_listed"] == TINY.partitions
    assert full["files_in_view"] == TINY.data_files
    expected = TINY.touched_partitions * TINY.file_groups_per_partition
    for mode in (incremental, full):
        assert mode["files_planned"] == mode["dry_run_files_planned"] == expected
        assert len(mode["runs"]) == 2
        for key in ("timeline_s", "listing_s", "plan_s", "cold_total_s", "warm_total_s", "dry_run_s"):
            assert mode[key] >= 0
    assert {"listing", "plan", "cold_total", "warm_total", "dry_run"} <= planning[
        "speedup_full_over_incremental"
    ].keys()
    assert [d["parallelism"] for d in document["deletes"]] == [1, 4]
    for d in document["deletes"]:
        assert d["files_deleted"] == d["delete_calls"] == TINY.files_deleted_retaining_one_commit
        assert d["files_deleted"] == d["expected_files_deleted"]
    assert set(document["target"]) == {"speedup", "met_cold", "met_warm"}
    assert payload["planning"]["plans_equal"] is True
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())
