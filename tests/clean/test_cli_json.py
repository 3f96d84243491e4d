"""`clean --dry-run` lists every file it would delete; `--json` prints one object the real run matches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    for i in (1, 2, 3, 4):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2), rows=20)])
    return t


def _data_files(base: Path) -> dict[str, int]:
    return {
        p.relative_to(base).as_posix(): p.stat().st_size
        for p in base.rglob("*.parquet")
        if ".hoodie" not in p.relative_to(base).parts
    }


def _clean(t: FixtureTable, *extra: str) -> list[str]:
    return ["clean", "--base-path", str(t.base), "--hoodie-conf", "hoodie.cleaner.commits.retained=1", *extra]


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = capsys.readouterr().out
    parsed: dict[str, Any] = json.loads(out)  # the whole of stdout is one JSON object
    return parsed


def test_dry_run_json_lists_exactly_the_files_the_run_deletes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    before = _data_files(t.base)
    hoodie = sorted(p.name for p in (t.base / ".hoodie").iterdir())

    assert main(_clean(t, "--dry-run", "--json")) == 0
    dry = _json(capsys)
    assert dry["dry_run"] is True and dry["table"] == "fixture"
    assert sorted(p.name for p in (t.base / ".hoodie").iterdir()) == hoodie and _data_files(t.base) == before
    [plan] = dry["cleans"]
    would = {f"{f['partition_path']}/{f['file_name']}": f["bytes"] for f in plan["files"]}
    assert all(f["present"] for f in plan["files"])
    assert len(would) == 4  # ts(1) and ts(2) of both groups
    assert would == {path: before[path] for path in would}  # bytes are the files' sizes
    assert [(p["partition_path"], p["files"]) for p in plan["partitions"]] == [("a", 2), ("b", 2)]

    assert main(_clean(t, "--json")) == 0
    done = _json(capsys)
    deleted = set(before) - set(_data_files(t.base))
    assert deleted == set(would)
    [clean] = done["cleans"]
    assert done["dry_run"] is False and clean["instant_time"] and clean["files_deleted"] == 4
    assert {f"{f['partition_path']}/{f['file_name']}" for f in clean["files"]} == deleted
    assert done["bytes_deleted"] == sum(would.values())


def test_dry_run_text_lists_each_file_after_the_partition_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    before = _data_files(t.base)
    assert main(_clean(t, "--dry-run")) == 0
    lines = capsys.readouterr().out.splitlines()
    summary = lines.index(next(line for line in lines if line.strip().startswith("b: 2 files")))
    assert lines[summary + 1].strip() == "files:"
    listed = lines[summary + 2 : summary + 6]
    for i, (partition, n) in enumerate((("a", 1), ("a", 1), ("b", 2), ("b", 2))):
        name = t.file_name(partition, fid(n), ts(1 + i % 2))
        assert listed[i].split() == [partition, name, str(before[f"{partition}/{name}"]), "bytes"]


def test_dry_run_lists_the_files_of_a_pending_plan_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = _table(tmp_path)
    gone = f"a/{t.file_name('a', fid(1), ts(1))}"
    kept = f"b/{t.file_name('b', fid(2), ts(1))}"
    size = (t.base / kept).stat().st_size
    paths = {p: [t.storage.qualify(path)] for p, path in (("a", gone), ("b", kept))}
    t.requested_clean(ts(5), paths, earliest_commit_to_retain=ts(2), last_completed_commit=ts(4))
    (t.base / gone).unlink()

    assert main(_clean(t, "--dry-run", "--json")) == 0
    dry = _json(capsys)
    [pending] = dry["cleans"]  # no new plan while one is pending (hoodie.clean.allow.multiple=false)
    assert "pending" in dry["skipped_reason"]
    assert pending["instant_time"] == ts(5) and pending["resumed"] is True
    assert pending["files"] == [
        {"partition_path": "a", "file_name": gone.split("/")[1], "bytes": 0, "present": False},
        {"partition_path": "b", "file_name": kept.split("/")[1], "bytes": size, "present": True},
    ]
