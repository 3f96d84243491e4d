"""Rollback plans and markers with paths outside the table: refused before the first delete.

A rollback plan may have been written by a Java writer or another process, and markers name the
files a rollback deletes: one test per field, on the pending-clustering fixture scenario, with
sentinels outside the table and in `.hoodie`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.errors import PathOutsideTableError
from service.rollback import rollback_instant
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.markers import MARKERS_TYPE_FILE, marker_dir
from service.table.timeline import create_instant_file, delete_instant_file
from tests.rollback.scenarios import RecordingLock, Scenario, T, pending_clustering_scenario
from tests.support.fixtures import ts

NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
R = ts(3)  # a pending rollback of T, written by "another process"


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    s = pending_clustering_scenario(tmp_path)
    (tmp_path / "victim.parquet").write_bytes(b"x")
    aux = s.base / ".hoodie" / ".aux"
    aux.mkdir(exist_ok=True)
    (aux / s.fixture.file_name("p1", "z-0", T)).write_bytes(b"x")  # named like a file T wrote
    return s


def _everything(s: Scenario) -> set[str]:
    """Every file and directory under the table's parent, timeline files apart (R's inflight is
    created before the files are deleted, as in Java)."""
    return {
        p.relative_to(s.base.parent).as_posix()
        for p in s.base.parent.rglob("*")
        if p.parent != s.base / ".hoodie" or p.is_dir()
    }


def _rollback_refused(s: Scenario, source: str, field: str, path: str) -> None:
    before = _everything(s)
    with pytest.raises(PathOutsideTableError) as caught:
        rollback_instant(s.table, T, RecordingLock(s.base), now=NOW, tz=UTC)
    error = caught.value
    assert (error.field, error.path) == (field, path)
    assert source in str(error) and field in str(error) and repr(path) in str(error)
    assert _everything(s) == before
    assert all(s.exists(p) for p in s.committed + s.outputs)
    assert (s.base / ".hoodie" / f"{T}.replacecommit.inflight").exists()  # T is still pending


def _write_rollback_plan(s: Scenario, *requests: codecs.RollbackRequest) -> None:
    """`R.rollback.requested` rolling back T with these requests, as a hostile store might hold it."""
    plan = codecs.RollbackPlan(
        instant_to_rollback=codecs.InstantInfo(commit_time=T, action="replacecommit"),
        rollback_requests=requests,
        version=1,
    )
    create_instant_file(
        s.table.storage, s.table.layout, Instant(R, Action.ROLLBACK, State.REQUESTED), codecs.encode(plan)
    )


def _store_rollback_plan(s: Scenario, partition: str, files: list[str]) -> None:
    _write_rollback_plan(
        s,
        codecs.RollbackRequest(
            partition_path="p1",
            file_id="n1-0",
            latest_base_instant=T,
            files_to_be_deleted=(s.table.storage.qualify(s.outputs[0]),),
            log_blocks_to_be_deleted={},
        ),
        codecs.RollbackRequest(
            partition_path=partition,
            file_id="",
            latest_base_instant="",
            files_to_be_deleted=tuple(files),
            log_blocks_to_be_deleted={},
        ),
    )


@pytest.mark.parametrize("target", ["outside", "dotdot", "other-partition", "timeline", "base-path"])
def test_rollback_plan_files_to_be_deleted_are_confined(scenario: Scenario, target: str) -> None:
    s = scenario
    base = s.base
    committed_p2 = s.committed[2]  # p2/<c-0 of ts(1)>: a committed file of another partition
    path = {
        "outside": f"file:{base.parent}/victim.parquet",
        "dotdot": f"file:{base}/p1/../{committed_p2}",
        "other-partition": f"file:{base}/{committed_p2}",
        "timeline": f"file:{base}/.hoodie/.aux/{s.fixture.file_name('p1', 'z-0', T)}",
        "base-path": f"file:{base}",
    }[target]
    _store_rollback_plan(s, "p1", [path])
    _rollback_refused(s, f"{R}.rollback.requested", "rollbackRequests[].filesToBeDeleted", path)


@pytest.mark.parametrize("partition", ["../t", ".hoodie", "", "p1/../p2"])
def test_rollback_plan_partition_path_is_confined(scenario: Scenario, partition: str) -> None:
    s = scenario
    _store_rollback_plan(s, partition, [s.table.storage.qualify(s.committed[2])])
    _rollback_refused(s, f"{R}.rollback.requested", "rollbackRequests[].partitionPath", partition)


def test_direct_marker_naming_a_timeline_file_is_refused(scenario: Scenario) -> None:
    s = scenario
    data = f".hoodie/.aux/{s.fixture.file_name('p1', 'z-0', T)}"
    marker = s.base / marker_dir(T) / f"{data}.marker.CREATE"
    marker.parent.mkdir(parents=True)
    marker.write_bytes(b"")
    _rollback_refused(s, f"{marker_dir(T)}/{data}.marker.CREATE", "marker name", data)
    assert not [n for n in s.timeline_names() if ".rollback" in n]  # refused while planning


@pytest.mark.parametrize(
    "line", ["P1_OUTPUT/../../AUX", ".hoodie/.aux/AUX", "/p1/AUX", "p1//AUX", "p1/./AUX"]
)
def test_timeline_server_marker_line_is_confined(scenario: Scenario, line: str) -> None:
    s = scenario
    aux_name = s.fixture.file_name("p1", "z-0", T)
    data = line.replace("P1_OUTPUT", s.outputs[0]).replace("AUX", aux_name)
    folder = s.base / marker_dir(T)
    (folder / MARKERS_TYPE_FILE).write_text("TIMELINE_SERVER_BASED")
    (folder / "MARKERS0").write_text(f"{s.outputs[0]}.marker.CREATE\n{data}.marker.CREATE\n")
    _rollback_refused(s, f"{marker_dir(T)}/MARKERS0", "MARKERS0 line", data)


def test_clustering_plan_partition_is_confined_before_listing(tmp_path: Path) -> None:
    """Without markers, rollback lists the partitions the plan names: `../x` must not be listed."""
    s = pending_clustering_scenario(tmp_path, markers=False)
    storage = s.table.storage
    requested = Instant(T, Action.REPLACE_COMMIT, State.REQUESTED)
    plan = codecs.decode(
        codecs.RequestedReplaceMetadata, storage.read_bytes(f".hoodie/{T}.replacecommit.requested"), "p"
    )
    assert plan.clustering_plan is not None
    group = plan.clustering_plan.input_groups[0]  # type: ignore[index]
    hostile = group.model_copy(
        update={
            "slices": tuple(sl.model_copy(update={"partition_path": "../x"}) for sl in group.slices or ())
        }
    )
    hostile_plan = plan.model_copy(
        update={"clustering_plan": plan.clustering_plan.model_copy(update={"input_groups": (hostile,)})}
    )
    delete_instant_file(storage, LAYOUT_1, requested)
    create_instant_file(storage, LAYOUT_1, requested, codecs.encode(hostile_plan))
    _rollback_refused(s, f"{T}.replacecommit.requested", "inputGroups[].slices[].partitionPath", "../x")


@pytest.mark.parametrize(("key", "reported"), [("outside", "outside"), ("..", "p1/.."), ("dotdot", "dotdot")])
def test_rollback_plan_log_blocks_to_be_deleted_are_confined(
    scenario: Scenario, key: str, reported: str
) -> None:
    """A log request's keys (Hudi 0.15: a log file name; older plans: a full path) must name a file
    of the request's partition, or no command block is written anywhere."""
    s = scenario
    paths = {
        "outside": f"file:{s.base.parent}/.x-0_{T}.log.1_0-0-0",
        "dotdot": f"file:{s.base}/p1/../p2/.x-0_{T}.log.1_0-0-0",
    }
    raw = paths.get(key, key)
    _write_rollback_plan(
        s,
        codecs.RollbackRequest(
            partition_path="p1",
            file_id="x-0",
            latest_base_instant=T,
            files_to_be_deleted=(),
            log_blocks_to_be_deleted={raw: 1},
        ),
    )
    _rollback_refused(
        s, f"{R}.rollback.requested", "rollbackRequests[].logBlocksToBeDeleted", paths.get(reported, reported)
    )
