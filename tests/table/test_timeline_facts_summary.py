"""The view's timeline facts and the clean planner's commit partitions come from commit summaries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.cleaning.snapshot import commit_partitions, load_clean_snapshot
from service.config.hoodie import HoodieConfig
from service.errors import CorruptTableError
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.table import HudiTable
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", _fid(1)), FileSpec("b", _fid(2))])
    t.replace(ts(2), [FileSpec("c", _fid(3))], {"a": [_fid(1)], "d": []})
    t.commit(ts(3), [FileSpec("b", _fid(2))])
    return t


def _corrupt_stat(tmp_path: Path, instant_time: str) -> Path:
    """Valid JSON whose write stat holds a fraction where a long belongs: only a stat check finds it."""
    path = tmp_path / ".hoodie" / f"{instant_time}.commit"
    tree = json.loads(path.read_bytes())
    tree["partitionToWriteStats"]["b"][0]["numWrites"] = 1.5
    path.write_text(json.dumps(tree))
    return path


def test_commit_partitions_are_written_and_replaced_partitions(tmp_path: Path) -> None:
    _table(tmp_path)
    table = HudiTable.open(str(tmp_path))
    assert commit_partitions(table, table.load_timeline()) == {
        ts(1): {"a", "b"},
        ts(2): {"c", "a", "d"},
        ts(3): {"b"},
    }


def test_view_hides_groups_replaced_per_summary(tmp_path: Path) -> None:
    _table(tmp_path)
    view = HudiTable.open(str(tmp_path)).load_view()
    assert {fg.file_group_id for fg in view.live_file_groups} == {("b", _fid(2)), ("c", _fid(3))}


def test_a_commit_summary_refuses_a_write_stat_that_does_not_decode_as_the_full_decode_does(
    tmp_path: Path,
) -> None:
    _table(tmp_path)
    path = _corrupt_stat(tmp_path, ts(3))
    table = HudiTable.open(str(tmp_path))
    instant = Instant(ts(3), Action.COMMIT, State.COMPLETED)
    with pytest.raises(CorruptTableError, match=rf"{ts(3)}\.commit.*numWrites") as from_summary:
        table.facts_reader.commit_summary(instant)
    with pytest.raises(CorruptTableError) as from_full_decode:
        codecs.decode(codecs.CommitMetadata, path.read_bytes(), table.storage.qualify(path.name))
    assert str(from_summary.value).split(": ", 1)[1] == str(from_full_decode.value).split(": ", 1)[1]


def test_the_view_reads_no_commit_metadata_but_a_replacecommits(tmp_path: Path) -> None:
    """As Java's file-system view: slices come from file names and completed instants; a commit's
    metadata is read when a service needs what it holds (a view of 10^6 files over four commit files
    of 200 MB each spent 6 s decoding them)."""
    _table(tmp_path)
    (tmp_path / ".hoodie" / f"{ts(3)}.commit").write_bytes(b"\x00garbage{")
    view = HudiTable.open(str(tmp_path)).load_view()
    assert {fg.file_group_id for fg in view.live_file_groups} == {("b", _fid(2)), ("c", _fid(3))}
    (tmp_path / ".hoodie" / f"{ts(2)}.replacecommit").write_bytes(b"\x00garbage{")
    with pytest.raises(CorruptTableError, match=rf"{ts(2)}\.replacecommit"):
        HudiTable.open(str(tmp_path)).load_view()


def test_an_incremental_clean_reads_the_commits_of_its_window_and_refuses_a_bad_one(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.completed_clean(ts(4), earliest_commit_to_retain=ts(2), last_completed_commit=ts(3))
    t.commit(ts(5), [FileSpec("b", _fid(2))])
    t.commit(ts(6), [FileSpec("a", _fid(4))])
    config = HoodieConfig.from_mapping(
        {"hoodie.cleaner.incremental.mode": "true", "hoodie.cleaner.commits.retained": "1"}, "t"
    ).clean
    now = datetime(2030, 1, 1, tzinfo=UTC)

    def snapshot() -> frozenset[str] | None:
        table = HudiTable.open(str(tmp_path))
        return load_clean_snapshot(table, table.load_timeline(), config, now, UTC).listed_partitions

    _corrupt_stat(tmp_path, ts(1))  # before the window [ts(2), ts(6)): not read
    assert snapshot() == {"a", "b", "c", "d"}
    _corrupt_stat(tmp_path, ts(5))  # in it
    with pytest.raises(CorruptTableError, match=rf"{ts(5)}\.commit.*numWrites"):
        snapshot()


def test_commit_summary_reuses_a_full_decode_already_cached(tmp_path: Path) -> None:
    _table(tmp_path)
    table = HudiTable.open(str(tmp_path))
    instant = Instant(ts(2), Action.REPLACE_COMMIT, State.COMPLETED)
    full = table.facts_reader.commit_metadata(instant)
    (tmp_path / LAYOUT_1.instant_path(instant)).write_bytes(b"{")  # not read again
    assert table.facts_reader.commit_summary(instant) == codecs.CommitSummary.of(full)


def test_summaries_of_a_table_share_their_equal_parts(tmp_path: Path) -> None:
    """The daemon keeps a summary of every completed commit of every table: commits that write the same
    partitions with the same extra metadata hold one copy of them, and unequal ones their own."""
    t = FixtureTable(tmp_path)
    for n in (1, 2, 3):
        t.commit(ts(n), [FileSpec("a", _fid(n)), FileSpec("b", _fid(n + 4))])
    t.commit(ts(4), [FileSpec("c", _fid(9))])
    t.commit(ts(5), [FileSpec("a", _fid(1)), FileSpec("b", _fid(5))])
    table = HudiTable.open(str(tmp_path))
    reader = table.facts_reader
    summaries = [reader.commit_summary(i) for i in table.load_timeline().completed()]

    assert [s.partitions_written for s in summaries] == [("a", "b")] * 3 + [("c",), ("a", "b")]
    first = summaries[0]
    for later in (summaries[1], summaries[2], summaries[4]):
        assert later.partitions_written is first.partitions_written
        assert later.extra_metadata is first.extra_metadata
        assert later.partition_to_replace_file_ids is first.partition_to_replace_file_ids
    assert summaries[3].partitions_written is not first.partitions_written
    assert summaries[3].extra_metadata is first.extra_metadata  # equal: the same schema
    # Equal summaries are one object (a summary names no instant).
    assert summaries[1] is first and summaries[2] is first and summaries[4] is first


def test_a_shared_summary_equals_the_decoded_one(tmp_path: Path) -> None:
    _table(tmp_path)
    table = HudiTable.open(str(tmp_path))
    for instant in table.load_timeline().completed():
        assert table.facts_reader.commit_summary(instant) == codecs.CommitSummary.of(
            table.facts_reader.commit_metadata(instant)
        )
