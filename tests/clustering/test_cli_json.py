"""`cluster --dry-run [--json]`: each group's input slices and planned output, as the real plan has them."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from service.clustering import execute_clustering
from service.clustering.records import read_clustering_plan
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock import InProcessTableLock
from service.table.instant import Action
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable, ts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.histories import HudiHistory

SORTED = [
    "--hoodie-conf", "hoodie.clustering.plan.strategy.sort.columns=v,id",
    "--hoodie-conf", "hoodie.layout.optimize.strategy=HILBERT",
    "--hoodie-conf", "hoodie.layout.optimize.curve.build.method=SAMPLE",
    "--hoodie-conf", "hoodie.clustering.plan.strategy.target.file.max.bytes=1048576",
]  # fmt: skip


def _fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("a", _fid(2)), FileSpec("b", _fid(3))])
    t.commit(ts(2), [FileSpec("a", _fid(4)), FileSpec("b", _fid(5))])
    return t


def _cluster(t: FixtureTable, mode: str, *extra: str) -> list[str]:
    return ["cluster", "--base-path", str(t.base), "--mode", mode, "--timezone", "UTC", *extra]


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(capsys.readouterr().out)  # all of stdout is one object
    return parsed


def _slices(plan: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {
        (g["partition_path"], s["file_id"], s["base_file_path"], s["base_instant"])
        for g in plan["groups"]
        for s in g["slices"]
    }


def _stored_slices(t: FixtureTable, instant_time: str) -> set[tuple[str, str, str, str]]:
    table = HudiTable.open(str(t.base))
    instant = table.load_timeline().find(instant_time, Action.REPLACE_COMMIT)
    assert instant is not None
    plan = read_clustering_plan(table, instant)
    return {
        (g.partition_path, s.file_id, s.base_file_path, s.base_instant_time)
        for g in plan.groups
        for s in g.slices
    }


def test_dry_run_json_lists_the_slices_the_real_plan_then_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    sizes = {
        p.relative_to(t.base).as_posix(): p.stat().st_size
        for p in t.base.rglob("*.parquet")
        if ".hoodie" not in p.parts
    }

    assert main(_cluster(t, "schedule", "--dry-run", "--json", *SORTED)) == 0
    dry = _json(capsys)
    assert (dry["table"], dry["mode"], dry["dry_run"], dry["result"]) == ("fixture", "schedule", True, None)
    plan = dry["plan"]
    assert plan["instant_time"] is None and plan["written"] is False
    assert len(_slices(plan)) == plan["input_file_slices"] == 5
    assert {(g["partition_path"], len(g["slices"])) for g in plan["groups"]} == {("a", 3), ("b", 2)}
    for g in plan["groups"]:
        assert all(s["bytes"] == sizes[s["base_file_path"]] for s in g["slices"])
        assert g["input_bytes"] == g["output"]["expected_bytes"] == sum(s["bytes"] for s in g["slices"])
        assert g["output"] == {
            "file_groups": 1,
            "expected_bytes": g["input_bytes"],
            "target_file_bytes": 1048576,
            "sort_columns": ["v", "id"],
            "layout_strategy": "HILBERT",
            "curve_build_method": "SAMPLE",
        }
    assert plan["input_bytes"] == sum(sizes.values())
    assert not list((t.base / ".hoodie").glob("*.replacecommit*"))

    assert main(_cluster(t, "schedule", "--json", *SORTED)) == 0
    scheduled = _json(capsys)["plan"]
    instant_time = scheduled["instant_time"]
    assert scheduled["written"] is True and _slices(scheduled) == _slices(plan)
    assert _stored_slices(t, instant_time) == _slices(plan)

    # The pending plan read back: sizes from storage, sort columns from the plan's strategy params
    # (not from this command's config, which names none), layout from the config as execution uses it.
    assert main(_cluster(t, "execute", "--dry-run", "--json")) == 0
    stored = _json(capsys)["plan"]
    assert stored["instant_time"] == instant_time and _slices(stored) == _slices(plan)
    assert stored["input_bytes"] == plan["input_bytes"]
    assert {g["output"]["layout_strategy"] for g in stored["groups"]} == {"LINEAR"}
    assert {tuple(g["output"]["sort_columns"]) for g in stored["groups"]} == {("v", "id")}


def test_dry_run_text_shows_slices_and_planned_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    assert main(_cluster(t, "schedule", "--dry-run", *SORTED)) == 0
    out = capsys.readouterr().out
    assert "clustering plan (not written): 2 groups, 5 input file slices" in out
    assert "1 output file groups of target 1,048,576 bytes, sorted by v, id (HILBERT, curve SAMPLE)" in out
    name = t.file_name("b", _fid(5), ts(2))
    size = (t.base / "b" / name).stat().st_size
    assert f"    b/{name}  file {_fid(5)}  base instant {ts(2)}  {size:,} bytes" in out.splitlines()


def test_json_without_dry_run_and_with_nothing_to_do_is_one_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    assert main(_cluster(t, "execute", "--json")) == 0
    assert _json(capsys)["reason"] == "no pending clustering plan to execute"
    assert main(_cluster(t, "purgePending", "--dry-run", "--json")) == 0
    assert _json(capsys)["pending"] == []
    assert main(_cluster(t, "schedule", "--json")) == 0
    instant_time = _json(capsys)["plan"]["instant_time"]
    assert main(_cluster(t, "purgePending", "--json")) == 0
    assert _json(capsys)["rolled_back"] == [instant_time]


@pytest.mark.spark
@pytest.mark.hudi
@pytest.mark.slow
def test_dry_run_of_a_hudi_scheduled_plan_lists_what_execution_replaces(
    spark: SparkSession, history_many_commits: HudiHistory, capsys: pytest.CaptureFixture[str]
) -> None:
    base = history_many_commits.base_path
    before = ht.normalise_rows(ht.read_snapshot(spark, base))
    opts = "hoodie.clustering.plan.strategy.sort.columns=qty"
    spark.sql(f"CALL run_clustering(path => '{base}', op => 'schedule', options => '{opts}')").collect()
    capsys.readouterr()  # what Spark printed while Hudi scheduled

    assert main(["cluster", "--base-path", str(base), "--mode", "execute", "--dry-run", "--json"]) == 0
    plan = _json(capsys)["plan"]
    listed = {(g["partition_path"], s["file_id"]) for g in plan["groups"] for s in g["slices"]}
    assert listed and {tuple(g["output"]["sort_columns"]) for g in plan["groups"]} == {("qty",)}
    sizes = {
        p.relative_to(base).as_posix(): p.stat().st_size
        for p in base.rglob("*.parquet")
        if ".hoodie" not in p.parts
    }
    assert all(s["bytes"] == sizes[s["base_file_path"]] for g in plan["groups"] for s in g["slices"])

    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({}, table.name)
    result = execute_clustering(
        table, plan["instant_time"], config, SparkExecutor(session=spark).run_group,
        InProcessTableLock(table.name), zone=UTC,
    )  # fmt: skip
    assert result.committed
    instant = table.load_timeline().find(plan["instant_time"], Action.REPLACE_COMMIT)
    assert instant is not None and instant.is_completed
    replaced = table.facts_reader.commit_metadata(instant).partition_to_replace_file_ids
    assert {(p, f) for p, ids in replaced.items() for f in ids} == listed
    assert ht.normalise_rows(ht.read_snapshot(spark, base)) == before
