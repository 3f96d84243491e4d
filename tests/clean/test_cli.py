"""`hudi-table-service clean` end to end on fixture tables."""

from __future__ import annotations

from pathlib import Path

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


def test_cli_clean_refused_plan_exits_non_zero_with_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path, versions=6)
    args = ["clean", "--base-path", str(t.base), "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1"]
    assert main(args) == 1
    assert "more than the limit of 75%" in caplog.text and "--force" in caplog.text
    assert main([*args, "--force"]) == 0


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
