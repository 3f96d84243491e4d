"""`repair --execute` moves orphan files to the trash and `--undo` puts them back, byte for byte; a run
killed anywhere leaves no file both gone and unrecorded, and the next run finishes it; crafted
manifests are refused by name and nothing moves. Fixture tables (no Spark): the orphans are base files
of an instant on no timeline (a failed write whose rollback was killed), made a day old."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.trash import TRASH_DIR
from tests.clean.helpers import fid
from tests.support.crash_at import run_killed_at
from tests.support.fixtures import FileSpec, FixtureTable, ts

DAY_AGO = time.time() - 2 * 86400


def _table(tmp_path: Path) -> tuple[FixtureTable, list[str]]:
    """Three commits; three orphans of a lost write between the first two (two partitions)."""
    t = FixtureTable(tmp_path / "t")
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    lost = f"{ts(1)[:-3]}500"
    orphans = []
    for n, partition in enumerate(["a", "a", "b"]):
        source = next((t.base / partition).glob("*.parquet"))
        target = t.base / partition / f"{n:08x}-0000-0000-0000-000000000000-0_0-1-1_{lost}.parquet"
        target.write_bytes(source.read_bytes() + bytes([n]))  # each its own bytes
        os.utime(target, (DAY_AGO, DAY_AGO))
        orphans.append(f"{partition}/{target.name}")
    return t, orphans


def _tree(base: Path) -> dict[str, str]:
    """Every data file of the table and of its trash: path -> SHA-256 (what must never be lost)."""
    out = {}
    for path in base.rglob("*.parquet"):
        out[str(path.relative_to(base))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _by_name(tree: dict[str, str]) -> dict[str, str]:
    return {Path(p).name: digest for p, digest in tree.items()}


def _repair(base: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["repair", "--base-path", str(base), "--json", *extra]) == 0
    reply: dict[str, Any] = json.loads(capsys.readouterr().out)
    return reply


def test_orphans_go_to_the_trash_and_an_undo_puts_them_back_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t, orphans = _table(tmp_path)
    before = _tree(t.base)
    dry = _repair(t.base, capsys=capsys)
    assert dry["run"] is None and sorted(o["path"] for o in dry["orphans"]) == sorted(orphans)
    assert _tree(t.base) == before
    done = _repair(t.base, "--execute", capsys=capsys)
    run = done["run"]
    assert run and sorted(o["path"] for o in done["orphans"]) == sorted(orphans)
    assert not any((t.base / o).exists() for o in orphans)
    moved = _tree(t.base)
    assert _by_name(moved) == _by_name(before)  # every byte kept, the orphans in the trash
    assert {p for p in moved if p.startswith(TRASH_DIR)} == {f"{TRASH_DIR}/{run}/files/{o}" for o in orphans}
    manifest = json.loads((t.base / TRASH_DIR / run / "manifest.json").read_text())
    assert sorted(e["path"] for e in manifest["entries"]) == sorted(orphans)
    assert _repair(t.base, "--execute", capsys=capsys)["run"] is None  # nothing left to move
    capsys.readouterr()
    assert main(["repair", "--base-path", str(t.base), "--undo", run]) == 0
    assert _tree(t.base) == before


# Where a run is killed: just before its manifest exists, just after, between a file's copy and the
# delete of its original, and after an original was deleted (midway through the moves).
KILLS = {
    "before_manifest": ("before", r"/manifest\.json$"),
    "after_manifest": ("after", r"/manifest\.json$"),
    "between_copy_and_delete": ("on-copy", r"/files/a/"),
    "midway": ("on-delete", r"^a/0+-"),
}


@pytest.mark.parametrize("step", list(KILLS))
def test_a_run_killed_anywhere_loses_nothing_and_the_next_run_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str
) -> None:
    t, orphans = _table(tmp_path)
    before = _tree(t.base)
    mode, pattern = KILLS[step]
    run_killed_at(
        pattern, ["repair", "--base-path", str(t.base), "--execute"], tmp_path / "killed.log", mode=mode
    )
    # Every file is in place or in the trash, byte for byte, and recorded in a manifest if moved.
    after_kill = _tree(t.base)
    assert set(_by_name(after_kill).items()) >= set(_by_name(before).items())
    done = _repair(t.base, "--execute", capsys=capsys)
    assert not any((t.base / o).exists() for o in orphans)
    final = _tree(t.base)
    assert _by_name(final) == _by_name(before) and len(final) == len(before)  # each once
    runs = sorted(p.name for p in (t.base / TRASH_DIR).iterdir())
    assert all(
        (t.base / TRASH_DIR / r / "completed").exists()
        for r in runs
        if (t.base / TRASH_DIR / r / "manifest.json").exists()
    )
    if step != "before_manifest":
        assert done["settled_runs"] and done["run"] is None  # the killed run finished, nothing left
    # Undoing every run puts the table back as it was.
    for r in runs:
        if (t.base / TRASH_DIR / r / "manifest.json").exists():
            assert main(["repair", "--base-path", str(t.base), "--undo", r]) == 0
    assert _tree(t.base) == before


def _crafted(t: FixtureTable, run: str, entries: list[dict[str, Any]] | str) -> None:
    folder = t.base / TRASH_DIR / run
    folder.mkdir(parents=True)
    text = (
        entries
        if isinstance(entries, str)
        else json.dumps(
            {
                "run": run,
                "table": "fixture",
                "created_at": "2024-01-01T00:00:00+00:00",
                "reason": "x",
                "entries": entries,
            }
        )
    )
    (folder / "manifest.json").write_text(text)


def _entry(run: str, path: str, trash: str | None = None) -> dict[str, Any]:
    return {
        "path": path,
        "trash": trash or f"{TRASH_DIR}/{run}/files/{path}",
        "bytes": 1,
        "instant": "1",
        "why": "x",
    }


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("outside_the_table", "the table's partitions"),
        ("into_the_timeline", "the table's partitions"),
        ("absolute", "the table's partitions"),
        ("trash_elsewhere", "not in run"),
        ("twice", "twice"),
        ("truncated", "not a trash manifest"),
    ],
)
def test_crafted_manifests_are_refused_by_name_and_nothing_moves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, case: str, expected: str
) -> None:
    t, orphans = _table(tmp_path)
    run = "20240101000000-abcdef"
    good = _entry(run, orphans[0])
    crafted: list[dict[str, Any]] | str = {
        "outside_the_table": [_entry(run, "../outside.parquet")],
        "into_the_timeline": [_entry(run, ".hoodie/hoodie.properties")],
        "absolute": [_entry(run, "/etc/passwd")],
        "trash_elsewhere": [_entry(run, orphans[0], trash="a/elsewhere.parquet")],
        "twice": [good, good],
        "truncated": json.dumps({"run": run, "entries": [good]})[:40],
    }[case]
    _crafted(t, run, crafted)
    before = _tree(t.base)
    listing = sorted(str(p) for p in tmp_path.rglob("*"))
    for argv in (["--undo", run], ["--execute"]):  # an undo of it, and a run settling it
        assert main(["repair", "--base-path", str(t.base), *argv]) == 1
        assert expected in caplog.text and "manifest.json" in caplog.text
        assert _tree(t.base) == before and sorted(str(p) for p in tmp_path.rglob("*")) == listing


def test_an_undone_run_is_never_moved_again_and_old_runs_are_purged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed midway, then undone instead of settled: the next `--execute` does not redo it (it
    moves the orphans under a run of its own). Runs older than the trash retention are emptied."""
    t, _ = _table(tmp_path)
    before = _tree(t.base)
    mode, pattern = KILLS["midway"]
    run_killed_at(
        pattern, ["repair", "--base-path", str(t.base), "--execute"], tmp_path / "killed.log", mode=mode
    )
    [killed] = [p.name for p in (t.base / TRASH_DIR).iterdir()]
    assert main(["repair", "--base-path", str(t.base), "--undo", killed]) == 0
    assert _tree(t.base) == before
    done = _repair(t.base, "--execute", capsys=capsys)
    assert done["settled_runs"] == [] and done["run"] and done["run"] != killed
    assert _by_name(_tree(t.base)) == _by_name(before) and len(_tree(t.base)) == len(before)
    purged = _repair(t.base, "--execute", "--trash-retention-hours", "0", capsys=capsys)["purged_runs"]
    assert sorted(purged) == sorted([killed, done["run"]])
    assert not (t.base / TRASH_DIR / done["run"]).exists()


@pytest.mark.parametrize("run", ["../../..", "20240101000000-abcdef/../../x", "not-a-run"])
def test_an_undo_of_a_name_that_is_no_runs_id_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, run: str
) -> None:
    t, _ = _table(tmp_path)
    before = _tree(t.base)
    assert main(["repair", "--base-path", str(t.base), "--undo", run]) == 1
    assert "is not a trash run's id" in caplog.text and _tree(t.base) == before
