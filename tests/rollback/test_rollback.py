"""Rollback of a failed or pending instant on fixture tables: files, timeline, crash-and-rerun."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import service.rollback.orchestrator as rollback_module
from service.errors import (
    CorruptTableError,
    HudiTableServiceError,
    InstantOwnedError,
    NeedsConfigurationError,
    PlanRefusedError,
    UnsupportedTableError,
)
from service.lock import InProcessTableLock
from service.rollback import RollbackOutcome, rollback_instant
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.markers import IOType, create_marker, marker_dir_exists
from service.table.properties import store_table_config
from service.table.table import HudiTable
from service.table.timeline import create_instant_file
from tests.rollback.scenarios import RecordingLock, Scenario, T, pending_clustering_scenario
from tests.support.fixtures import FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def _rollback(s: Scenario, lock: Any = None, **kwargs: Any) -> RollbackOutcome:
    return rollback_instant(s.table, T, lock or RecordingLock(s.base), now=NOW, tz=UTC, **kwargs)


def _rollback_instants(s: Scenario) -> list[str]:
    return sorted({n.split(".")[0] for n in s.timeline_names() if ".rollback" in n})


def test_rollback_deletes_marked_files_and_pending_instant(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    before = s.table.load_view()
    assert set(before.uncommitted_files) == set(s.outputs)

    outcome = _rollback(s)

    assert not any(s.exists(p) for p in s.outputs)
    assert all(s.exists(p) for p in s.committed)
    r = outcome.rollback_time
    assert r is not None and r > T
    names = s.timeline_names()
    assert not {n for n in names if n.startswith(T)}
    assert {f"{r}.rollback.requested", f"{r}.rollback.inflight", f"{r}.rollback"} <= names
    assert (s.base / ".hoodie" / f"{r}.rollback.inflight").stat().st_size == 0
    assert not marker_dir_exists(s.table.storage, T)

    after = s.table.load_view()
    assert after.uncommitted_files == ()
    assert after.live_file_groups == before.live_file_groups
    assert dict(after.facts.pending_clustering) == {}


def test_rollback_plan_and_metadata_are_javas(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    outcome = _rollback(s)
    r = outcome.rollback_time
    storage = s.table.storage
    plan = codecs.decode(
        codecs.RollbackPlan, (s.base / ".hoodie" / f"{r}.rollback.requested").read_bytes(), "plan"
    )
    assert plan.instant_to_rollback == codecs.InstantInfo(commit_time=T, action="replacecommit")
    assert plan.version == 1
    assert sorted(plan.rollback_requests or (), key=lambda q: q.file_id or "") == [
        codecs.RollbackRequest(
            partition_path="p1",
            file_id=name,
            latest_base_instant=T,
            files_to_be_deleted=(storage.qualify(path),),
            log_blocks_to_be_deleted={},
        )
        for name, path in zip(("n1-0", "n2-0"), s.outputs, strict=True)
    ]
    metadata = codecs.decode(
        codecs.RollbackMetadata, (s.base / ".hoodie" / f"{r}.rollback").read_bytes(), "md"
    )
    assert metadata == outcome.metadata
    assert metadata.start_rollback_time == r
    assert metadata.commits_rollback == (T,)
    assert metadata.instants_rollback == (codecs.InstantInfo(commit_time=T, action="replacecommit"),)
    assert metadata.total_files_deleted == 2
    assert metadata.version == 1
    assert metadata.time_taken_in_millis >= 0
    assert list(metadata.partition_metadata) == ["p1"]
    p1 = metadata.partition_metadata["p1"]
    assert sorted(p1.success_delete_files) == sorted(storage.qualify(p) for p in s.outputs)
    assert p1.failed_delete_files == ()
    assert (p1.rollback_log_files, p1.log_files_from_failed_commit) == ({}, {})


def test_rollback_takes_lock_only_for_instant_files(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    lock = RecordingLock(s.base)
    outcome = _rollback(s, lock)
    r = outcome.rollback_time
    # Two short holds: R goes requested -> inflight in the first, completed in the second; the data
    # files are deleted between them, without the lock.
    assert len(lock.entered) == 2
    assert not {n for n in lock.entered[0] if n.startswith(str(r))}
    assert {f"{r}.rollback.requested", f"{r}.rollback.inflight"} <= lock.exited[0]
    assert not any(s.exists(p) for p in s.outputs)
    assert {
        f"{T}.replacecommit.requested",
        f"{T}.replacecommit.inflight",
        f"{r}.rollback.inflight",
    } <= lock.entered[1]
    assert f"{r}.rollback" not in lock.entered[1]
    assert f"{r}.rollback" in lock.exited[1]
    assert not {n for n in lock.exited[1] if n.startswith(T)}


def test_rollback_with_in_process_table_lock(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    lock = InProcessTableLock("t", key=str(tmp_path), default_timeout_s=5)
    outcome = _rollback(s, lock)
    assert outcome.metadata is not None and outcome.metadata.total_files_deleted == 2
    assert not lock.is_held


def test_rollback_lists_files_of_instant_when_markers_are_missing(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path, markers=False)
    # A file of T outside the plan's partitions is not one of T's outputs (listing is limited to them).
    stray = s.fixture.write_base_file(FileSpec("p2", "elsewhere-0"), T).path or ""
    outcome = _rollback(s)
    assert not any(s.exists(p) for p in s.outputs)
    assert all(s.exists(p) for p in s.committed)
    assert s.exists(stray)
    plan = codecs.decode(
        codecs.RollbackPlan,
        (s.base / ".hoodie" / f"{outcome.rollback_time}.rollback.requested").read_bytes(),
        "p",
    )
    assert plan.rollback_requests == (
        codecs.RollbackRequest(
            partition_path="p1",
            file_id="",
            latest_base_instant="",
            files_to_be_deleted=tuple(sorted(s.table.storage.qualify(p) for p in s.outputs)),
            log_blocks_to_be_deleted={},
        ),
    )


def test_rollback_failed_commit_without_markers_lists_every_partition(tmp_path: Path) -> None:
    fixture = FixtureTable(tmp_path / "t")
    fixture.commit(ts(1), [FileSpec("p1", "a-0")])
    failed = fixture.commit(ts(2), [FileSpec("p1", "a-0"), FileSpec("p2", "x-0")], state=State.INFLIGHT)
    table = HudiTable.open(str(fixture.base))
    outcome = rollback_instant(table, ts(2), RecordingLock(fixture.base), now=NOW, tz=UTC)
    assert not any((fixture.base / (st.path or "")).exists() for st in failed)
    assert (fixture.base / "p1" / fixture.file_name("p1", "a-0", ts(1))).exists()
    names = {p.name for p in (fixture.base / ".hoodie").iterdir()}
    assert f"{ts(2)}.inflight" not in names and f"{ts(2)}.commit.requested" not in names
    assert outcome.metadata is not None
    assert outcome.metadata.instants_rollback == (codecs.InstantInfo(commit_time=ts(2), action="commit"),)
    assert sorted(outcome.metadata.partition_metadata) == ["p1", "p2"]


def test_rollback_requested_instant_has_empty_plan(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path, inflight=False)
    outcome = _rollback(s)
    assert outcome.metadata is not None
    assert outcome.metadata.total_files_deleted == 0
    assert outcome.metadata.partition_metadata == {}
    plan = codecs.decode(
        codecs.RollbackPlan,
        (s.base / ".hoodie" / f"{outcome.rollback_time}.rollback.requested").read_bytes(),
        "p",
    )
    assert plan.rollback_requests == ()
    assert f"{T}.replacecommit.requested" not in s.timeline_names()


def test_rollback_keep_requested_undoes_attempt_but_keeps_plan(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    outcome = _rollback(s, keep_requested=True)
    assert not any(s.exists(p) for p in s.outputs)
    names = s.timeline_names()
    assert f"{T}.replacecommit.requested" in names
    assert f"{T}.replacecommit.inflight" not in names
    assert f"{outcome.rollback_time}.rollback" in names
    view = s.table.load_view()
    assert set(view.facts.pending_clustering) == {("p1", "a-0"), ("p1", "b-0")}
    # Nothing was attempted on a requested plan: no rollback instant at all.
    again = _rollback(s, keep_requested=True)
    assert (again.rollback_time, again.metadata) == (None, None)
    assert _rollback_instants(s) == [outcome.rollback_time]


def test_rollback_rerun_after_crash_before_deleting_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = pending_clustering_scenario(tmp_path)

    def crash(*args: object) -> None:
        raise RuntimeError("killed")

    with monkeypatch.context() as m:
        m.setattr(rollback_module, "execute_rollback_plan", crash)
        with pytest.raises(RuntimeError):
            _rollback(s)
    pending = _rollback_instants(s)
    assert len(pending) == 1
    assert all(s.exists(p) for p in s.outputs)

    outcome = _rollback(s)
    assert outcome.resumed
    assert _rollback_instants(s) == pending == [outcome.rollback_time]
    assert not any(s.exists(p) for p in s.outputs)
    assert outcome.metadata is not None and outcome.metadata.total_files_deleted == 2


def test_rollback_rerun_after_crash_before_lock_counts_gone_files_as_deleted(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    with pytest.raises(RuntimeError, match="lock service down"):
        _rollback(s, RecordingLock(s.base, fail_from_enter=1))  # down once the files are deleted
    assert not any(s.exists(p) for p in s.outputs)
    assert f"{T}.replacecommit.inflight" in s.timeline_names()

    outcome = _rollback(s)
    assert outcome.resumed
    assert outcome.metadata is not None
    assert outcome.metadata.total_files_deleted == 2
    assert len(_rollback_instants(s)) == 1
    assert not {n for n in s.timeline_names() if n.startswith(T)}


def test_rollback_rerun_after_crash_between_instant_deletes_and_completion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = pending_clustering_scenario(tmp_path)
    real_complete = rollback_module.complete_instant

    def complete(storage: Any, layout: Any, timeline: Any, instant: Instant, *args: Any) -> Instant:
        if instant.action is Action.ROLLBACK:
            raise RuntimeError("killed before R.rollback")
        return real_complete(storage, layout, timeline, instant, *args)

    with monkeypatch.context() as m:
        m.setattr(rollback_module, "complete_instant", complete)
        with pytest.raises(RuntimeError):
            _rollback(s)
    # T is gone from the timeline, R is pending: the rerun must find R through its plan.
    assert not {n for n in s.timeline_names() if n.startswith(T)}
    outcome = _rollback(s)
    assert outcome.resumed
    assert len(_rollback_instants(s)) == 1
    assert f"{outcome.rollback_time}.rollback" in s.timeline_names()


def test_rollback_rerun_after_completion_reports_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = pending_clustering_scenario(tmp_path)

    def crash(*args: object) -> None:
        raise RuntimeError("killed before markers were removed")

    with monkeypatch.context() as m:
        m.setattr(rollback_module, "delete_marker_dir", crash)
        with pytest.raises(RuntimeError):
            _rollback(s)
    assert marker_dir_exists(s.table.storage, T)
    first = _rollback_instants(s)
    outcome = _rollback(s)
    assert outcome.already_rolled_back
    assert outcome.rollback_time == first[0]
    assert outcome.metadata is not None and outcome.metadata.total_files_deleted == 2
    assert not marker_dir_exists(s.table.storage, T)
    assert _rollback_instants(s) == first


def test_rollback_refuses_completed_and_unknown_instants(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    lock = RecordingLock(s.base)
    with pytest.raises(PlanRefusedError, match="completed"):
        rollback_instant(s.table, ts(1), lock, now=NOW, tz=UTC)
    with pytest.raises(HudiTableServiceError, match="no pending instant 20990101"):
        rollback_instant(s.table, "20990101000000000", lock, now=NOW, tz=UTC)
    assert lock.entered == []
    assert _rollback_instants(s) == []


def test_rollback_never_unschedules_a_compaction(tmp_path: Path) -> None:
    """A compaction is rolled back to its plan only (`rollbackInflightCompaction`): deleting the plan
    would orphan the log files writers appended to its slice."""
    s = pending_clustering_scenario(tmp_path)
    create_instant_file(
        s.table.storage, s.table.layout, Instant(ts(5), Action.COMPACTION, State.REQUESTED), b""
    )
    with pytest.raises(UnsupportedTableError, match="never unscheduled"):
        rollback_instant(s.table, ts(5), RecordingLock(s.base), now=NOW, tz=UTC)
    assert s.table.storage.exists(f".hoodie/{ts(5)}.compaction.requested")


def test_rollback_refuses_marker_of_another_instant(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    create_marker(s.table.storage, T, s.committed[0])  # names a file of ts(1)
    with pytest.raises(CorruptTableError, match=f"names a file of instant {ts(1)}"):
        _rollback(s)
    assert all(s.exists(p) for p in s.committed + s.outputs)
    assert _rollback_instants(s) == []


def test_rollback_refuses_log_file_markers_of_a_replacecommit(tmp_path: Path) -> None:
    """Only a deltacommit appends to log files: an APPEND marker of a clustering is refused."""
    s = pending_clustering_scenario(tmp_path)
    create_marker(s.table.storage, T, f"p1/.n1-0_{T}.log.1_0-1-1", IOType.APPEND)
    with pytest.raises(CorruptTableError, match="APPEND marker"):
        _rollback(s)
    assert _rollback_instants(s) == []


def test_rollback_removes_checksum_siblings_and_heartbeat(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    crc = s.base / "p1" / f".{Path(s.outputs[0]).name}.crc"
    crc.write_bytes(b"crc")
    heartbeat = s.base / ".hoodie/.heartbeat" / T
    heartbeat.parent.mkdir(parents=True)
    heartbeat.write_bytes(b"")
    expired = (NOW - timedelta(minutes=10)).timestamp()  # the dead writer's last beat
    os.utime(heartbeat, (expired, expired))
    _rollback(s)
    assert not crc.exists()
    assert not heartbeat.exists()


def test_rollback_refuses_an_instant_whose_heartbeat_is_alive(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    heartbeat = s.base / ".hoodie/.heartbeat" / T
    heartbeat.parent.mkdir(parents=True)
    heartbeat.write_bytes(b"")
    alive = (NOW - timedelta(seconds=30)).timestamp()  # within 60 s x 2 misses
    os.utime(heartbeat, (alive, alive))
    with pytest.raises(InstantOwnedError, match=rf"not rolling back replacecommit {T} .*30\.0 s old"):
        _rollback(s)
    assert all(s.exists(p) for p in s.outputs)  # nothing deleted
    assert f"{T}.replacecommit.inflight" in s.timeline_names()
    assert not _rollback_instants(s)


def test_rollback_local_timezone_table_needs_writers_zone(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    config = s.table.config.with_updates({"hoodie.table.timeline.timezone": "LOCAL"})
    store_table_config(s.table.storage, config)
    table = HudiTable.open(str(s.base))
    with pytest.raises(NeedsConfigurationError, match=r"LOCAL .* no zone is known: set --timezone"):
        rollback_instant(table, T, RecordingLock(s.base), now=NOW)
    assert rollback_instant(table, T, RecordingLock(s.base), now=NOW, tz=UTC).rollback_time is not None


def test_rollback_instant_time_is_after_every_instant(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    s.fixture.commit("20300101000000000", [FileSpec("p2", "late-0")])
    outcome = _rollback(s)
    assert outcome.rollback_time == "20300101000000001"
