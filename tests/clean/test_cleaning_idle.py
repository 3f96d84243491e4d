"""A clean that is not due: the run decides on its first snapshot, takes no lock and reports the count."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.cleaning import Cleaner
from service.cleaning.snapshot import read_last_clean
from service.errors import CorruptTableError
from service.lock import InProcessTableLock
from service.table.table import HudiTable
from tests.clean.helpers import fid, make_cleaner
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _table(base: Path) -> FixtureTable:
    t = FixtureTable(base)
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    t.completed_clean(ts(4), earliest_commit_to_retain=ts(2), last_completed_commit=ts(3))
    for i in (5, 6):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    return t


def _cleaner(base: Path, max_commits: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Cleaner, list[str]]:
    props = {"hoodie.clean.max.commits": max_commits, "hoodie.cleaner.commits.retained": 1}
    acquisitions: list[str] = []
    acquire = InProcessTableLock._acquire_backend

    def counted(self: InProcessTableLock, remaining_s: float, timeout_s: float) -> None:
        acquisitions.append(self.key)
        acquire(self, remaining_s, timeout_s)

    monkeypatch.setattr(InProcessTableLock, "_acquire_backend", counted)
    return make_cleaner(base, props), acquisitions


def test_cleaner_not_due_takes_no_lock_and_reports_commits_since_last_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(tmp_path / "t")
    cleaner, acquisitions = _cleaner(tmp_path / "t", 3, monkeypatch)

    result = cleaner.run()

    assert result.cleans == ()
    assert result.skipped_reason == "fewer than hoodie.clean.max.commits=3 commits since the last clean"
    assert result.commits_since_last_clean == 2  # ts(5), ts(6) after the clean's last completed ts(3)
    assert acquisitions == []


def test_cleaner_due_still_plans_under_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _table(tmp_path / "t")
    cleaner, acquisitions = _cleaner(tmp_path / "t", 2, monkeypatch)

    result = cleaner.run()

    assert len(result.cleans) == 1 and result.cleans[0].files_deleted > 0
    assert result.commits_since_last_clean is None  # the daemon recounts on the new timeline
    assert len(acquisitions) >= 2  # the plan and the commit of the clean


def test_last_clean_is_read_once_per_completed_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _table(tmp_path / "t")
    table = HudiTable.open(str(tmp_path / "t"))
    timeline = table.load_timeline()
    first = read_last_clean(table, timeline)
    reads: list[str] = []
    original = type(table.storage).read_bytes

    def counted(storage: object, rel: str) -> bytes:
        reads.append(rel)
        return original(storage, rel)  # type: ignore[arg-type]

    monkeypatch.setattr(type(table.storage), "read_bytes", counted)

    assert read_last_clean(table, timeline) == first
    assert first is not None and first.last_completed_commit_timestamp == ts(3)
    assert reads == []


@pytest.mark.parametrize(
    ("field", "earliest", "last"),
    [
        ("lastCompletedCommitTimestamp", ts(2), "americas/../../outside.parquet"),
        ("earliestCommitToRetain", "99999999999999999999", ts(3)),
    ],
)
def test_a_last_clean_whose_times_are_not_instant_times_is_refused_naming_it(
    tmp_path: Path, field: str, earliest: str, last: str
) -> None:
    """Garbage in the last clean's times sorts after every instant: the trigger would count no commit
    since it and the incremental scan would skip the partitions, so the clean would keep files."""
    t = FixtureTable(tmp_path / "t")
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    t.completed_clean(ts(4), earliest_commit_to_retain=earliest, last_completed_commit=last)
    t.commit(ts(5), [FileSpec("a", fid(1))])

    with pytest.raises(CorruptTableError, match=rf"{ts(4)}\.clean: {field} '.*' is not an instant time"):
        make_cleaner(tmp_path / "t", {"hoodie.cleaner.commits.retained": 1}).run()
