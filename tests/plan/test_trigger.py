"""When clustering is scheduled: commits since the last clustering, and one pending plan at a time."""

from __future__ import annotations

import json
from pathlib import Path

from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from service.table.timeline import create_instant_file
from strategies.clustering import (
    ClusteringStep,
    TriggerDecision,
    TriggerMode,
    clustering_due,
    last_clustering_instant,
)
from tests.plan.snapshots import config_of
from tests.support.fixtures import SCHEMA, FileSpec, FixtureTable, ts

ASYNC_MAX = "hoodie.clustering.async.max.commits"
INLINE_MAX = "hoodie.clustering.inline.max.commits"


def _table(tmp_path: Path, commits: int) -> FixtureTable:
    fixture = FixtureTable(tmp_path / "t")
    for n in range(1, commits + 1):
        fixture.commit(ts(n), [FileSpec("p1", f"f{n}-0")])
    return fixture


def _complete_clustering(fixture: FixtureTable, instant_time: str, slices: list[tuple[str, str]]) -> None:
    fixture.pending_clustering(instant_time, slices, inflight=True)
    meta = codecs.ReplaceCommitMetadata(
        partition_to_write_stats={},
        extra_metadata={"schema": json.dumps(SCHEMA)},
        operation_type=codecs.WriteOperationType.CLUSTER,
        partition_to_replace_file_ids={"p1": tuple(fid for _, fid in slices)},
    )
    create_instant_file(
        fixture.storage, Instant(instant_time, Action.REPLACE_COMMIT, State.COMPLETED), codecs.encode(meta)
    )


def _decide(
    fixture: FixtureTable, mode: TriggerMode = TriggerMode.ASYNC, keys: dict[str, object] | None = None
) -> TriggerDecision:
    table = HudiTable.open(str(fixture.base))
    config = config_of(keys)
    return clustering_due(table.load_timeline(), config, mode, table.facts_reader)


def test_clustering_due_waits_for_async_max_commits(tmp_path: Path) -> None:
    decision = _decide(_table(tmp_path, 3))
    assert decision.step is ClusteringStep.WAIT
    assert decision.commits_since_last_clustering == 3
    assert "waiting for 4" in decision.reason


def test_clustering_due_at_async_max_commits(tmp_path: Path) -> None:
    decision = _decide(_table(tmp_path, 4))
    assert decision.step is ClusteringStep.SCHEDULE
    assert decision.due
    assert decision.last_clustering_instant is None


def test_clustering_due_counts_only_commits_after_last_clustering(tmp_path: Path) -> None:
    fixture = _table(tmp_path, 5)
    _complete_clustering(fixture, ts(6), [("p1", "f1-0"), ("p1", "f2-0")])
    for n in (7, 8, 9):
        fixture.commit(ts(n), [FileSpec("p1", f"f{n}-0")])
    decision = _decide(fixture)
    assert decision.step is ClusteringStep.WAIT
    assert decision.last_clustering_instant == ts(6)
    assert decision.commits_since_last_clustering == 3
    fixture.commit(ts(10), [FileSpec("p1", "f10-0")])
    assert _decide(fixture).step is ClusteringStep.SCHEDULE


def test_clustering_due_insert_overwrite_is_not_a_clustering(tmp_path: Path) -> None:
    fixture = _table(tmp_path, 2)
    fixture.replace(ts(3), [FileSpec("p1", "new-0")], {"p1": ["f1-0"]})
    fixture.commit(ts(4), [FileSpec("p1", "f4-0")])
    table = HudiTable.open(str(fixture.base))
    assert last_clustering_instant(table.load_timeline(), table.facts_reader) is None
    decision = _decide(fixture)
    assert decision.step is ClusteringStep.SCHEDULE
    assert decision.commits_since_last_clustering == 4  # the replacecommit counts as a commit


def test_clustering_due_pending_plan_is_executed_first(tmp_path: Path) -> None:
    fixture = _table(tmp_path, 8)
    fixture.pending_clustering(ts(9), [("p1", "f1-0")])
    fixture.pending_clustering(ts(10), [("p1", "f2-0")], inflight=True)
    decision = _decide(fixture)
    assert decision.step is ClusteringStep.EXECUTE_PENDING
    assert decision.pending_instant == ts(9)  # the oldest
    assert not decision.due


def test_clustering_due_pending_plan_blocks_even_when_manual(tmp_path: Path) -> None:
    fixture = _table(tmp_path, 1)
    fixture.pending_clustering(ts(2), [("p1", "f1-0")])
    assert _decide(fixture, TriggerMode.MANUAL).step is ClusteringStep.EXECUTE_PENDING


def test_clustering_due_inline_mode_uses_inline_max_commits(tmp_path: Path) -> None:
    fixture = _table(tmp_path, 2)
    assert _decide(fixture, TriggerMode.INLINE, {INLINE_MAX: 2, ASYNC_MAX: 9}).due
    assert not _decide(fixture, TriggerMode.ASYNC, {INLINE_MAX: 2, ASYNC_MAX: 9}).due


def test_clustering_due_manual_mode_ignores_commit_count(tmp_path: Path) -> None:
    fixture = FixtureTable(tmp_path / "t")
    assert _decide(fixture, TriggerMode.MANUAL).due
