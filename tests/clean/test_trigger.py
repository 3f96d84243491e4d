"""clean_due: Hudi's NUM_COMMITS trigger, counted from the last clean's lastCompletedCommitTimestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

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


# cleaning.max_interval_hours: ts(n) is 2024-01-01 00:00 UTC + n minutes.
HOUR = timedelta(hours=1)


def _at(minutes: int) -> datetime:
    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)


def test_clean_due_after_max_interval_since_the_last_clean_when_a_commit_came() -> None:
    timeline = _timeline(1, 2, 3, 4)
    last = LastClean(ts(5), last_completed_commit_timestamp=ts(3))  # one commit (ts(4)) since
    config = clean_config({"hoodie.clean.max.commits": 5})
    assert not clean_due(timeline, last, config)  # Hudi's trigger alone: 1 < 5
    assert not clean_due(timeline, last, config, HOUR, _at(5 + 59))
    assert clean_due(timeline, last, config, HOUR, _at(5 + 60))


def test_clean_max_interval_waits_for_a_commit_unless_retention_is_by_hours() -> None:
    timeline = _timeline(1, 2, 3)
    caught_up = LastClean(ts(4), last_completed_commit_timestamp=ts(3))
    by_commits = clean_config({"hoodie.clean.max.commits": 5})
    assert not clean_due(timeline, caught_up, by_commits, HOUR, _at(24 * 60))  # nothing new to clean
    by_hours = clean_config({"hoodie.clean.max.commits": 5, "hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS"})
    assert clean_due(timeline, caught_up, by_hours, HOUR, _at(4 + 60))  # retention moved with the clock
    assert not clean_due(timeline, caught_up, by_hours, HOUR, _at(4 + 59))


def test_clean_max_interval_without_a_clean_counts_from_the_oldest_instant() -> None:
    timeline = _timeline(10, 20)
    config = clean_config({"hoodie.clean.max.commits": 5})
    assert not clean_due(timeline, None, config, HOUR, _at(10 + 59))
    assert clean_due(timeline, None, config, HOUR, _at(10 + 60))
    assert not clean_due(Timeline.of([]), None, config, HOUR, _at(10_000))


def test_clean_max_interval_is_elapsed_time_in_the_writers_zone() -> None:
    # Instant times are the writers' wall clock: in Berlin (UTC+1 in January) ts(5) is 23:05 UTC the
    # day before, so one hour later is 00:05 UTC.
    timeline = _timeline(1, 2)
    last = LastClean(ts(5), last_completed_commit_timestamp=ts(1))
    config = clean_config({"hoodie.clean.max.commits": 5})
    berlin = ZoneInfo("Europe/Berlin")
    assert clean_due(timeline, last, config, HOUR, datetime(2024, 1, 1, 0, 5, tzinfo=UTC).astimezone(berlin))
    assert not clean_due(
        timeline, last, config, HOUR, datetime(2024, 1, 1, 0, 4, tzinfo=UTC).astimezone(berlin)
    )


def test_clean_max_interval_needs_an_aware_now() -> None:
    with pytest.raises(ValueError, match="aware"):
        clean_due(_timeline(1), None, clean_config({"hoodie.clean.max.commits": 5}), HOUR, None)
