"""clean_due: Hudi's NUM_COMMITS trigger, counted from the last clean's lastCompletedCommitTimestamp."""

from __future__ import annotations

from service.table.instant import Action, Instant, State
from service.table.timeline import Timeline
from strategies.cleaning import LastClean, clean_due, commits_since_last_clean
from tests.clean.helpers import clean_config
from tests.support.fixtures import ts


def _timeline(*completed: int, pending: tuple[int, ...] = ()) -> Timeline:
    instants = [Instant(ts(i), Action.COMMIT, State.COMPLETED) for i in completed]
    instants += [Instant(ts(i), Action.COMMIT, State.INFLIGHT) for i in pending]
    return Timeline.of(instants)


def test_clean_due_without_previous_clean_counts_every_completed_commit() -> None:
    timeline = _timeline(1, 2, pending=(3,))
    assert commits_since_last_clean(timeline, None) == 2
    assert clean_due(timeline, None, clean_config({}))
    assert not clean_due(timeline, None, clean_config({"hoodie.clean.max.commits": 3}))


def test_clean_due_counts_commits_after_last_completed_commit_of_last_clean() -> None:
    timeline = _timeline(1, 2, 3, 4)
    last = LastClean(ts(5), earliest_commit_to_retain=ts(2), last_completed_commit_timestamp=ts(3))
    assert commits_since_last_clean(timeline, last) == 1
    assert clean_due(timeline, last, clean_config({}))
    assert not clean_due(timeline, last, clean_config({"hoodie.clean.max.commits": 2}))
    caught_up = LastClean(ts(5), last_completed_commit_timestamp=ts(4))
    assert not clean_due(timeline, caught_up, clean_config({}))


def test_clean_due_empty_last_clean_counts_everything() -> None:
    timeline = _timeline(1, 2)
    assert commits_since_last_clean(timeline, LastClean(ts(3), empty=True)) == 2
