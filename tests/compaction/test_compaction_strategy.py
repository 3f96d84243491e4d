"""Compaction trigger and planner (pure: synthetic timelines and listings). Against Hudi itself:
`tests/compaction/test_schedule_vs_hudi.py`."""

from __future__ import annotations

from datetime import UTC

import pytest

from service.config.compaction import CompactionConfig, CompactionStrategyKind
from service.config.hoodie import HoodieConfig
from service.errors import ConfigError
from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.storage import FileStatus
from service.table.timeline import Timeline
from strategies.compaction import (
    capture_metrics,
    compaction_due,
    delta_commits_since_last_compaction,
    plan_compaction,
)
from tests.support.fixtures import ts

MIB = 1024 * 1024
STRATEGY = "org.apache.hudi.table.action.compact.strategy."
PARQUET_MAX = 125829120  # hoodie.parquet.max.file.size default: 120 MiB


def config(**keys: object) -> CompactionConfig:
    return HoodieConfig.from_mapping(keys, "t").compaction


def _i(n: int, action: Action, state: State = State.COMPLETED) -> Instant:
    return Instant(ts(n), action, state)


# ---------------------------------------------------------------- trigger


def test_defaults_are_hudis() -> None:
    c = config()
    assert c.trigger_strategy.value == "NUM_COMMITS"
    assert (c.max_delta_commits, c.max_delta_seconds, c.target_io_mb) == (5, 3600, 512000)
    assert c.strategy_kind is CompactionStrategyKind.LOG_FILE_SIZE_BASED
    assert c.log_file_size_threshold_bytes == 0


def test_counts_deltacommits_in_any_state_after_last_completed_commit_or_replacecommit() -> None:
    """`getDeltaCommitsSinceLatestCompaction`: deltacommits of every state after the last completed
    commit/replacecommit; a pending compaction or an inflight commit does not reset the count."""
    timeline = Timeline.of(
        [
            _i(1, Action.DELTA_COMMIT),
            _i(2, Action.COMMIT),  # a completed compaction
            _i(3, Action.DELTA_COMMIT),
            _i(4, Action.REPLACE_COMMIT),  # a completed clustering: the new reference
            _i(5, Action.DELTA_COMMIT),
            _i(6, Action.COMPACTION, State.REQUESTED),
            _i(7, Action.DELTA_COMMIT, State.INFLIGHT),
            _i(8, Action.DELTA_COMMIT, State.REQUESTED),
            _i(9, Action.REPLACE_COMMIT, State.INFLIGHT),
        ]
    )
    since = delta_commits_since_last_compaction(timeline)
    assert since is not None
    assert (since.count, since.reference_instant, since.reference_is_compaction) == (3, ts(4), True)


def test_without_completed_commit_counts_from_first_deltacommit_inclusive() -> None:
    timeline = Timeline.of([_i(n, Action.DELTA_COMMIT) for n in (3, 4, 5)])
    since = delta_commits_since_last_compaction(timeline)
    assert since is not None and (since.count, since.reference_instant) == (3, ts(3))
    assert delta_commits_since_last_compaction(Timeline.of([_i(1, Action.CLEAN)])) is None


@pytest.mark.parametrize(
    ("strategy", "deltas", "minutes_later", "due"),
    [
        ("NUM_COMMITS", 5, 0, True),
        ("NUM_COMMITS", 4, 600, False),
        ("TIME_ELAPSED", 1, 60, True),  # 60 min after the reference: exactly the 3600 s threshold
        ("TIME_ELAPSED", 9, 59, False),
        ("NUM_OR_TIME", 4, 60, True),
        ("NUM_OR_TIME", 5, 1, True),
        ("NUM_OR_TIME", 4, 59, False),
        ("NUM_AND_TIME", 5, 60, True),
        ("NUM_AND_TIME", 5, 59, False),
        ("NUM_AND_TIME", 4, 60, False),
    ],
)
def test_trigger_strategies(strategy: str, deltas: int, minutes_later: int, due: bool) -> None:
    """`needCompact`: count >= max.delta.commits, (instant - reference) seconds >= max.delta.seconds."""
    reference = 100
    instants = [_i(reference, Action.COMMIT)] + [
        _i(reference + 1 + k, Action.DELTA_COMMIT) for k in range(deltas)
    ]
    timeline = Timeline.of(instants)
    decision = compaction_due(
        timeline,
        config(**{"hoodie.compact.inline.trigger.strategy": strategy}),
        ts(reference + minutes_later),
        UTC,
    )
    assert decision.due is due, decision.reason
    assert decision.delta_commits == deltas
    assert decision.elapsed_seconds == minutes_later * 60


def test_nothing_to_count_from_is_never_due_but_a_completed_commit_is_a_reference() -> None:
    """Java returns no info without a completed commit and without a deltacommit (never due); a
    completed commit alone is a reference with 0 deltacommits after it, so time alone can trigger."""
    by_time = config(**{"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED"})
    empty = compaction_due(Timeline.of([_i(1, Action.CLEAN)]), by_time, ts(1000), UTC)
    assert empty.due is False and empty.reference_instant is None
    decision = compaction_due(Timeline.of([_i(1, Action.COMMIT)]), by_time, ts(1000), UTC)
    assert decision.due is True and decision.delta_commits == 0 and decision.reference_instant == ts(1)


def test_num_commits_after_last_request_counts_from_newest_pending_compaction() -> None:
    instants = [
        _i(1, Action.DELTA_COMMIT),
        _i(2, Action.DELTA_COMMIT),
        _i(3, Action.COMPACTION, State.REQUESTED),
        _i(4, Action.DELTA_COMMIT),
    ]
    c = config(
        **{
            "hoodie.compact.inline.trigger.strategy": "NUM_COMMITS_AFTER_LAST_REQUEST",
            "hoodie.compact.inline.max.delta.commits": 2,
        }
    )
    assert compaction_due(Timeline.of(instants), c, ts(5), UTC).delta_commits == 1
    plain = config(**{"hoodie.compact.inline.max.delta.commits": 2})
    assert compaction_due(Timeline.of(instants), plain, ts(5), UTC).due  # NUM_COMMITS counts all 3


def test_trigger_strategy_is_case_sensitive_as_javas_valueof() -> None:
    with pytest.raises(ConfigError, match=r"trigger\.strategy"):
        config(**{"hoodie.compact.inline.trigger.strategy": "num_commits"})


# ---------------------------------------------------------------- planner


def _base(partition: str, fid: str, instant: str, size: int) -> FileStatus:
    return FileStatus(f"{partition}/{fid}_0-1-0_{instant}.parquet", size, False)


def _log(partition: str, fid: str, instant: str, version: int, size: int, token: str = "0-1-0") -> FileStatus:
    return FileStatus(f"{partition}/.{fid}_{instant}.log.{version}_{token}", size, False)


B, D2, D3 = ts(1), ts(2), ts(3)
TIMELINE = Timeline.of([_i(1, Action.COMMIT), _i(2, Action.DELTA_COMMIT), _i(3, Action.DELTA_COMMIT)])


def _view(listing: dict[str, list[FileStatus]], facts: TimelineFacts | None = None) -> FileSystemView:
    return FileSystemView.build(TIMELINE, listing, facts or TimelineFacts())


def test_metrics_are_file_slice_metric_utils() -> None:
    """read = MiB(base + logs), write = MiB(base, or hoodie.parquet.max.file.size without one),
    each by long division; log bytes and count as they are."""
    view = _view(
        {"p": [_base("p", "a", B, 3 * MIB + 5), _log("p", "a", B, 1, MIB - 1), _log("p", "a", B, 2, 7)]}
    )
    [fs] = view.latest_file_slices()
    assert capture_metrics(fs, PARQUET_MAX) == {
        "TOTAL_IO_READ_MB": 4.0,
        "TOTAL_IO_WRITE_MB": 3.0,
        "TOTAL_IO_MB": 7.0,
        "TOTAL_LOG_FILES_SIZE": float(MIB + 6),
        "TOTAL_LOG_FILES": 2.0,
    }
    log_only = _view({"p": [_log("p", "b", D2, 1, 2 * MIB)]}).latest_file_slices()[0]
    assert capture_metrics(log_only, PARQUET_MAX)["TOTAL_IO_WRITE_MB"] == 120.0
    assert capture_metrics(log_only, PARQUET_MAX)["TOTAL_IO_MB"] == 122.0


def test_plan_takes_slices_with_logs_largest_logs_first_with_sorted_log_names() -> None:
    listing = {
        "p": [
            _base("p", "small", B, 10 * MIB),
            _log("p", "small", B, 1, 100),
            _base("p", "big", B, 10 * MIB),
            _log("p", "big", B, 2, 5000, token="1-0-1"),
            _log("p", "big", B, 10, 5000),
            _log("p", "big", B, 2, 5000, token="0-9-9"),
            _base("p", "nologs", B, 10 * MIB),
        ],
        "q": [_log("q", "logonly", D2, 1, 1000)],
    }
    outcome = plan_compaction(_view(listing), config(), PARQUET_MAX)
    assert outcome.plan is not None
    ops = outcome.plan.operations
    assert [op.file_id for op in ops] == ["big", "logonly", "small"]
    big = ops[0]
    assert big.base_instant_time == B and big.base_file_name == f"big_0-1-0_{B}.parquet"
    # HoodieLogFile.getLogFileComparator: version numerically, then write token
    assert big.log_file_names == (
        f".big_{B}.log.2_0-9-9",
        f".big_{B}.log.2_1-0-1",
        f".big_{B}.log.10_0-1-0",
    )
    assert ops[1].base_file_name is None and ops[1].partition_path == "q"
    assert all(set(op.metrics) >= {"TOTAL_LOG_FILES_SIZE", "TOTAL_IO_MB"} for op in ops)


def test_pending_compaction_and_clustering_groups_are_excluded() -> None:
    listing = {
        "p": [
            _base("p", "a", B, MIB),
            _log("p", "a", B, 1, 10),
            _base("p", "b", B, MIB),
            _log("p", "b", B, 1, 10),
            _base("p", "c", B, MIB),
            _log("p", "c", B, 1, 10),
        ]
    }
    pending_compaction = Instant(ts(4), Action.COMPACTION, State.REQUESTED)
    timeline = Timeline.of([*TIMELINE.instants, pending_compaction])
    facts = TimelineFacts(pending_compaction={("p", "a"): (ts(4), B)}, pending_clustering={("p", "b"): ts(5)})
    view = FileSystemView.build(timeline, listing, facts)
    outcome = plan_compaction(view, config(), PARQUET_MAX)
    assert outcome.plan is not None
    assert [op.file_id for op in outcome.plan.operations] == ["c"]
    assert set(outcome.excluded_pending) == {("p", "b")}  # a's latest slice (C) has no logs yet


def test_nothing_to_compact_without_log_files() -> None:
    outcome = plan_compaction(_view({"p": [_base("p", "a", B, MIB)]}), config(), PARQUET_MAX)
    assert outcome.plan is None and "no file slice with log files" in outcome.reason


def test_log_size_threshold_and_bounded_io() -> None:
    """Below the threshold: dropped. Then operations are taken until target.io MB are used; the one
    crossing the bound is taken (`BoundedIOCompactionStrategy`)."""
    listing = {
        "p": [
            item
            for fid, log_bytes in (("a", 3000), ("b", 2000), ("c", 1000), ("d", 10))
            for item in (_base("p", fid, B, 50 * MIB), _log("p", fid, B, 1, log_bytes))
        ]
    }
    view = _view(listing)
    # each op: read 50 MiB, write 50 MiB -> TOTAL_IO_MB 100
    c = config(**{"hoodie.compaction.logfile.size.threshold": 1000, "hoodie.compaction.target.io": 150})
    outcome = plan_compaction(view, c, PARQUET_MAX)
    assert outcome.plan is not None
    assert [op.file_id for op in outcome.plan.operations] == ["a", "b"]
    # Hudi 1.x's `missingSchedulePartitions`: the partitions of the operations left out.
    assert outcome.plan.missing_partitions == ("p",)
    exact = config(**{"hoodie.compaction.target.io": 100})
    plan = plan_compaction(view, exact, PARQUET_MAX).plan
    assert plan is not None and [op.file_id for op in plan.operations] == ["a"]
    unbounded = config(
        **{
            "hoodie.compaction.strategy": STRATEGY + "UnBoundedCompactionStrategy",
            "hoodie.compaction.target.io": 1,
        }
    )
    plan = plan_compaction(view, unbounded, PARQUET_MAX).plan
    assert plan is not None and len(plan.operations) == 4 and plan.missing_partitions == ()


def _groups_with_logs(
    sizes: dict[str, tuple[tuple[str, int], ...]],
) -> dict[str, list[FileStatus]]:
    """Per partition, file groups of a 50 MiB base file and one log file of the given bytes."""
    return {
        partition: [
            item
            for fid, log_bytes in groups
            for item in (_base(partition, fid, B, 50 * MIB), _log(partition, fid, B, 1, log_bytes))
        ]
        for partition, groups in sizes.items()
    }


def test_missing_partitions_name_each_partition_left_out_once_in_drop_order() -> None:
    """Below the threshold first (in view order), then past the IO bound (in the strategy's order);
    a partition with every operation taken is not missing."""
    sizes = {"p1": (("a", 3000), ("b", 10)), "p2": (("c", 2000),), "p3": (("d", 1500), ("e", 20))}
    listing = _groups_with_logs(sizes)
    c = config(**{"hoodie.compaction.logfile.size.threshold": 100, "hoodie.compaction.target.io": 150})
    plan = plan_compaction(_view(listing), c, PARQUET_MAX).plan
    assert plan is not None
    assert [op.file_id for op in plan.operations] == ["a", "c"]
    assert plan.missing_partitions == ("p1", "p3")


def test_layout_2_takes_only_logs_completed_before_the_compaction_instant() -> None:
    """On layout 2 a log names its deltacommit; one that completed after the compaction instant (here
    requested before it) stays out, and a slice left without logs is no candidate."""
    early = Instant(ts(3), Action.DELTA_COMMIT, State.COMPLETED, ts(4))
    late = Instant(ts(5), Action.DELTA_COMMIT, State.COMPLETED, ts(9))
    timeline = Timeline.of([Instant(B, Action.COMMIT, State.COMPLETED, ts(2)), early, late])
    listing = {
        "p": [
            _base("p", "a", B, MIB),
            _log("p", "a", ts(3), 1, 100),
            _log("p", "a", ts(5), 1, 100),
            _base("p", "b", B, MIB),
            _log("p", "b", ts(5), 1, 100),
        ]
    }
    view = FileSystemView.build(timeline, listing, TimelineFacts(), logs_by_completion_time=True)
    plan = plan_compaction(view, config(), PARQUET_MAX, logs_completed_before=ts(6)).plan
    assert plan is not None
    [op] = plan.operations
    assert (op.file_id, op.log_file_names) == ("a", (f".a_{ts(3)}.log.1_0-1-0",))
    later = plan_compaction(view, config(), PARQUET_MAX, logs_completed_before=ts(10)).plan
    assert later is not None and len(later.operations) == 2


def test_unreproduced_strategy_refuses_planning_only() -> None:
    day_based = STRATEGY + "DayBasedCompactionStrategy"
    c = config(**{"hoodie.compaction.strategy": day_based})  # the config itself still loads
    view = _view({"p": [_base("p", "a", B, MIB), _log("p", "a", B, 1, 10)]})
    with pytest.raises(ConfigError, match="DayBasedCompactionStrategy"):
        plan_compaction(view, c, PARQUET_MAX)


@pytest.mark.parametrize("strategy", ["LogFileSizeBasedCompactionStrategy", "UnBoundedCompactionStrategy"])
def test_a_plan_over_batches_of_partitions_is_the_plan_over_one_view(strategy: str) -> None:
    """The scheduler plans over `HudiTable.iter_views`' batches of partitions, in any order: the
    operations, their order (Java's: partitions in order, file ids in its view order, then the
    strategy's), the missing partitions and the excluded groups are those of one view."""
    sizes = {
        "p3": (("d", 1500), ("e", 20), ("f", 700)),
        "p1": (("a", 3000), ("b", 10), ("z", 700)),
        "p2": (("c", 2000), ("y", 700)),
    }
    listing = _groups_with_logs(sizes)
    facts = TimelineFacts(pending_clustering={("p2", "y"): ts(3), ("p1", "z"): ts(3)})
    c = config(
        **{
            "hoodie.compaction.strategy": STRATEGY + strategy,
            "hoodie.compaction.logfile.size.threshold": 100,
            "hoodie.compaction.target.io": 150,
        }
    )
    whole = plan_compaction(_view(listing, facts), c, PARQUET_MAX)
    batches = [_view({p: listing[p]}, facts) for p in ("p3", "p1", "p2")]
    assert plan_compaction(iter(batches), c, PARQUET_MAX) == whole
    assert whole.plan is not None and len(whole.plan.operations) >= 2
    assert whole.excluded_pending == (("p1", "z"), ("p2", "y"))
