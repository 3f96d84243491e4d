from __future__ import annotations

from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.instant import State
from service.table.table import HudiTable
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def test_view_latest_slices_newest_first_and_uncommitted_hidden(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("b", _fid(2))])
    t.commit(ts(2), [FileSpec("a", _fid(1))])
    t.commit(ts(3), [FileSpec("a", _fid(1)), FileSpec("b", _fid(3))], state=State.INFLIGHT)
    view = HudiTable.open(str(tmp_path)).load_view()
    groups = {fg.file_group_id: fg for fg in view.live_file_groups}
    assert set(groups) == {("a", _fid(1)), ("b", _fid(2))}
    assert [s.base_instant_time for s in groups[("a", _fid(1))].slices] == [ts(2), ts(1)]
    assert len(view.uncommitted_files) == 2  # ts(3)'s two files


def test_view_replaced_groups_hidden_but_kept_for_cleaner(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("a", _fid(2))])
    t.replace(ts(2), [FileSpec("a", _fid(3))], {"a": [_fid(1), _fid(2)]})
    view = HudiTable.open(str(tmp_path)).load_view()
    assert [fg.file_id for fg in view.live_file_groups] == [_fid(3)]
    assert {fg.file_id: fg.replaced_by for fg in view.replaced_file_groups} == {
        _fid(1): ts(2),
        _fid(2): ts(2),
    }


def test_view_pending_clustering_and_savepoints(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("a", _fid(2))])
    t.savepoint(ts(1), {"a": [t.file_name("a", _fid(1), ts(1))]})
    t.pending_clustering(ts(2), [("a", _fid(1))], inflight=True)
    view = HudiTable.open(str(tmp_path)).load_view()
    assert view.facts.pending_clustering == {("a", _fid(1)): ts(2)}
    assert view.savepointed_file_names == {t.file_name("a", _fid(1), ts(1))}
    assert len(view.live_file_groups) == 2  # readers are unaffected by a pending plan


def test_view_file_group_in_two_pending_plans_is_an_error(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1))])
    t.pending_clustering(ts(2), [("a", _fid(1))])
    t.pending_clustering(ts(3), [("a", _fid(1))])
    with pytest.raises(CorruptTableError, match="two pending clustering plans"):
        HudiTable.open(str(tmp_path)).load_view()


def test_view_non_partitioned_table(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path, partitioned=False)
    t.commit(ts(1), [FileSpec("", _fid(1))])
    view = HudiTable.open(str(tmp_path)).load_view()
    assert [(fg.partition_path, fg.file_id) for fg in view.live_file_groups] == [("", _fid(1))]


def test_view_garbage_in_timeline_file_names_the_file(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1))])
    (tmp_path / ".hoodie" / f"{ts(2)}.replacecommit").write_bytes(b"\x00garbage{")  # read for its groups
    with pytest.raises(CorruptTableError, match=rf"{ts(2)}\.replacecommit"):
        HudiTable.open(str(tmp_path)).load_view()


def test_two_base_files_of_one_instant_the_commit_names_one_and_the_other_is_set_apart(
    tmp_path: Path,
) -> None:
    """A retried task's leftover of instant 2 (a copy of the older version, its name sorting before the
    committed file's) is in no slice: the file instant 2's write stats name is, and the leftover is
    set apart with the uncommitted files."""
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1))])
    t.commit(ts(2), [FileSpec("a", _fid(1))])
    committed = tmp_path / "a" / t.file_name("a", _fid(1), ts(2))
    leftover = tmp_path / "a" / f"{_fid(1)}_0-0-00_{ts(2)}.parquet"
    assert leftover.name < committed.name
    leftover.write_bytes((tmp_path / "a" / t.file_name("a", _fid(1), ts(1))).read_bytes())
    view = HudiTable.open(str(tmp_path)).load_view()
    [group] = view.live_file_groups
    assert [s.base_file.file_name for s in group.slices if s.base_file] == [
        committed.name,
        t.file_name("a", _fid(1), ts(1)),
    ]
    assert view.uncommitted_files == (f"a/{leftover.name}",)


def test_two_base_files_of_an_archived_instant_are_refused_by_name(tmp_path: Path) -> None:
    """Without the instant's commit on the active timeline nothing says which file is the slice's."""
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1))])
    t.commit(ts(2), [FileSpec("a", _fid(2))])
    (tmp_path / ".hoodie" / f"{ts(1)}.commit").unlink()  # archived: before the active timeline
    (tmp_path / ".hoodie" / f"{ts(1)}.commit.requested").unlink(missing_ok=True)
    (tmp_path / ".hoodie" / f"{ts(1)}.inflight").unlink(missing_ok=True)
    original = tmp_path / "a" / t.file_name("a", _fid(1), ts(1))
    (tmp_path / "a" / f"{_fid(1)}_0-0-00_{ts(1)}.parquet").write_bytes(original.read_bytes())
    with pytest.raises(
        CorruptTableError, match=rf"two base files of instant {ts(1)}.*not on the active timeline"
    ):
        HudiTable.open(str(tmp_path)).load_view()
