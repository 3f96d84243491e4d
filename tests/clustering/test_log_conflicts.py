"""The merge-on-read commit check for log appends (`service.clustering.log_conflicts`), rule by rule,
on a fixture table whose log files hold real Avro data blocks. The end-to-end case against Hudi's
writer is `test_mor_clustering_hudi.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.clustering.log_conflicts import check_no_log_appends
from service.errors import ConflictError
from service.table.clustering_plan import PlannedClustering, PlannedGroup, PlannedSlice
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.log_format.merge import InstantFilter
from service.table.log_format.slice_reader import instant_filter
from service.table.table import HudiTable
from tests.clean.helpers import fid
from tests.log_format.encode import avro_block, row
from tests.support.fixtures import FileSpec, FixtureTable, LogSpec, ts

CLUSTERING = ts(10)


def _append(t: FixtureTable, instant: str, version: int, state: State = State.COMPLETED) -> None:
    """A deltacommit appending log file `version` to file group 1's slice, one data block of it."""
    [stat] = t.commit(
        instant, [], action=Action.DELTA_COMMIT, state=state, logs=[LogSpec("a", fid(1), ts(1), version)]
    )
    assert stat.path is not None
    (t.base / stat.path).write_bytes(avro_block(instant, [row("1", 5, "x", instant)]))


def _instant_path(timestamp: str, state: State) -> str:
    return LAYOUT_1.instant_path(Instant(timestamp, Action.DELTA_COMMIT, state))


def _planned(t: FixtureTable) -> tuple[HudiTable, PlannedClustering, InstantFilter]:
    """A plan over file group 1 as it is now, and what its execution read (as of the clustering)."""
    table = HudiTable.open(str(t.base), check_supported=False)
    timeline = table.load_timeline()
    file_slice = table.load_view(timeline).file_groups[("a", fid(1))].latest_slice
    assert file_slice is not None
    group = PlannedGroup("a", (PlannedSlice.of(file_slice),), 1)
    return table, PlannedClustering((group,), "strategy"), instant_filter(timeline, CLUSTERING)


def _check(table: HudiTable, plan: PlannedClustering, read: InstantFilter) -> None:
    timeline = table.load_timeline()
    check_no_log_appends(table, CLUSTERING, plan, table.load_view(timeline), timeline, read)


@pytest.fixture
def mor(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t", table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))], action=Action.DELTA_COMMIT)
    _append(t, ts(2), 1)
    return t


def test_nothing_written_since_the_read_commits(mor: FixtureTable) -> None:
    table, plan, read = _planned(mor)
    _check(table, plan, read)
    mor.commit(ts(11), [FileSpec("a", fid(2))], action=Action.DELTA_COMMIT)  # another group: fine
    _check(table, plan, read)


def test_a_completed_append_the_read_did_not_see_conflicts(mor: FixtureTable) -> None:
    table, plan, read = _planned(mor)
    _append(mor, ts(11), 2)
    with pytest.raises(ConflictError, match=rf"deltacommit {ts(11)} wrote file group"):
        _check(table, plan, read)


def test_an_unplanned_log_of_a_completed_write_conflicts_even_if_read(mor: FixtureTable) -> None:
    """Completed between scheduling and the read: the read saw the instant, not the file."""
    table, plan, _ = _planned(mor)
    _append(mor, ts(5), 2)
    read = instant_filter(table.load_timeline(), CLUSTERING)
    with pytest.raises(ConflictError, match=rf"write {ts(5)} appended to file group"):
        _check(table, plan, read)


def test_an_unplanned_log_of_a_pending_write_conflicts(mor: FixtureTable) -> None:
    table, plan, read = _planned(mor)
    _append(mor, ts(11), 2, State.INFLIGHT)
    with pytest.raises(ConflictError, match=rf"write {ts(11)} appended to file group"):
        _check(table, plan, read)
    # Rolled back (gone from the timeline): its blocks change nothing.
    for state in (State.INFLIGHT, State.REQUESTED):
        (mor.base / _instant_path(ts(11), state)).unlink()
    _check(table, plan, read)


def test_a_planned_log_of_a_write_pending_at_read_and_still_pending_conflicts(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "t", table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1))], action=Action.DELTA_COMMIT)
    _append(t, ts(2), 1, State.INFLIGHT)  # the read skips its block
    table, plan, read = _planned(t)
    assert plan.groups[0].slices[0].log_file_paths
    with pytest.raises(ConflictError, match=rf"write {ts(2)} appended to file group"):
        _check(table, plan, read)
    for state in (State.INFLIGHT, State.REQUESTED):  # rolled back: nothing was lost
        (t.base / _instant_path(ts(2), state)).unlink()
    _check(table, plan, read)


def test_layout_2_a_log_file_of_a_pending_deltacommit_on_an_input_group_conflicts(tmp_path: Path) -> None:
    """Table version 9: each deltacommit writes log files of its own, named by it, which count only once
    it completes. One still pending on an input group may complete after the replacecommit, into a
    replaced group: refused, naming it. On another group it changes nothing."""
    t = FixtureTable(tmp_path / "t", table_type="MERGE_ON_READ", table_version=9)
    t.commit(
        ts(1),
        [FileSpec("a", fid(1)), FileSpec("a", fid(2))],
        action=Action.DELTA_COMMIT,
        completion_time=ts(2),
    )
    table, plan, read = _planned(t)
    t.commit(
        ts(11), [], action=Action.DELTA_COMMIT, state=State.INFLIGHT, logs=[LogSpec("a", fid(2), ts(11), 1)]
    )
    _check(table, plan, read)
    t.commit(
        ts(12), [], action=Action.DELTA_COMMIT, state=State.INFLIGHT, logs=[LogSpec("a", fid(1), ts(12), 1)]
    )
    with pytest.raises(ConflictError, match=rf"deltacommit {ts(12)}, still pending, writes file group"):
        _check(table, plan, read)
