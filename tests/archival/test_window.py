"""The archival window's rules on small synthetic timelines (pure logic; the same rules against Hudi's
own archiver are in test_window_vs_hudi.py)."""

from __future__ import annotations

from datetime import UTC

import pytest

from service.config.hoodie import HoodieConfig
from service.table.instant import Action, Instant, State
from service.table.timeline import Timeline
from strategies.archival import ArchivalInputs, Archiver, Bound, LastClean, window

C, D, R, CL, RB, SP, CP, CLU = (
    Action.COMMIT,
    Action.DELTA_COMMIT,
    Action.REPLACE_COMMIT,
    Action.CLEAN,
    Action.ROLLBACK,
    Action.SAVEPOINT,
    Action.COMPACTION,
    Action.CLUSTERING,
)
DONE, INFLIGHT, REQUESTED = State.COMPLETED, State.INFLIGHT, State.REQUESTED


def t(n: int) -> str:
    return f"2026010100{n:02d}00000"


def _timeline(*items: tuple[int, Action, State]) -> Timeline:
    return Timeline.of(Instant(t(n), action, state) for n, action, state in items)


def _config(**keys: object) -> HoodieConfig:
    """min 2, max 3; cleaning by file versions, which leaves min and max as set (see the last test)."""
    base = {
        "hoodie.keep.min.commits": 2,
        "hoodie.keep.max.commits": 3,
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
    }
    return HoodieConfig.from_mapping({**base, **keys}, "t")


def _window(
    timeline: Timeline, archiver: Archiver = Archiver.V1, config: HoodieConfig | None = None, **inputs: object
):  # type: ignore[no-untyped-def]
    config = config or _config()
    args = {"merge_on_read": False, "zone": UTC, **inputs}
    return window(
        timeline, archiver, config.archival, config.clean, config.compaction, ArchivalInputs(**args)
    )  # type: ignore[arg-type]


def _times(w) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.timestamp for i in w.instants]


def test_nothing_until_the_commits_exceed_max_then_down_to_min() -> None:
    three = _timeline(*((n, C, DONE) for n in range(1, 4)))
    held = _window(three)
    assert held.instants == () and held.stop is not None and held.stop.bound is Bound.NOT_TRIGGERED
    five = _timeline(*((n, C, DONE) for n in range(1, 6)))
    assert _times(_window(five)) == [t(1), t(2), t(3)]


@pytest.mark.parametrize("archiver", list(Archiver))
def test_what_a_stopped_run_archived_is_finished_whatever_the_trigger_says(archiver: Archiver) -> None:
    """A run stopped midway through its deletes left commit 2 active though archived, and the commit
    count under the trigger: the window is that instant alone, and says nothing is to be written."""
    three = _timeline(*((n, C, DONE) for n in range(2, 5)))
    w = _window(three, archiver, already_archived=frozenset({t(2)}))
    assert _times(w) == [t(2)] and w.unfinished == {t(2)}
    # Beside what the trigger archives (the stopped run's instant first, once).
    six = _timeline(*((n, C, DONE) for n in range(2, 8)))
    w = _window(six, archiver, already_archived=frozenset({t(2)}))
    assert _times(w) == [t(2), t(3), t(4), t(5)] and w.unfinished == {t(2)}
    assert _window(six, archiver).unfinished == frozenset()


def test_a_pending_write_keeps_the_commit_before_it() -> None:
    tl = _timeline(*((n, C, DONE) for n in (1, 2, 3, 5, 6, 7)), (4, C, INFLIGHT))
    w = _window(tl)
    assert _times(w) == [t(1), t(2)]
    assert w.stop is not None and (w.stop.bound, w.stop.instant_time) == (Bound.PENDING_WRITE, t(3))


def test_cleans_and_rollbacks_by_their_own_count_on_layout_1_and_with_the_commits_on_layout_2() -> None:
    items = [(n, C, DONE) for n in (1, 2, 3, 4, 5, 20, 21)] + [(n, CL, DONE) for n in (10, 11, 12, 13)]
    items.append((14, RB, DONE))
    tl = _timeline(*items)
    # Layout 1: 4 cleans > max 3, down to min 2 (then the commits), the single rollback stays.
    assert _times(_window(tl, Archiver.V1)) == [t(10), t(11), t(1), t(2), t(3), t(4), t(5)]
    # Layout 2: commits 1..5 archived; cleans and rollbacks older than the last one (5): none.
    assert _times(_window(tl, Archiver.V2)) == [t(1), t(2), t(3), t(4), t(5)]
    later = _timeline(*[(n, C, DONE) for n in (1, 3, 5, 7, 9)], (2, CL, DONE), (4, RB, DONE), (8, CL, DONE))
    assert _times(_window(later, Archiver.V2)) == [t(1), t(2), t(3), t(4), t(5)]


def test_a_replacecommit_is_kept_until_a_clean_released_what_it_replaced() -> None:
    items = [(n, C, DONE) for n in (1, 2, 4, 5, 6, 7)] + [(3, R, DONE)]
    no_clean = _window(_timeline(*items))
    assert _times(no_clean) == [t(1), t(2)]
    assert no_clean.stop is not None and no_clean.stop.bound is Bound.CLUSTERING
    # A clean whose earliest commit to retain is past the replacecommit released its file groups.
    released = _window(_timeline(*items, (8, CL, DONE)), last_clean=LastClean(t(8), t(5)))
    assert _times(released)[:5] == [t(1), t(2), t(3), t(4), t(5)]
    # One whose plan has none (KEEP_LATEST_FILE_VERSIONS) counts from the clean's own time.
    held = _window(_timeline(*items, (8, CL, DONE)), last_clean=LastClean(t(8), None))
    assert t(3) in _times(held)


def test_layout_1_keeps_the_commit_before_an_inflight_replacecommit_but_not_a_requested_one() -> None:
    base = [(n, C, DONE) for n in (1, 2, 3, 5, 6, 7, 8)]
    clean = LastClean(t(9), t(9))
    inflight = _window(_timeline(*base, (4, R, INFLIGHT)), last_clean=clean)
    assert _times(inflight) == [t(1), t(2)]
    # A requested replacecommit is still a pending write: the commit before it stays either way.
    requested = _window(_timeline(*base, (4, R, REQUESTED)), last_clean=clean)
    assert _times(requested) == [t(1), t(2)]


def test_savepoints_stop_the_window_or_are_skipped_beyond_it() -> None:
    items = [(n, C, DONE) for n in range(1, 8)] + [(3, SP, DONE)]
    stopped = _window(_timeline(*items))
    assert _times(stopped) == [t(1), t(2)]
    beyond = _window(_timeline(*items), config=_config(**{"hoodie.archive.beyond.savepoint": True}))
    assert _times(beyond) == [t(1), t(2), t(4), t(5), t(6)]


def test_the_metadata_table_compaction_bounds_the_window_and_none_holds_everything() -> None:
    tl = _timeline(
        *((n, C, DONE) for n in range(1, 8)), (1, CL, DONE), (2, CL, DONE), (3, CL, DONE), (4, CL, DONE)
    )
    none = _window(tl, has_metadata_table=True, metadata_table_compaction=None)
    assert none.instants == () and none.stop is not None and none.stop.bound is Bound.METADATA_TABLE
    v1 = _window(tl, has_metadata_table=True, metadata_table_compaction=t(2))
    assert _times(v1) == [t(1), t(1)]  # the clean and the commit of time 1
    assert [i.action for i in v1.instants] == [CL, C]


def test_merge_on_read_keeps_what_the_next_compaction_counts() -> None:
    items = [(n, D, DONE) for n in (1, 2, 4, 5, 6, 7, 8, 9)] + [(3, C, DONE)]
    config = _config(**{"hoodie.compact.inline.max.delta.commits": 3})
    w = _window(_timeline(*items), config=config, merge_on_read=True)
    # Six delta commits after the compaction at 3: the next trigger counts from the 4th of them (7).
    assert _times(w) == [t(1), t(2), t(3), t(4), t(5), t(6)]
    assert Bound.COMPACTION in {s.bound for s in w.stops}
    few = _window(
        _timeline(*items),
        config=_config(**{"hoodie.compact.inline.max.delta.commits": 10}),
        merge_on_read=True,
    )
    assert _times(few) == [t(1), t(2)]  # fewer than 10 since the compaction: it is kept


def test_min_and_max_grow_with_the_cleaners_retention() -> None:
    items = [(n, C, DONE) for n in range(1, 11)]
    config = _config(**{"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": 5})
    w = _window(_timeline(*items), config=config)
    # The earliest commit to retain is the 6th; 4 commits after it, plus 2: min 6, max 7.
    assert (w.min_commits, w.max_commits) == (6, 7)
    assert _times(w) == [t(1), t(2), t(3), t(4)]
    # A pending write holds the earliest commit to retain back, and with it min and max.
    pending = _window(_timeline(*items, (11, C, INFLIGHT)), config=config)
    assert (pending.min_commits, pending.max_commits) == (6, 7)


def test_layout_2_pending_clustering_is_a_pending_write() -> None:
    items = [(n, C, DONE) for n in (1, 2, 3, 5, 6, 7)]
    w = _window(_timeline(*items, (4, CLU, REQUESTED)), Archiver.V2, last_clean=LastClean(t(8), t(8)))
    assert _times(w) == [t(1), t(2)]
    assert CP  # the compaction action is exercised in test_window_vs_hudi


def test_layout_1_archives_cleans_beyond_max_even_when_the_commits_do_not_reach_it() -> None:
    """`getCleanInstantsToArchive` does not wait for the commits' trigger; layout 2 archives cleans
    only with commits."""
    tl = _timeline((1, C, DONE), (2, C, DONE), *((n, CL, DONE) for n in (3, 4, 5, 6)))
    assert _times(_window(tl, Archiver.V1)) == [t(3), t(4)]
    assert _window(tl, Archiver.V2).instants == ()
