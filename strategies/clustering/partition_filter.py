"""Which partitions a clustering plan looks at, exactly as Hudi 0.15's plan strategies choose them.

`PartitionAwareClusteringPlanStrategy.generateClusteringPlan`: the explicit list
(`...partition.selected`, taken as given, without listing) or else every partition matching
`...partition.regex.pattern` (a whole-string match); then `ClusteringPlanPartitionFilter` by mode:

- NONE: unchanged, in listing order.
- RECENT_DAYS: sorted descending (partition paths of dates sort newest first), skip
  `skipfromlatest` (negatives count as 0), keep `lookback` (<= 0 keeps all).
- SELECTED_PARTITIONS: `begin <= p <= end` (each bound only if set), listing order kept.
- DAY_ROLLING: sorted ascending, keep the partitions at index i with `i % 24 == hour of now`, so each
  partition comes up once a day when planning runs hourly.

Comparisons use Java's `String.compareTo`. Python's `re` stands in for `java.util.regex`; the two
agree on the usual patterns (literals, classes, alternation, quantifiers), not on every construct.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from service.config.clustering import ClusteringConfig, PartitionFilterMode
from service.table.java_string_order import java_compare, java_sort_key

HOURS_PER_DAY = 24


def candidate_partitions(listed: Sequence[str], config: ClusteringConfig) -> list[str]:
    """The explicitly selected partitions, else the listed ones matching the regex pattern."""
    if config.selected_partitions:
        return list(config.selected_partitions)
    return regex_matched(listed, config.partition_regex_pattern)


def regex_matched(partitions: Sequence[str], pattern: str | None) -> list[str]:
    if not pattern:
        return list(partitions)
    compiled = re.compile(pattern)
    return [p for p in partitions if compiled.fullmatch(p)]


def recent_days(partitions: Sequence[str], lookback: int, skip_from_latest: int) -> list[str]:
    newest_first = sorted(partitions, key=java_sort_key, reverse=True)
    kept = newest_first[max(skip_from_latest, 0) :]
    return kept[:lookback] if lookback > 0 else kept


def selected_range(partitions: Sequence[str], begin: str | None, end: str | None) -> list[str]:
    return [
        p
        for p in partitions
        if (begin is None or java_compare(p, begin) >= 0) and (end is None or java_compare(p, end) <= 0)
    ]


def day_rolling(partitions: Sequence[str], hour_of_day: int) -> list[str]:
    ordered = sorted(partitions, key=java_sort_key)
    return [p for i, p in enumerate(ordered) if i % HOURS_PER_DAY == hour_of_day]


def filter_partitions(partitions: Sequence[str], config: ClusteringConfig, now: datetime) -> list[str]:
    """`ClusteringPlanPartitionFilter.filter` for the config's (effective) filter mode.

    `now` is in the writers' time zone: DAY_ROLLING uses its hour as Java uses the JVM's local hour.
    """
    mode = config.partition_filter_mode
    if mode is PartitionFilterMode.NONE:
        return list(partitions)
    if mode is PartitionFilterMode.RECENT_DAYS:
        return recent_days(partitions, config.lookback_partitions, config.skip_from_latest_partitions)
    if mode is PartitionFilterMode.SELECTED_PARTITIONS:
        return selected_range(partitions, config.begin_partition, config.end_partition)
    return day_rolling(partitions, now.hour)


def select_partitions(listed: Sequence[str], config: ClusteringConfig, now: datetime) -> list[str]:
    """The partitions to plan over, in the order Hudi visits them (which decides who gets the groups)."""
    return filter_partitions(candidate_partitions(listed, config), config, now)
