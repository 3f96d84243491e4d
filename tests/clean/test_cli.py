"""`hudi-table-service clean` end to end on fixture tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service import command_context
from service.cli import main
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _table(tmp_path: Path, versions: int = 3) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    for i in range(1, versions + 1):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    return t


def _dry_run_keeping_one(base: Path) -> list[str]:
    return [
        "clean",
        "--base-path",
        str(base),
        "--dry-run",
        "--hoodie-conf",
        "hoodie.cleaner.commits.retained=1",
    ]


def test_cli_clean_with_props_file_and_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(tmp_path)
    props = tmp_path / "clean.properties"
    props.write_text(
        "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS\nhoodie.cleaner.fileversions.retained=1\n"
    )
    args = ["clean", "--base-path", str(t.base), "--props", str(props), "--lock-provider", "in-process"]
    assert main([*args, "--hoodie-conf", "hoodie.cleaner.fileversions.retained=2"]) == 0
    out = capsys.readouterr().out
    assert "deleted 2 files" in out  # ts(1) of both groups
    assert not (t.base / "a" / t.file_name("a", fid(1), ts(1))).exists()
    assert (t.base / "a" / t.file_name("a", fid(1), ts(2))).exists()


def test_cli_clean_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(tmp_path)
    hoodie = sorted(p.name for p in (t.base / ".hoodie").iterdir())
    assert main(_dry_run_keeping_one(t.base)) == 0
    out = capsys.readouterr().out
    assert "dry run" in out and "would delete 2 files" in out and "a: 1 files" in out
    assert sorted(p.name for p in (t.base / ".hoodie").iterdir()) == hoodie


def test_cli_clean_held_plan_exits_2_with_reason_and_force_runs_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path, versions=6)
    args = ["clean", "--base-path", str(t.base), "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1"]
    assert main(args) == 2
    assert "more than the limit of 75%" in caplog.text and "--force" in caplog.text
    assert "--approve" in caplog.text
    assert main([*args, "--force"]) == 0


def _files(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*.parquet"))


def test_cli_clean_approval_runs_exactly_the_held_plan_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A held clean prints its digest; an approval of another digest lets it through no more than none;
    approving the plan's digest deletes nothing by itself; the next clean runs that plan and spends the
    approval. A plan that changed after its approval (one more version) is held again under a new
    digest, the old approval letting nothing through."""
    t = _table(tmp_path, versions=6)
    args = ["clean", "--base-path", str(t.base), "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1"]
    approvals = t.base / ".hoodie" / ".aux" / "hudi-table-service" / "clean-approvals"

    def held() -> dict[str, Any]:
        capsys.readouterr()
        assert main([*args, "--json"]) == 2
        reply: dict[str, Any] = json.loads(capsys.readouterr().out)["held"]
        return reply

    first = held()
    assert (first["files_to_delete"], first["live_files"]) == (10, 12)
    assert first["partitions"] == {"a": 5, "b": 5} and first["limit"] == 0.75
    before = _files(t.base)
    assert main([*args, "--approve", "not-a-digest"]) == 1 and "not a plan digest" in caplog.text
    assert main([*args, "--approve", "0" * 20]) == 0
    assert held() == first  # another plan's approval lets this one through no more than none
    assert main([*args, "--approve", first["digest"]]) == 0
    assert sorted(p.name for p in approvals.iterdir()) == sorted(
        ["0" * 20 + ".json", f"{first['digest']}.json"]
    )
    assert _files(t.base) == before  # approving deletes nothing
    # The table moves on before the next clean: the plan now deletes one file more.
    t.commit(ts(7), [FileSpec("a", fid(1))])
    second = held()
    assert second["digest"] != first["digest"] and second["files_to_delete"] == 11
    assert len(_files(t.base)) == len(before) + 1  # nothing deleted by the old approval
    assert main([*args, "--approve", second["digest"]]) == 0
    capsys.readouterr()
    assert main(args) == 0
    assert "deleted 11 files" in capsys.readouterr().out
    assert _files(t.base) == [f"a/{t.file_name('a', fid(1), ts(7))}", f"b/{t.file_name('b', fid(2), ts(6))}"]
    # The approval used is spent; those of plans that never ran stay, approving nothing else.
    assert sorted(p.name for p in approvals.iterdir()) == sorted(
        ["0" * 20 + ".json", f"{first['digest']}.json"]
    )


def test_cli_clean_bad_config_exits_non_zero(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    t = _table(tmp_path)
    assert main(["clean", "--base-path", str(t.base), "--hoodie-conf", "hoodie.cleaner.policy=NOPE"]) == 1
    assert "hoodie.cleaner.policy" in caplog.text


def test_cli_on_a_local_table_uses_the_machines_zone_or_asks_for_timezone_when_it_names_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    t = FixtureTable(tmp_path / "t", timeline_timezone="LOCAL")
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    args = _dry_run_keeping_one(t.base)
    assert main(args) == 0  # this machine names its zone (the CI image's /etc/localtime or $TZ)
    monkeypatch.setattr(command_context, "machine_zone", lambda: None)
    assert main(args) == 1
    assert "hoodie.table.timeline.timezone=LOCAL" in caplog.text and "set --timezone" in caplog.text
    assert main([*args, "--timezone", "Asia/Kolkata"]) == 0
