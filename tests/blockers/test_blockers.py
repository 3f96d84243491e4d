"""`strategies.blockers`: what holds a table's upkeep back, from the timeline and what is known of its
executors (pure)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from service.table.instant import Action, Instant, State
from service.table.timeline import Timeline, format_instant_time
from strategies.blockers import (
    BlockerInputs,
    BlockerKind,
    Executor,
    Heartbeat,
    MetadataTableState,
    compaction_state,
    find_blockers,
)
from strategies.cleaning.snapshot import LastClean

NOW = datetime(2024, 1, 2, 12, 0, tzinfo=UTC)


def at(minutes_ago: float) -> str:
    return format_instant_time(NOW - timedelta(minutes=minutes_ago))


def _inputs(instants: list[Instant], **kwargs: object) -> BlockerInputs:
    return BlockerInputs(
        timeline=Timeline.of(instants), zone=UTC, now=NOW, heartbeat_window_seconds=120,
        executors=kwargs.pop("executors", {}), **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_dead_writers_old_pending_write_is_a_blocker_a_young_one_is_not() -> None:
    dead, young = at(90), at(1)
    instants = [
        Instant(at(100), Action.COMMIT, State.COMPLETED),
        Instant(dead, Action.COMMIT, State.INFLIGHT),
        Instant(young, Action.COMMIT, State.INFLIGHT),
    ]
    executors = {dead: Executor("a Hudi writer", Heartbeat.EXPIRED, 5300.0)}
    [blocker] = find_blockers(_inputs(instants, executors=executors))
    assert (blocker.kind, blocker.instant, blocker.heartbeat) == (
        BlockerKind.PENDING_WRITE,
        dead,
        Heartbeat.EXPIRED,
    )
    assert blocker.age_seconds(NOW) == 90 * 60 and "archival" in blocker.services
    assert "LAZY" in blocker.way_out and blocker.owner == "a Hudi writer"


def test_a_plan_whose_executor_lives_is_reported_with_nothing_to_do() -> None:
    plan = at(30)
    instants = [Instant(plan, Action.REPLACE_COMMIT, State.INFLIGHT)]
    executors = {plan: Executor("hudi-table-service", Heartbeat.ALIVE, 10.0)}
    [blocker] = find_blockers(_inputs(instants, executors=executors))
    assert blocker.kind is BlockerKind.PENDING_CLUSTERING and blocker.way_out.startswith("none needed")


def test_only_the_oldest_pending_instant_of_each_action_counts() -> None:
    instants = [Instant(at(m), Action.COMPACTION, State.REQUESTED) for m in (50, 40, 30)]
    assert [b.instant for b in find_blockers(_inputs(instants))] == [at(50)]


def test_savepoints_hold_cleaning_and_archival_unless_archival_passes_them() -> None:
    instants = [
        Instant(at(60), Action.COMMIT, State.COMPLETED),
        Instant(at(60), Action.SAVEPOINT, State.COMPLETED),
    ]
    [blocker] = find_blockers(_inputs(instants))
    assert blocker.kind is BlockerKind.SAVEPOINT and blocker.services == ("cleaning", "archival")
    [beyond] = find_blockers(_inputs(instants, archive_beyond_savepoint=True))
    assert beyond.services == ("cleaning",)
    # What it retains: the files its metadata names.
    [counted] = find_blockers(_inputs(instants, savepoint_files={at(60): (12, 3)}))
    assert "keeps the 12 files it references (in 3 partitions)" in counted.effect


def test_an_archived_incremental_clean_anchor_means_a_full_listing_next() -> None:
    commits = [Instant(at(m), Action.COMMIT, State.COMPLETED) for m in (30, 20, 10)]
    archived = LastClean(at(25), earliest_commit_to_retain=at(40))
    [blocker] = find_blockers(_inputs([*commits], last_clean=archived))
    assert blocker.kind is BlockerKind.CLEAN_ANCHOR_ARCHIVED and at(40) in blocker.effect
    assert find_blockers(_inputs([*commits], last_clean=archived, incremental_clean=False)) == []
    active = LastClean(at(15), earliest_commit_to_retain=at(20))
    assert find_blockers(_inputs([*commits], last_clean=active)) == []


def test_the_metadata_tables_compaction_behind_names_the_pending_write_that_holds_it() -> None:
    stuck = at(300)
    instants = [Instant(stuck, Action.DELTA_COMMIT, State.REQUESTED)]
    behind = MetadataTableState(
        delta_commits_since_compaction=14, max_delta_commits=10, latest_compaction=at(400)
    )
    kinds = {b.kind: b for b in find_blockers(_inputs(instants, metadata_table=behind))}
    mdt = kinds[BlockerKind.METADATA_COMPACTION_BEHIND]
    assert "14 delta commits" in mdt.effect and stuck in mdt.effect and mdt.age_seconds(NOW) == 400 * 60
    on_time = MetadataTableState(10, 10, at(10))
    assert BlockerKind.METADATA_COMPACTION_BEHIND not in {
        b.kind for b in find_blockers(_inputs(instants, metadata_table=on_time))
    }


def test_replacecommits_no_clean_has_released_wait_for_a_clean() -> None:
    released, waiting = at(60), at(30)
    instants = [
        Instant(released, Action.REPLACE_COMMIT, State.COMPLETED),
        Instant(at(40), Action.COMMIT, State.COMPLETED),
        Instant(waiting, Action.REPLACE_COMMIT, State.COMPLETED),
    ]
    [blocker] = find_blockers(
        _inputs(instants, last_clean=LastClean(at(35), earliest_commit_to_retain=at(40)))
    )
    assert (blocker.kind, blocker.instant) == (BlockerKind.REPLACED_GROUPS_UNCLEANED, waiting)
    assert "1 completed replacecommit" in blocker.effect
    [never] = find_blockers(_inputs(instants))
    assert never.instant == released and "2 completed" in never.effect


def test_delta_commits_piling_up_past_twice_hudis_trigger_are_compaction_debt() -> None:
    """On a merge-on-read timeline a completed commit is a compaction: the delta commits after the
    latest one are the debt, reported past twice `hoodie.compact.inline.max.delta.commits`."""
    compacted = at(200)
    before = [Instant(at(300 - n), Action.DELTA_COMMIT, State.COMPLETED) for n in range(20)]
    after = [Instant(at(100 - n), Action.DELTA_COMMIT, State.COMPLETED) for n in range(11)]
    instants = [*before, Instant(compacted, Action.COMMIT, State.COMPLETED), *after]
    timeline = Timeline.of(instants)
    state = compaction_state(timeline, max_delta_commits=5)
    assert (state.delta_commits_since, state.first_delta_commit, state.latest_compaction) == (
        11,
        after[0].timestamp,
        compacted,
    )
    [debt] = find_blockers(_inputs(instants, compaction=state))
    assert (debt.kind, debt.services, debt.instant) == (BlockerKind.COMPACTION_DEBT, ("compaction",), at(100))
    assert "11 delta commits since its last compaction" in debt.effect and debt.age_seconds(NOW) == 100 * 60
    at_the_limit = compaction_state(Timeline.of(instants[:-1]), max_delta_commits=5)  # 10 = 2 x 5
    assert find_blockers(_inputs(instants[:-1], compaction=at_the_limit)) == []
    listed = replace(state, max_log_files=11, groups_over_trigger=4)  # what `check` adds from a listing
    assert (
        "now up to 11 log files in one file group, 4 groups with more than 5"
        in find_blockers(_inputs(instants, compaction=listed))[0].effect
    )
    never = compaction_state(Timeline.of(before), max_delta_commits=5)
    assert "since it began" in find_blockers(_inputs(before, compaction=never))[0].effect


def test_blockers_come_oldest_first() -> None:
    instants = [
        Instant(at(10), Action.CLEAN, State.REQUESTED),
        Instant(at(50), Action.COMMIT, State.INFLIGHT),
        Instant(at(30), Action.SAVEPOINT, State.COMPLETED),
    ]
    assert [b.kind for b in find_blockers(_inputs(instants))] == [
        BlockerKind.PENDING_WRITE, BlockerKind.SAVEPOINT, BlockerKind.PENDING_CLEAN,
    ]  # fmt: skip
