"""When clustering is scheduled: commits since the last clustering, and one pending plan at a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from service.config.schedule import ClusteringSchedule
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.table import HudiTable
from service.table.timeline import Timeline, create_instant_file
from strategies.clustering import (
    ClusteringStep,
    TriggerDecision,
    TriggerMode,
    clustering_due,
    last_clustering_instant,
    pending_clustering_instants,
)
from strategies.clustering.small_files import PartitionSmallFiles, SmallFiles, small_files
from tests.plan.snapshots import COMMIT, MB, NOW, config_of, fid, snapshot
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
        fixture.storage,
        LAYOUT_1,
        Instant(instant_time, Action.REPLACE_COMMIT, State.COMPLETED),
        codecs.encode(meta),
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


# ---------------------------------------------------------------- the daemon's data-driven triggers
# Pure: a synthetic timeline (ts(n) = 2024-01-01 00:00 UTC + n minutes), every replacecommit a
# clustering, small files given as counted.


class _EveryReplaceIsClustering:
    def is_clustering_plan(self, instant: Instant) -> bool:
        return instant.action is Action.REPLACE_COMMIT


def _timeline(commits: range, clustered_at: int | None = None) -> Timeline:
    instants = [Instant(ts(n), Action.COMMIT, State.COMPLETED) for n in commits]
    if clustered_at is not None:
        instants.append(Instant(ts(clustered_at), Action.REPLACE_COMMIT, State.COMPLETED))
    return Timeline.of(sorted(instants, key=lambda i: i.timestamp))


def _at(minutes: float) -> datetime:
    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)


def _small(*partitions: tuple[str, int, int]) -> SmallFiles:
    """(partition, count, bytes) each; the oldest small file of each is ts(1)."""
    return SmallFiles(tuple(PartitionSmallFiles(p, n, b, ts(1)) for p, n, b in partitions))


def _due(
    timeline: Timeline,
    schedule: ClusteringSchedule,
    now: datetime,
    small: SmallFiles | None = None,
    mode: TriggerMode = TriggerMode.ASYNC,
    keys: dict[str, object] | None = None,
) -> TriggerDecision:
    config = config_of({ASYNC_MAX: 100, **(keys or {})})
    return clustering_due(timeline, config, mode, _EveryReplaceIsClustering(), schedule, now, small)


def test_small_file_count_trigger_fires_on_one_partitions_count() -> None:
    schedule = ClusteringSchedule(small_file_count_trigger=3)
    timeline = _timeline(range(1, 4))
    first = _due(timeline, schedule, _at(10))
    assert first.step is ClusteringStep.WAIT and first.needs_small_files  # the timeline does not decide
    decision = _due(timeline, schedule, _at(10), _small(("p1", 1, 10), ("p2", 3, 30)))
    assert decision.step is ClusteringStep.SCHEDULE
    assert "partition 'p2' has 3 small files (clustering.small_file_count_trigger=3)" in decision.reason
    # Per partition, not in total: two and two small files are not three in one partition.
    waiting = _due(timeline, schedule, _at(10), _small(("p1", 2, 10), ("p2", 2, 30)))
    assert waiting.step is ClusteringStep.WAIT and not waiting.needs_small_files
    assert "4 small files (40 bytes) in 2 partitions, at most 2 in 'p1'" in waiting.reason


def test_small_file_bytes_trigger_fires_at_the_byte_total() -> None:
    schedule = ClusteringSchedule(small_file_bytes_trigger=1000)
    timeline = _timeline(range(1, 4))
    assert _due(timeline, schedule, _at(10), _small(("p1", 2, 999))).step is ClusteringStep.WAIT
    decision = _due(timeline, schedule, _at(10), _small(("p1", 2, 1000)))
    assert decision.step is ClusteringStep.SCHEDULE
    assert "1000 bytes in small files (clustering.small_file_bytes_trigger=1000)" in decision.reason


def test_commit_count_still_schedules_without_reading_small_files() -> None:
    schedule = ClusteringSchedule(small_file_count_trigger=50)
    decision = _due(_timeline(range(1, 5)), schedule, _at(10), keys={ASYNC_MAX: 4})
    assert decision.step is ClusteringStep.SCHEDULE and not decision.needs_small_files


def test_no_data_trigger_configured_never_asks_for_small_files() -> None:
    decision = _due(_timeline(range(1, 4)), ClusteringSchedule(), _at(10))
    assert decision.step is ClusteringStep.WAIT and not decision.needs_small_files


def test_max_interval_since_the_last_clustering_when_a_group_can_form() -> None:
    schedule = ClusteringSchedule(max_interval_hours=1)
    timeline = _timeline(range(1, 5), clustered_at=6)
    plannable = _small(("p1", 2, 20))
    assert _due(timeline, schedule, _at(6 + 59), plannable).step is ClusteringStep.WAIT
    decision = _due(timeline, schedule, _at(6 + 60), plannable)
    assert decision.step is ClusteringStep.SCHEDULE
    assert f"1.0 h since the last clustering {ts(6)}" in decision.reason
    # One small file makes no group unless single-group clustering keeps it (Hudi's default: on).
    lone = _small(("p1", 1, 10), ("p2", 1, 10))
    single = "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
    assert _due(timeline, schedule, _at(600), lone, keys={single: False}).step is ClusteringStep.WAIT
    assert _due(timeline, schedule, _at(600), lone, keys={single: True}).step is ClusteringStep.SCHEDULE
    assert _due(timeline, schedule, _at(600), SmallFiles()).step is ClusteringStep.WAIT


def test_max_interval_without_a_clustering_counts_from_the_oldest_instant() -> None:
    schedule = ClusteringSchedule(max_interval_hours=2)
    timeline = _timeline(range(30, 33))
    plannable = _small(("p1", 2, 20))
    assert _due(timeline, schedule, _at(30 + 119), plannable).step is ClusteringStep.WAIT
    decision = _due(timeline, schedule, _at(30 + 120), plannable)
    assert decision.step is ClusteringStep.SCHEDULE and "no clustering yet" in decision.reason


def test_min_interval_holds_every_trigger_but_a_manual_request() -> None:
    schedule = ClusteringSchedule(min_interval_minutes=30, small_file_count_trigger=1)
    timeline = _timeline(range(1, 5), clustered_at=10)
    busy = _small(("p1", 9, 90))
    held = _due(timeline, schedule, _at(10 + 29), busy, keys={ASYNC_MAX: 1})
    assert held.step is ClusteringStep.WAIT and not held.needs_small_files
    assert "planned 29.0 min ago; clustering.min_interval_minutes=30" in held.reason
    assert _due(timeline, schedule, _at(10 + 30), busy).step is ClusteringStep.SCHEDULE
    assert _due(timeline, schedule, _at(10 + 1), mode=TriggerMode.MANUAL).step is ClusteringStep.SCHEDULE


def test_min_interval_does_not_hold_a_pending_plan() -> None:
    schedule = ClusteringSchedule(min_interval_minutes=30)
    timeline = Timeline.of([*_timeline(range(1, 3)), Instant(ts(5), Action.REPLACE_COMMIT, State.REQUESTED)])
    assert _due(timeline, schedule, _at(6)).step is ClusteringStep.EXECUTE_PENDING


def test_a_schedule_needs_now() -> None:
    with pytest.raises(ValueError, match="needs `now`"):
        clustering_due(
            _timeline(range(1, 3)), config_of(), TriggerMode.ASYNC, _EveryReplaceIsClustering(),
            ClusteringSchedule(), None,
        )  # fmt: skip


def test_small_files_per_partition_with_the_oldest_base_instant() -> None:
    view = snapshot(
        {"p1": [("a", 10), ("b", 400), ("c", 20)], "p2": [("d", 5)], "p3": [("e", 500)]},
        pending_clustering=[("p2", fid("d"))],
    )
    found = small_files(view, config_of(), NOW)
    assert [(p.partition, p.count, p.total_bytes // MB) for p in found.partitions] == [("p1", 2, 30)]
    assert (found.count, found.total_bytes, found.oldest_instant) == (2, 30 * MB, COMMIT)
    assert found.oldest_age(NOW) == NOW - datetime(2024, 1, 1, 0, 1, tzinfo=UTC)
    assert SmallFiles().oldest_age(NOW) == timedelta(0)


def test_small_files_for_ranking_count_a_pending_plans_slices() -> None:
    view = snapshot({"p1": [("a", 10), ("b", 20)]}, pending_clustering=[("p1", fid("a"))])
    assert small_files(view, config_of(), NOW).count == 1
    ranked = small_files(view, config_of(), NOW, include_pending_clustering=True)
    assert (ranked.count, ranked.total_bytes) == (2, 30 * MB)


class _NoPlans:
    """A plan reader that finds no `.requested` file: Java judges a layout-2 `clustering` instant by
    its action alone (`ClusteringUtils.isClusteringInstant`)."""

    def is_clustering_plan(self, instant: Instant) -> bool:
        return False


def test_a_pending_clustering_on_timeline_layout_2_is_a_clustering_instant() -> None:
    """Tables of version 8 and 9 write a pending clustering as `<T>.clustering.requested|inflight`; the
    trigger executes it before it plans another (it once looked for replacecommits only)."""
    t = ts(3)
    pending = Instant(t, Action.CLUSTERING, State.INFLIGHT)
    timeline = Timeline((Instant(ts(1), Action.COMMIT, State.COMPLETED), pending))
    assert pending_clustering_instants(timeline, _NoPlans()) == [pending]
    decision = clustering_due(timeline, config_of({}), TriggerMode.ASYNC, _NoPlans())
    assert decision.step is ClusteringStep.EXECUTE_PENDING and decision.pending_instant == t
