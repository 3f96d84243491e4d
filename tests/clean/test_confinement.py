"""Stored clean plans with paths outside the table: refused before anything is listed or deleted.

One test per field of HoodieCleanerPlan that holds a path (`partitionsToBeDeleted`,
`filePathsToBeDeletedPerPartition` and its partition keys, v1 `filesToBeDeletedPerPartition`), on
fixture tables in Hudi's format; the sentinels outside the table and every file of it must survive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from service.errors import PathOutsideTableError
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.timeline import create_instant_file
from tests.clean.helpers import fid, make_cleaner
from tests.support.fixtures import FileSpec, FixtureTable, ts

PLAN = ts(6)  # the hostile pending clean


@pytest.fixture
def table(tmp_path: Path) -> FixtureTable:
    """Table `t` (partitions a, b; three versions of a group in each) and sentinels beside it."""
    t = FixtureTable(tmp_path / "t")
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    (tmp_path / "x").mkdir()  # an empty directory outside the table (what `../x` names)
    (tmp_path / "victim.parquet").write_bytes(b"x")
    # A data-file-named sentinel inside `.hoodie`, where a plan must never reach.
    (t.base / ".hoodie" / ".aux").mkdir(exist_ok=True)
    (t.base / ".hoodie" / ".aux" / t.file_name("a", fid(7), ts(1))).write_bytes(b"x")
    return t


def _everything(t: FixtureTable) -> set[str]:
    """Every file and directory under the table's parent (the table, .hoodie and the sentinels)."""
    return {p.relative_to(t.base.parent).as_posix() for p in t.base.parent.rglob("*")}


def _old_version(t: FixtureTable) -> str:
    return t.storage.qualify(f"a/{t.file_name('a', fid(1), ts(1))}")


def _store_plan(
    t: FixtureTable,
    files: Mapping[str, Sequence[str]] | None = None,
    deleted_partitions: Sequence[str] = (),
    v1_names: Mapping[str, Sequence[str]] | None = None,
) -> None:
    if v1_names is not None:
        plan = codecs.CleanerPlan(
            earliest_instant_to_retain=None,
            last_completed_commit_timestamp=ts(3),
            policy="KEEP_LATEST_COMMITS",
            files_to_be_deleted_per_partition={p: tuple(n) for p, n in v1_names.items()},
            version=1,
        )
        create_instant_file(
            t.storage, LAYOUT_1, Instant(PLAN, Action.CLEAN, State.REQUESTED), codecs.encode(plan)
        )
    else:
        paths = files if files is not None else {"a": [_old_version(t)]}
        t.requested_clean(
            PLAN, paths, last_completed_commit=ts(3), partitions_to_be_deleted=deleted_partitions
        )


def _run_refused(t: FixtureTable, field: str, path: str) -> PathOutsideTableError:
    before = _everything(t)
    with pytest.raises(PathOutsideTableError) as caught:
        make_cleaner(t.base, {"hoodie.cleaner.commits.retained": 1}).run()
    error = caught.value
    assert (error.field, error.path, error.table) == (field, path, "fixture")
    message = str(error)
    assert f"{PLAN}.clean.requested" in message and field in message and repr(path) in message
    assert _everything(t) == before  # nothing deleted, nothing written (not even the inflight file)
    return error


@pytest.mark.parametrize(
    "partition", ["../x", "a/../../x", "/abs/x", ".hoodie", "a/./b", "a//b", "a\\..\\..\\x"]
)
def test_partitions_to_be_deleted_outside_the_table_are_refused(table: FixtureTable, partition: str) -> None:
    _store_plan(table, deleted_partitions=[partition])
    _run_refused(table, "partitionsToBeDeleted", partition)


def test_partitions_to_be_deleted_empty_path_is_refused_on_a_partitioned_table(table: FixtureTable) -> None:
    """HUDI-6675: `""` is the base path; it is never a directory to delete."""
    _store_plan(table, deleted_partitions=[""])
    error = _run_refused(table, "partitionsToBeDeleted", "")
    assert "empty partition path" in error.reason


def test_partitions_to_be_deleted_must_be_a_partition_of_the_table(table: FixtureTable) -> None:
    (table.base / "notes").mkdir()
    (table.base / "notes" / "README").write_text("not a partition: no partition metafile")
    _store_plan(table, deleted_partitions=["notes"])
    error = _run_refused(table, "partitionsToBeDeleted", "notes")
    assert "not a partition of the table" in error.reason


@pytest.mark.parametrize(
    "target",
    ["outside", "dotdot-inside", "timeline", "base-path", "other-scheme", "other-partition-dir", "nul"],
)
def test_file_paths_to_be_deleted_outside_the_table_are_refused(table: FixtureTable, target: str) -> None:
    t = table
    base = t.base
    old_b = t.file_name("b", fid(2), ts(1))
    path = {
        "outside": f"file:{base.parent}/victim.parquet",
        "dotdot-inside": f"file:{base}/a/../b/{old_b}",
        "timeline": f"file:{base}/.hoodie/.aux/{t.file_name('a', fid(7), ts(1))}",
        "base-path": f"file:{base}",
        "other-scheme": f"s3a://bucket{base}/a/{t.file_name('a', fid(1), ts(2))}",
        "other-partition-dir": f"file:{base}/b/{old_b}",
        "nul": f"file:{base}/a/{t.file_name('a', fid(1), ts(2))}\x00",
    }[target]
    _store_plan(t, files={"a": [_old_version(t), path]})
    _run_refused(t, "filePathsToBeDeletedPerPartition", path)


@pytest.mark.parametrize("partition", ["../x", ".hoodie/.aux", ""])
def test_file_paths_to_be_deleted_partition_keys_are_confined(table: FixtureTable, partition: str) -> None:
    t = table
    name = t.file_name("a", fid(7), ts(1))
    path = f"file:{t.base}/{partition}/{name}" if partition else f"file:{t.base}/{name}"
    _store_plan(t, files={partition: [path]})
    _run_refused(t, "filePathsToBeDeletedPerPartition", partition)


@pytest.mark.parametrize(
    ("partition", "name", "refused"),
    [
        (".hoodie/.aux", "TIMELINE", ".hoodie/.aux"),  # the partition key itself
        ("a", "../../x/f_0-0-0_1.parquet", "a/../../x/f_0-0-0_1.parquet"),
        ("a", "../b/NAME_B", "a/../b/NAME_B"),
        ("a", "sub/NAME_B", "a/sub/NAME_B"),  # not directly in its partition
        ("../x", "NAME_B", "../x"),
    ],
)
def test_version_1_files_to_be_deleted_are_confined(
    table: FixtureTable, partition: str, name: str, refused: str
) -> None:
    t = table
    names = {
        "TIMELINE": t.file_name("a", fid(7), ts(1)),
        "NAME_B": t.file_name("b", fid(2), ts(1)),
    }
    for key, value in names.items():
        name = name.replace(key, value)
        refused = refused.replace(key, value)
    _store_plan(t, v1_names={partition: [name]})
    _run_refused(t, "filesToBeDeletedPerPartition", refused)


def test_confined_plan_still_cleans(table: FixtureTable) -> None:
    """The rule accepts what Java writes: qualified paths in their partitions, a real partition to delete."""
    t = table
    _store_plan(t)
    first, *_ = make_cleaner(t.base, {"hoodie.cleaner.commits.retained": 1}).run().cleans
    assert first.instant_time == PLAN and first.files_deleted == 1
    assert not (t.base / "a" / t.file_name("a", fid(1), ts(1))).exists()


def test_incremental_clean_does_not_list_a_partition_outside_the_table(tmp_path: Path) -> None:
    """Incremental cleaning lists the partitions commits name: a commit naming `../x` (a directory
    with a partition metafile and old file versions, outside the table) is refused before listing."""
    t = FixtureTable(tmp_path / "t")
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    t.completed_clean(ts(4), earliest_commit_to_retain=ts(2), last_completed_commit=ts(3))
    for i in (5, 6, 7):
        t.commit(ts(i), [FileSpec("../x", fid(5))])  # the fixture writes them to <tmp>/x
    outside = {p.name for p in (tmp_path / "x").iterdir()}
    before = _everything(t)
    with pytest.raises(PathOutsideTableError) as caught:
        make_cleaner(t.base, {"hoodie.cleaner.commits.retained": 1}).run()
    assert (caught.value.field, caught.value.path) == ("partitionToWriteStats", "../x")
    assert f"{ts(5)}.commit" in str(caught.value)
    assert _everything(t) == before and {p.name for p in (tmp_path / "x").iterdir()} == outside
