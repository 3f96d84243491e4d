"""Size-based plan building: every rule of Hudi 0.15's partition-aware strategy, groups spelled out.

Sizes are in MB; the base config (tests.plan.snapshots.SMALL_CONFIG) has small.file.limit 300 MB,
max.bytes.per.group 100 MB, target.file.max.bytes 60 MB, max.num.groups 30 (Hudi's default) and
single-group clustering on (Hudi's default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from service.table.fs_view import FileSystemView
from strategies.clustering import (
    PlanOutcome,
    build_groups,
    eligible_slices,
    output_file_groups,
    plan_clustering,
)
from strategies.clustering.model import (
    TOTAL_IO_MB,
    TOTAL_IO_READ_MB,
    TOTAL_IO_WRITE_MB,
    TOTAL_LOG_FILES,
    TOTAL_LOG_FILES_SIZE,
)
from strategies.clustering.size_based import within_budget
from tests.plan.snapshots import COMMIT, MB, NOW, config_of, fid, grouping, snapshot

SORT = "hoodie.clustering.plan.strategy.sort.columns"
SINGLE = "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
MAX_GROUPS = "hoodie.clustering.plan.strategy.max.num.groups"
MAX_GROUP_BYTES = "hoodie.clustering.plan.strategy.max.bytes.per.group"
SMALL_LIMIT = "hoodie.clustering.plan.strategy.small.file.limit"
TARGET = "hoodie.clustering.plan.strategy.target.file.max.bytes"


def _groups(
    files: Mapping[str, Sequence[tuple[str, float]]], **config: object
) -> list[tuple[str, list[str], int]]:
    outcome = plan_clustering(snapshot(files), config_of(dict(config)), NOW)
    assert outcome.plan is not None, outcome.reason
    return grouping(outcome.plan.groups)


def test_plan_sorts_largest_first_and_cuts_before_exceeding_max_bytes() -> None:
    files = {"p1": [("a", 10), ("b", 40), ("c", 30), ("d", 20), ("e", 50)]}
    # e+b = 90; +c would be 120 > 100: cut. c+d+a = 60 (= target: one output file group).
    assert _groups(files) == [("p1", ["e", "b"], 2), ("p1", ["c", "d", "a"], 1)]


def test_plan_fills_a_group_exactly_to_max_bytes() -> None:
    assert _groups({"p1": [("a", 60), ("b", 40)]}) == [("p1", ["a", "b"], 2)]


def test_plan_oversized_slice_forms_its_own_closed_group() -> None:
    files = {"p1": [("big", 150), ("small", 20)]}
    assert _groups(files) == [("p1", ["big"], 3), ("p1", ["small"], 1)]
    # Only the *last* group is subject to the single-slice rule; a closed one-slice group stays.
    assert _groups_of(snapshot(files), {SINGLE: False}) == [("p1", ["big"], 3)]


def test_plan_excludes_slices_at_or_above_small_file_limit() -> None:
    files = {"p1": [("at", 100), ("below", 50), ("tiny", 30)]}
    assert _groups(files, **{SMALL_LIMIT: 100 * MB}) == [("p1", ["below", "tiny"], 2)]
    outcome = plan_clustering(snapshot({"p1": [("at", 100)]}), config_of({SMALL_LIMIT: 100 * MB}), NOW)
    assert outcome.plan is None
    assert "1 at or above the small file limit" in outcome.reason


def test_plan_lone_slice_needs_single_group_clustering_or_sort_columns() -> None:
    files = {"p1": [("only", 10)]}
    assert _groups(files) == [("p1", ["only"], 1)]  # Hudi's default: single-group clustering on
    off = plan_clustering(snapshot(files), config_of({SINGLE: False}), NOW)
    assert off.plan is None
    assert "lone eligible slice" in off.reason
    assert _groups(files, **{SINGLE: False, SORT: "v"}) == [("p1", ["only"], 1)]


def test_plan_single_group_rule_keeps_multi_slice_last_group() -> None:
    files = {"p1": [("a", 70), ("b", 20), ("c", 15)]}
    # a+b = 90, +c = 105 > 100: cut; the last group [c] is a lone slice and is dropped.
    outcome = plan_clustering(snapshot(files), config_of({SINGLE: False}), NOW)
    assert outcome.plan is not None
    assert grouping(outcome.plan.groups) == [("p1", ["a", "b"], 2)]


def test_plan_stops_a_partition_at_max_num_groups() -> None:
    files = {"p1": [("a", 55), ("b", 54), ("c", 53), ("d", 52), ("e", 51)]}
    assert _groups(files, **{MAX_GROUPS: 2}) == [("p1", ["a"], 1), ("p1", ["b"], 1)]
    assert _groups(files) == [("p1", [n], 1) for n in ("a", "b", "c", "d", "e")]


def test_plan_shares_max_num_groups_across_partitions_in_visiting_order() -> None:
    files = {p: [(f"{p}1", 55), (f"{p}2", 54)] for p in ("c", "a", "b")}
    # Partitions are visited in listing order (sorted): a and b fill the budget of 3 first.
    assert _groups(files, **{MAX_GROUPS: 3}) == [("a", ["a1"], 1), ("a", ["a2"], 1), ("b", ["b1"], 1)]
    # RECENT_DAYS visits newest (descending) first: c takes the budget.
    recent = {
        MAX_GROUPS: 3,
        "hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS",
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions": 0,
    }
    assert _groups(files, **recent) == [("c", ["c1"], 1), ("c", ["c2"], 1), ("b", ["b1"], 1)]


def test_plan_skips_pending_and_replaced_groups_and_takes_slices_with_logs() -> None:
    """As `SparkSizeBasedClusteringPlanStrategy` on MOR: file groups in pending clustering or
    compaction are skipped; a slice with log files is eligible by its base size, a log-only slice
    always (base size 0; sized at `hoodie.parquet.max.file.size` for grouping), and the plan's
    slice carries its log files newest first (`FileSlice.getLogFiles`)."""
    p = "p1"
    view = snapshot(
        {p: [("clu", 10), ("cmp", 20), ("rep", 30), ("log", 40), ("e", 50), ("f", 5)]},
        pending_clustering=[(p, fid("clu"))],
        pending_compaction=[(p, fid("cmp"))],
        replaced=[(p, fid("rep"))],
        log_files=[(p, fid("log"))],
        log_only={p: ["lo"]},
    )
    config = config_of({MAX_GROUP_BYTES: 1000 * MB})
    outcome = plan_clustering(view, config, NOW, parquet_max_file_size_bytes=120 * MB)
    assert outcome.plan is not None
    assert grouping(outcome.plan.groups) == [(p, ["lo", "e", "log", "f"], 4)]
    counts = outcome.counts
    assert (counts.latest_slices, counts.eligible) == (6, 4)  # the replaced group is not live
    assert (counts.pending_clustering, counts.pending_compaction, counts.with_log_files) == (1, 1, 2)
    slices = {s.file_id: s for s in outcome.plan.groups[0].slices}
    assert slices[fid("log")].log_file_paths == (f"{p}/.{fid('log')}_{COMMIT}.log.1_0-0-0",)
    assert slices[fid("log")].base_file_path.startswith(f"{p}/{fid('log')}_")
    assert (slices[fid("lo")].base_file_path, slices[fid("lo")].base_file_size_bytes) == ("", None)
    assert slices[fid("lo")].base_instant_time == COMMIT
    metrics = outcome.plan.groups[0].metrics
    assert (metrics[TOTAL_LOG_FILES], metrics[TOTAL_LOG_FILES_SIZE]) == (2.0, 2000.0)
    # Read: bases + logs; write: bases, the log-only slice at hoodie.parquet.max.file.size.
    assert metrics[TOTAL_IO_READ_MB] == float((int(95 * MB) + 2000) // MB)
    assert metrics[TOTAL_IO_WRITE_MB] == float((int(95 * MB) + 120 * MB) // MB)


def test_plan_num_output_file_groups_is_ceiling_of_bytes_over_target() -> None:
    assert _groups({"p1": [("a", 50), ("b", 40)]}, **{TARGET: 25 * MB}) == [("p1", ["a", "b"], 4)]
    assert output_file_groups(90 * MB, 30 * MB) == 3
    assert output_file_groups(90 * MB + 1, 30 * MB) == 4
    assert output_file_groups(1, 1024) == 1


def test_plan_nonpartitioned_table() -> None:
    assert _groups({"": [("a", 10), ("b", 20)]}) == [("", ["b", "a"], 1)]


def test_plan_equal_sizes_follow_java_hash_set_order() -> None:
    # Java's view yields t2, t1, t3 (HashSet bucket order, see test_java_order); the stable sort keeps
    # that order among equal sizes, so the cut falls after t2, t1.
    files = {"p1": [("t1", 50), ("t2", 50), ("t3", 50)]}
    assert _groups(files) == [("p1", ["t2", "t1"], 2), ("p1", ["t3"], 1)]


def test_plan_size_comparator_truncates_like_java_int_cast() -> None:
    # Java sorts with (int) (size2 - size1): 1 MB - 3 GB wraps to a positive int, so the 3 GB slice
    # sorts *after* the 1 MB one.
    big = {SMALL_LIMIT: 5 * 1024 * MB, MAX_GROUP_BYTES: 10 * 1024 * MB, TARGET: 1024 * MB}
    assert _groups({"p1": [("huge", 3 * 1024), ("tiny", 1)]}, **big) == [("p1", ["tiny", "huge"], 4)]


def test_plan_group_metrics_are_whole_mebibytes() -> None:
    outcome = plan_clustering(snapshot({"p1": [("a", 50.5), ("b", 40.7)]}), config_of(), NOW)
    assert outcome.plan is not None
    group = outcome.plan.groups[0]
    assert group.metrics == {
        TOTAL_IO_READ_MB: 91.0,  # (50.5 + 40.7) MB of bytes, integer-divided by 1 MiB
        TOTAL_IO_WRITE_MB: 91.0,
        TOTAL_IO_MB: 182.0,
        TOTAL_LOG_FILES_SIZE: 0.0,
        TOTAL_LOG_FILES: 0.0,
    }
    assert group.size_bytes == int(50.5 * MB) + int(40.7 * MB)


def test_plan_records_execution_strategy_and_sort_columns() -> None:
    outcome = plan_clustering(snapshot({"p1": [("a", 10), ("b", 20)]}), config_of({SORT: "v,id"}), NOW)
    assert outcome.plan is not None
    assert outcome.plan.strategy_class == (
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
    )
    assert outcome.plan.strategy_params == {SORT: "v,id"}
    assert outcome.plan.preserve_hoodie_metadata is True
    no_sort = plan_clustering(snapshot({"p1": [("a", 10), ("b", 20)]}), config_of(), NOW)
    assert no_sort.plan is not None and no_sort.plan.strategy_params == {}


def test_plan_nothing_eligible_gives_reason() -> None:
    view = snapshot({"p1": [("a", 10)]}, pending_clustering=[("p1", fid("a"))])
    outcome = plan_clustering(view, config_of(), NOW)
    assert outcome.plan is None
    assert outcome.reason.startswith("no data available to cluster: 1 latest file slices in 1 partitions")
    assert "1 in pending clustering" in outcome.reason


def test_plan_no_partition_selected_gives_reason() -> None:
    config = config_of({"hoodie.clustering.plan.strategy.partition.regex.pattern": "nope"})
    outcome = plan_clustering(snapshot({"p1": [("a", 10), ("b", 5)]}), config, NOW)
    assert outcome.plan is None
    assert outcome.reason == "no partition selected (filter mode NONE, 1 partitions listed)"


def test_build_groups_takes_slices_of_one_partition() -> None:
    view = snapshot({"p1": [("a", 30), ("b", 30), ("c", 50)]})
    config = config_of()
    groups = build_groups("p1", eligible_slices(view, "p1", config), config)
    assert [len(g.slices) for g in groups] == [2, 1]
    assert groups[0].slices[0].file_id == fid("c")
    assert groups[0].size_bytes == 80 * MB


def test_plan_java_order_counts_every_listed_file_group() -> None:
    # Java's hash set holds every listed file id of the partition, replaced ones included: with 20
    # ids it has 32 buckets, where g0 comes before g17 (with only those two, 16 buckets: g17 first).
    # Equal sizes make that order the cut point.
    view = snapshot(
        {"p1": [(f"g{i}", 50) for i in range(20)]},
        replaced=[("p1", fid(f"g{i}")) for i in range(20) if i not in (0, 17)],
    )
    assert _groups_of(view) == [("p1", ["g0", "g17"], 2)]
    assert _groups({"p1": [("g0", 50), ("g17", 50)]}) == [("p1", ["g17", "g0"], 2)]


def _groups_of(
    view: FileSystemView, config: dict[str, object] | None = None
) -> list[tuple[str, list[str], int]]:
    outcome = plan_clustering(view, config_of(config), NOW)
    assert outcome.plan is not None, outcome.reason
    return grouping(outcome.plan.groups)


# ---------------------------------------------------------------- clustering.max_bytes_per_run
def _missing(files: Mapping[str, Sequence[tuple[str, float]]], **config: object) -> tuple[str, ...]:
    outcome = plan_clustering(snapshot(files), config_of(dict(config)), NOW)
    assert outcome.plan is not None, outcome.reason
    return outcome.plan.missing_partitions


def test_missing_partitions_are_those_whose_candidates_the_plan_did_not_all_take() -> None:
    """Hudi 1.x's `missingSchedulePartitions`: a partition stopped by `max.num.groups` (partly
    scheduled), and the partitions of groups past the plan-wide cut; each once."""
    files = {p: [(f"{p}1", 55), (f"{p}2", 54), (f"{p}3", 53)] for p in ("a", "b", "c")}
    assert _missing(files) == ()
    # Two groups at most: every partition stops after two of its three slices (partly scheduled).
    assert _missing(files, **{MAX_GROUPS: 2}) == ("a", "b", "c")
    # Three: a's three groups fill the plan; b's and c's fall past the plan-wide cut.
    assert _missing(files, **{MAX_GROUPS: 3}) == ("b", "c")
    # The product's per-run budget defers whole groups: their partitions are missing too.
    outcome = _budgeted({"p1": [("a", 60), ("b", 40), ("c", 50)], "p2": [("d", 30), ("e", 30)]}, 150)
    assert outcome.plan is not None and outcome.plan.missing_partitions == ("p2",)


def _budgeted(files: Mapping[str, Sequence[tuple[str, float]]], budget_mb: float) -> PlanOutcome:
    return plan_clustering(snapshot(files), config_of({}), NOW, max_bytes_per_run=int(budget_mb * MB))


def test_budget_keeps_whole_groups_in_plan_order_up_to_the_byte_budget() -> None:
    files = {"p1": [("a", 60), ("b", 40), ("c", 50)], "p2": [("d", 30), ("e", 30)]}
    # Unbudgeted: p1 [a]=60 (a+c would pass 100), [c,b]=90; p2 [d,e]=60.
    assert _groups(files) == [("p1", ["a"], 1), ("p1", ["c", "b"], 2), ("p2", ["d", "e"], 1)]
    outcome = _budgeted(files, 150)
    assert outcome.plan is not None
    assert grouping(outcome.plan.groups) == [("p1", ["a"], 1), ("p1", ["c", "b"], 2)]
    assert outcome.plan.input_bytes == 150 * MB
    assert "1 more groups left for a later run (clustering.max_bytes_per_run=" in outcome.reason
    # Stops at the first group over the budget: the later p2 group (a+d,e = 120) does not jump the queue.
    outcome = _budgeted(files, 149)
    assert outcome.plan is not None and grouping(outcome.plan.groups) == [("p1", ["a"], 1)]


def test_budget_below_the_first_group_plans_nothing_and_says_which_setting() -> None:
    outcome = _budgeted({"p1": [("a", 60), ("b", 40)]}, 99)
    assert outcome.plan is None
    assert "exceeds clustering.max_bytes_per_run" in outcome.reason
    assert "hoodie.clustering.plan.strategy.max.bytes.per.group" in outcome.reason


def test_within_budget_is_the_identity_without_a_budget() -> None:
    outcome = plan_clustering(snapshot({"p1": [("a", 60), ("b", 40), ("c", 50)]}), config_of({}), NOW)
    assert outcome.plan is not None
    groups = list(outcome.plan.groups)
    assert within_budget(groups, None) == groups
    assert within_budget(groups, 0) == []
    assert within_budget(groups, groups[0].size_bytes) == groups[:1]


BATCH_FILES = {
    "2024/01/03": [("c1", 10), ("c2", 20), ("c3", 250), ("c4", 30)],
    "2024/01/01": [("a1", 40), ("a2", 50), ("a3", 500)],
    "2024/01/05": [("e1", 60), ("e2", 70), ("e3", 80)],
    "2024/01/02": [("b1", 15), ("b2", 25)],
    "2024/01/04": [("d1", 5)],
}
FILTER = "hoodie.clustering.plan.partition.filter.mode"
RANGE = "hoodie.clustering.plan.strategy.cluster"


@pytest.mark.parametrize(
    "config",
    [
        {MAX_GROUPS: 3},
        {FILTER: "RECENT_DAYS", "hoodie.clustering.plan.strategy.daybased.lookback.partitions": 2,
         "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions": 1},
        {FILTER: "DAY_ROLLING"},
        {FILTER: "SELECTED_PARTITIONS", f"{RANGE}.begin.partition": "2024/01/02",
         f"{RANGE}.end.partition": "2024/01/04"},
        {"hoodie.clustering.plan.strategy.partition.regex.pattern": "2024/01/0[135]", MAX_GROUPS: 2},
        {"hoodie.clustering.plan.strategy.partition.selected": "2024/01/05,2024/09/09,2024/01/02"},
    ],
    ids=["none_capped", "recent_days", "day_rolling", "selected_range", "regex_capped", "selected_list"],
)  # fmt: skip
def test_a_plan_over_batches_of_partitions_is_the_plan_over_one_view(config: dict[str, object]) -> None:
    """The scheduler plans over `HudiTable.iter_views`' batches of partitions, in any order (through
    their survey): the plan, its reason and counts, the missing partitions and the small files (with
    and without pending plans' slices) are those of one view, whatever the partition filter."""
    from strategies.clustering import small_files

    pending = {"pending_clustering": [("2024/01/03", fid("c2"))], "log_files": [("2024/01/05", fid("e2"))]}
    whole = snapshot(BATCH_FILES, **pending)  # type: ignore[arg-type]
    cfg = config_of(config)

    def batches() -> list[FileSystemView]:
        return [snapshot({p: files}, **pending) for p, files in reversed(BATCH_FILES.items())]  # type: ignore[arg-type]

    outcome = plan_clustering(whole, cfg, NOW)
    assert plan_clustering(iter(batches()), cfg, NOW) == outcome
    # Every selected partition is counted as looked at, one the listing lacks too (Java lists it empty).
    assert outcome.counts.partitions == len(outcome.partitions)
    # Two equal nothings prove nothing: but for DAY_ROLLING (whose hour may select none of the five
    # partitions), each configuration plans groups.
    assert outcome.plan is not None or config.get(FILTER) == "DAY_ROLLING", outcome.reason
    for with_pending in (False, True):
        expected = small_files(whole, cfg, NOW, include_pending_clustering=with_pending)
        assert small_files(iter(batches()), cfg, NOW, include_pending_clustering=with_pending) == expected
        assert expected.count > 0 or config.get(FILTER) == "DAY_ROLLING"
