from __future__ import annotations

from pathlib import Path

import pytest

from service.cli import main
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("a", _fid(2)), FileSpec("b", _fid(3))])
    t.commit(ts(2), [FileSpec("a", _fid(4)), FileSpec("b", _fid(5))])
    return t


def _pending(t: FixtureTable) -> list[tuple[str, State]]:
    timeline = HudiTable.open(str(t.base)).load_timeline()
    return [(i.timestamp, i.state) for i in timeline.pending() if i.action is Action.REPLACE_COMMIT]


def test_cli_cluster_dry_run_prints_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    args = ["cluster", "--base-path", str(t.base), "--mode", "schedule", "--dry-run", "--timezone", "UTC"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "clustering plan (not written): 2 groups, 5 input file slices" in out
    assert "partition 'a', 3 slices" in out and "partition 'b', 2 slices" in out
    assert _pending(t) == []


def test_cli_cluster_schedule_then_purge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(tmp_path)
    base = ["cluster", "--base-path", str(t.base), "--timezone", "UTC"]
    assert main([*base, "--mode", "schedule"]) == 0
    pending = _pending(t)
    assert len(pending) == 1 and pending[0][1] is State.REQUESTED
    # At most one pending plan: a second schedule writes nothing and says why.
    assert main([*base, "--mode", "schedule"]) == 0
    assert "is pending" in capsys.readouterr().out
    assert len(_pending(t)) == 1
    assert main([*base, "--mode", "execute", "--dry-run"]) == 0
    assert f"clustering plan {pending[0][0]}: 2 groups" in capsys.readouterr().out
    assert main([*base, "--mode", "purgePending"]) == 0
    assert _pending(t) == []
    assert list((t.base / ".hoodie").glob("*.rollback"))


def test_cli_cluster_nothing_eligible_schedules_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    args = ["cluster", "--base-path", str(t.base), "--mode", "schedule", "--timezone", "UTC",
            "--hoodie-conf", "hoodie.clustering.plan.strategy.small.file.limit=1"]  # fmt: skip
    assert main(args) == 0
    assert "nothing scheduled" in capsys.readouterr().out
    assert _pending(t) == []


def test_cli_cluster_bad_value_names_table_key_and_value(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path)
    args = ["cluster", "--base-path", str(t.base), "--mode", "schedule",
            "--hoodie-conf", "hoodie.clustering.plan.strategy.max.num.groups=many"]  # fmt: skip
    assert main(args) == 1
    assert "fixture" in caplog.text and "hoodie.clustering.plan.strategy.max.num.groups" in caplog.text
    assert "many" in caplog.text
