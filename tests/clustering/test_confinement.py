"""Clustering plans with slice paths outside the table: refused before anything is read, written or
rolled back (one test per slice field), on fixture tables in Hudi's format; no Spark is reached."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.clustering.orchestrator import execute_clustering
from service.clustering.records import read_clustering_plan
from service.config.hoodie import HoodieConfig
from service.errors import PathOutsideTableError
from service.executor.clustering_job import GroupJob
from service.lock import InProcessTableLock
from service.table import codecs
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.markers import create_marker
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, delete_instant_file
from tests.support.fixtures import FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)
T = ts(3)  # the hostile pending clustering


@pytest.fixture
def fixture(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("p1", "a-0"), FileSpec("p1", "b-0"), FileSpec("p2", "c-0")])
    t.pending_clustering(T, [("p1", "a-0"), ("p1", "b-0")])
    (tmp_path / "victim.parquet").write_bytes(b"x")
    return t


def _rewrite_first_slice(t: FixtureTable, every_slice: bool = False, **update: Any) -> str:
    """Replace the first slice's fields (or every slice's) in `T.replacecommit.requested`; returns
    the plan file name."""
    storage = t.storage
    requested = Instant(T, Action.REPLACE_COMMIT, State.REQUESTED)
    meta = codecs.decode(
        codecs.RequestedReplaceMetadata, storage.read_bytes(f".hoodie/{T}.replacecommit.requested"), "p"
    )
    plan = meta.clustering_plan
    assert plan is not None and plan.input_groups
    group = plan.input_groups[0]
    slices = list(group.slices or ())
    for i in range(len(slices) if every_slice else 1):
        slices[i] = slices[i].model_copy(update=update)
    hostile = meta.model_copy(
        update={
            "clustering_plan": plan.model_copy(
                update={"input_groups": (group.model_copy(update={"slices": tuple(slices)}),)}
            )
        }
    )
    delete_instant_file(storage, LAYOUT_1, requested)
    create_instant_file(storage, LAYOUT_1, requested, codecs.encode(hostile))
    return requested.file_name


def _everything(t: FixtureTable) -> set[str]:
    return {p.relative_to(t.base.parent).as_posix() for p in t.base.parent.rglob("*")}


def _never_runs(job: GroupJob) -> list[BaseFileWriteResult]:
    raise AssertionError("a refused plan must not reach Spark")


def _execute_refused(t: FixtureTable, source: str, field: str, path: str) -> None:
    before = _everything(t)
    table = HudiTable.open(str(t.base))
    config = HoodieConfig.from_mapping({}, table.name)
    lock = InProcessTableLock(table.name, key=str(t.base), default_timeout_s=5)
    with pytest.raises(PathOutsideTableError) as caught:
        execute_clustering(table, T, config, _never_runs, lock, zone=UTC, now=lambda: NOW)
    error = caught.value
    assert (error.field, error.path) == (field, path)
    assert source in str(error) and field in str(error) and repr(path) in str(error)
    assert _everything(t) == before  # no inflight written, no rollback, nothing deleted


@pytest.mark.parametrize(
    "target", ["outside", "dotdot", "other-partition", "timeline", "base-path", "bucket"]
)
def test_slice_data_file_path_is_confined(fixture: FixtureTable, target: str) -> None:
    t = fixture
    base = t.base
    c_file = f"p2/{t.file_name('p2', 'c-0', ts(1))}"
    path = {
        "outside": f"file:{base.parent}/victim.parquet",
        "dotdot": f"file:{base}/p1/../{c_file}",
        "other-partition": f"file:{base}/{c_file}",
        "timeline": f"file:{base}/.hoodie/{t.file_name('p1', 'a-0', ts(1))}",
        "base-path": f"file:{base}",
        "bucket": f"s3a://bucket{base}/p1/{t.file_name('p1', 'a-0', ts(1))}",
    }[target]
    source = _rewrite_first_slice(t, data_file_path=path)
    _execute_refused(t, source, "inputGroups[].slices[].dataFilePath", path)


@pytest.mark.parametrize("partition", ["../t", "", ".hoodie", "p1/"])
def test_slice_partition_path_is_confined(fixture: FixtureTable, partition: str) -> None:
    # Every slice: one group in one partition, so only the rule stands between it and an output
    # file written to `<base>/../t/`.
    source = _rewrite_first_slice(fixture, every_slice=True, partition_path=partition)
    _execute_refused(fixture, source, "inputGroups[].slices[].partitionPath", partition)


def test_slice_file_id_must_be_its_base_files(fixture: FixtureTable) -> None:
    """`partitionToReplaceFileIds` is written from `fileId`: it must name the file group read."""
    source = _rewrite_first_slice(fixture, file_id="c-0")
    _execute_refused(fixture, source, "inputGroups[].slices[].fileId", "c-0")


def test_slice_delta_file_paths_are_confined(fixture: FixtureTable) -> None:
    path = f"file:{fixture.base.parent}/victim.parquet"
    source = _rewrite_first_slice(fixture, delta_file_paths=(path,))
    _execute_refused(fixture, source, "inputGroups[].slices[].deltaFilePaths", path)


def test_inflight_hostile_plan_is_refused_before_its_attempt_is_rolled_back(fixture: FixtureTable) -> None:
    t = fixture
    create_instant_file(t.storage, LAYOUT_1, Instant(T, Action.REPLACE_COMMIT, State.INFLIGHT))
    output = f"p1/{t.file_name('p1', 'n1-0', T)}"
    create_marker(t.storage, T, output)
    t.write_base_file(FileSpec("p1", "n1-0"), T)
    source = _rewrite_first_slice(t, partition_path="../t")
    _execute_refused(t, source, "inputGroups[].slices[].partitionPath", "../t")
    assert (t.base / output).exists()


def test_dry_run_rendering_refuses_a_hostile_plan(
    fixture: FixtureTable, caplog: pytest.LogCaptureFixture
) -> None:
    """The plan is decoded and confined in one step, so `execute --dry-run` (which only prints it)
    refuses the same plans execution refuses, a `fileId` naming another file group's included."""
    t = fixture
    _rewrite_first_slice(t, file_id="c-0")
    before = _everything(t)
    args = ["cluster", "--base-path", str(t.base), "--mode", "execute", "--dry-run", "--timezone", "UTC"]
    assert main([*args, "--instant-time", T]) == 1
    assert "inputGroups[].slices[].fileId" in caplog.text and "'c-0'" in caplog.text
    assert _everything(t) == before


def test_decoded_plan_holds_confined_base_relative_paths(fixture: FixtureTable) -> None:
    t = fixture
    table = HudiTable.open(str(t.base))
    instant = table.load_timeline().find(T, Action.REPLACE_COMMIT)
    assert instant is not None
    plan = read_clustering_plan(table, instant)
    assert [(s.partition_path, s.file_id, s.base_file_path) for g in plan.groups for s in g.slices] == [
        ("p1", "a-0", f"p1/{t.file_name('p1', 'a-0', ts(1))}"),
        ("p1", "b-0", f"p1/{t.file_name('p1', 'b-0', ts(1))}"),
    ]
    hostile = f"file:{t.base}/p2/{t.file_name('p2', 'c-0', ts(1))}"
    _rewrite_first_slice(t, data_file_path=hostile)
    with pytest.raises(PathOutsideTableError, match="not directly in partition 'p1'"):
        read_clustering_plan(HudiTable.open(str(t.base)), instant)
