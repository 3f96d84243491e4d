"""Partition selection: explicit list, regex, and the four filter modes, as Hudi 0.15 applies them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from service.config.clustering import PartitionFilterMode
from strategies.clustering import day_rolling, recent_days, regex_matched, select_partitions, selected_range
from tests.plan.snapshots import NOW, config_of

_PLAN = "org.apache.hudi.client.clustering.plan.strategy."
DAYS = [f"2024/01/{d:02d}" for d in (3, 1, 5, 2, 4)]  # listing order, deliberately unsorted


def test_select_partitions_none_mode_keeps_listing_order() -> None:
    assert select_partitions(DAYS, config_of(), NOW) == DAYS


def test_regex_matched_requires_whole_path_match() -> None:
    assert regex_matched(DAYS, r"2024/01/0[12]") == ["2024/01/01", "2024/01/02"]
    assert regex_matched(DAYS, "2024") == []  # Java's Pattern.matches: the whole path, not a prefix
    assert regex_matched(DAYS, None) == DAYS


def test_select_partitions_applies_regex_before_the_filter_mode() -> None:
    config = config_of(
        {
            "hoodie.clustering.plan.strategy.partition.regex.pattern": "2024/01/0[1-4]",
            "hoodie.clustering.plan.partition.filter.mode": "RECENT_DAYS",
            "hoodie.clustering.plan.strategy.daybased.lookback.partitions": 2,
        }
    )
    assert select_partitions(DAYS, config, NOW) == ["2024/01/04", "2024/01/03"]


def test_select_partitions_selected_list_replaces_listing_and_regex() -> None:
    config = config_of(
        {
            "hoodie.clustering.plan.strategy.partition.selected": "2024/01/05,2024/01/01,2024/09/09",
            "hoodie.clustering.plan.strategy.partition.regex.pattern": "nothing",
        }
    )
    # Taken as given, in the given order, and not checked against the listing (as Java).
    assert select_partitions(DAYS, config, NOW) == ["2024/01/05", "2024/01/01", "2024/09/09"]


def test_recent_days_sorts_descending_skips_then_limits() -> None:
    assert recent_days(DAYS, lookback=2, skip_from_latest=1) == ["2024/01/04", "2024/01/03"]
    assert recent_days(DAYS, lookback=2, skip_from_latest=0) == ["2024/01/05", "2024/01/04"]
    assert recent_days(DAYS, lookback=0, skip_from_latest=3) == ["2024/01/02", "2024/01/01"]
    assert recent_days(DAYS, lookback=-1, skip_from_latest=-5) == sorted(DAYS, reverse=True)
    assert recent_days(DAYS, lookback=3, skip_from_latest=9) == []


def test_recent_days_sorts_by_java_string_order() -> None:
    # Java compares UTF-16 code units: a supplementary character (surrogate pair, 0xD83D...) sorts
    # before U+FF01, the reverse of code point order.
    emoji, fullwidth = "p\U0001f600", "p\uff01"
    assert recent_days([emoji, fullwidth], lookback=1, skip_from_latest=0) == [fullwidth]


def test_selected_range_is_inclusive_and_keeps_listing_order() -> None:
    assert selected_range(DAYS, "2024/01/02", "2024/01/04") == ["2024/01/03", "2024/01/02", "2024/01/04"]
    assert selected_range(DAYS, "2024/01/04", None) == ["2024/01/05", "2024/01/04"]
    assert selected_range(DAYS, None, "2024/01/01") == ["2024/01/01"]


def test_select_partitions_selected_partitions_mode_uses_begin_and_end() -> None:
    config = config_of(
        {
            "hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
            "hoodie.clustering.plan.strategy.cluster.begin.partition": "2024/01/02",
            "hoodie.clustering.plan.strategy.cluster.end.partition": "2024/01/03",
        }
    )
    assert select_partitions(DAYS, config, NOW) == ["2024/01/03", "2024/01/02"]


def test_day_rolling_takes_every_24th_partition_from_the_hour() -> None:
    partitions = [f"p{i:02d}" for i in range(50)]
    assert day_rolling(list(reversed(partitions)), hour_of_day=3) == ["p03", "p27"]
    assert day_rolling(partitions, hour_of_day=23) == ["p23", "p47"]
    assert day_rolling(DAYS, hour_of_day=5) == []


def test_select_partitions_day_rolling_uses_hour_of_now() -> None:
    config = config_of({"hoodie.clustering.plan.partition.filter.mode": "DAY_ROLLING"})
    partitions = [f"p{i:02d}" for i in range(30)]
    at_hour_4 = datetime(2024, 3, 1, 4, 59, tzinfo=UTC)
    assert select_partitions(partitions, config, at_hour_4) == ["p04", "p28"]


@pytest.mark.parametrize(
    ("plan_class", "mode"),
    [
        ("SparkRecentDaysClusteringPlanStrategy", PartitionFilterMode.RECENT_DAYS),
        ("SparkSelectedPartitionsClusteringPlanStrategy", PartitionFilterMode.SELECTED_PARTITIONS),
        ("SparkSizeBasedClusteringPlanStrategy", PartitionFilterMode.NONE),
    ],
)
def test_select_partitions_strategy_class_sets_its_filter_mode(
    plan_class: str, mode: PartitionFilterMode
) -> None:
    config = config_of(
        {
            "hoodie.clustering.plan.strategy.class": _PLAN + plan_class,
            "hoodie.clustering.plan.strategy.cluster.begin.partition": "2024/01/04",
            "hoodie.clustering.plan.strategy.cluster.end.partition": "2024/01/05",
            "hoodie.clustering.plan.strategy.daybased.lookback.partitions": 1,
        }
    )
    assert config.partition_filter_mode is mode
    expected = {
        PartitionFilterMode.RECENT_DAYS: ["2024/01/05"],
        PartitionFilterMode.SELECTED_PARTITIONS: ["2024/01/05", "2024/01/04"],
        PartitionFilterMode.NONE: DAYS,
    }[mode]
    assert select_partitions(DAYS, config, NOW) == expected
