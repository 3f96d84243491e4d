"""`ClusteringConfig`: Hudi's `HoodieClusteringConfig` keys as one typed, validated, frozen view."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import auto
from typing import Generic, TypeVar

from service.config.hoodie_keys import (
    CLUSTERING_PLAN_STRATEGY_CLASS,
    CLUSTERING_UPDATES_STRATEGY,
    SORT_COLUMNS,
)
from service.config.reader import KeyReader
from service.config.values import JavaEnum

_PLAN = "org.apache.hudi.client.clustering.plan.strategy."
_UPDATE = "org.apache.hudi.client.clustering.update.strategy."

SORT_COLUMNS_KEY = SORT_COLUMNS


class ClusteringPlanKind(JavaEnum):
    """The plan strategy a class name asks for; each runs as size-based planning plus a partition filter."""

    SIZE_BASED = auto()
    RECENT_DAYS = auto()
    SELECTED_PARTITIONS = auto()


class PartitionFilterMode(JavaEnum):
    NONE = auto()
    RECENT_DAYS = auto()
    SELECTED_PARTITIONS = auto()
    DAY_ROLLING = auto()


class LayoutStrategy(JavaEnum):
    """How clustering orders the rows of each output group (`hoodie.layout.optimize.strategy`)."""

    LINEAR = auto()  # lexicographic by the sort columns
    ZORDER = auto()  # along the Z-order (Morton) curve of the sort columns
    HILBERT = auto()  # along the Hilbert curve of the sort columns

    @property
    def is_curve(self) -> bool:
        return self is not LayoutStrategy.LINEAR


class CurveBuildMethod(JavaEnum):
    """How each sort column becomes a curve coordinate (`hoodie.layout.optimize.curve.build.method`)."""

    DIRECT = auto()  # the value's own order-preserving bits (no pass over the data)
    SAMPLE = auto()  # the value's range bucket, from quantiles of a sample (balanced dimensions)


class UpdateStrategy(JavaEnum):
    """What Java writers do with updates to file groups in a pending clustering plan (`UpdateStrategy`)."""

    REJECT = auto()
    ALLOW = auto()


# Hudi's plan strategy classes (Spark, Java, Flink engines). The deprecated recent-days and
# selected-partitions classes behave as size-based planning with that filter mode; Hudi's
# `ClusteringPlanStrategy.checkAndGetClusteringPlanStrategy` overrides the filter mode for them.
PLAN_STRATEGY_CLASSES: Mapping[str, ClusteringPlanKind] = {
    _PLAN + "SparkSizeBasedClusteringPlanStrategy": ClusteringPlanKind.SIZE_BASED,
    _PLAN + "JavaSizeBasedClusteringPlanStrategy": ClusteringPlanKind.SIZE_BASED,
    _PLAN + "FlinkSizeBasedClusteringPlanStrategy": ClusteringPlanKind.SIZE_BASED,
    _PLAN + "SparkRecentDaysClusteringPlanStrategy": ClusteringPlanKind.RECENT_DAYS,
    _PLAN + "JavaRecentDaysClusteringPlanStrategy": ClusteringPlanKind.RECENT_DAYS,
    _PLAN + "FlinkRecentDaysClusteringPlanStrategy": ClusteringPlanKind.RECENT_DAYS,
    _PLAN + "SparkSelectedPartitionsClusteringPlanStrategy": ClusteringPlanKind.SELECTED_PARTITIONS,
    _PLAN + "FlinkSelectedPartitionsClusteringPlanStrategy": ClusteringPlanKind.SELECTED_PARTITIONS,
}

# Real Hudi classes whose plans the product cannot produce.
UNSUPPORTED_PLAN_STRATEGY_CLASSES: Mapping[str, str] = {
    _PLAN + "SparkSingleFileSortPlanStrategy": "one-file groups that reuse file ids",
    _PLAN + "SparkConsistentBucketClusteringPlanStrategy": "consistent-hashing bucket index tables",
    _PLAN + "FlinkConsistentBucketClusteringPlanStrategy": "consistent-hashing bucket index tables",
}

UPDATE_STRATEGY_CLASSES: Mapping[str, UpdateStrategy] = {
    _UPDATE + "SparkRejectUpdateStrategy": UpdateStrategy.REJECT,
    _UPDATE + "SparkAllowUpdateStrategy": UpdateStrategy.ALLOW,
}

UNSUPPORTED_UPDATE_STRATEGY_CLASSES: Mapping[str, str] = {
    _UPDATE + "SparkConsistentBucketDuplicateUpdateStrategy": "consistent-hashing bucket index tables",
}

_FILTER_OF_KIND = {
    ClusteringPlanKind.RECENT_DAYS: PartitionFilterMode.RECENT_DAYS,
    ClusteringPlanKind.SELECTED_PARTITIONS: PartitionFilterMode.SELECTED_PARTITIONS,
}


@dataclass(frozen=True)
class ClusteringConfig:
    """Clustering settings with Hudi's defaults; `partition_filter_mode` is the effective mode."""

    inline: bool
    schedule_inline: bool
    async_enabled: bool
    inline_max_commits: int
    async_max_commits: int
    max_parallelism: int
    plan_strategy_class: str
    plan_strategy_kind: ClusteringPlanKind
    execution_strategy_class: str
    small_file_limit_bytes: int
    max_bytes_per_group: int
    max_num_groups: int
    target_file_max_bytes: int
    single_group_clustering_enabled: bool
    sort_columns: tuple[str, ...]
    sort_columns_value: str | None  # as configured; Java copies this string into strategyParams
    partition_filter_mode: PartitionFilterMode
    lookback_partitions: int  # RECENT_DAYS; <= 0 means every partition
    skip_from_latest_partitions: int  # RECENT_DAYS; negative counts as 0
    begin_partition: str | None  # SELECTED_PARTITIONS, inclusive
    end_partition: str | None  # SELECTED_PARTITIONS, inclusive
    partition_regex_pattern: str | None
    selected_partitions: tuple[str, ...]
    update_strategy_class: str
    update_strategy: UpdateStrategy
    rollback_pending_on_conflict: bool
    # Hudi 1.2's `isClusteringInstantEligibleForRollback` (BaseHoodieTableServiceClient).
    expirations_enabled: bool
    expiration_threshold_mins: int
    layout_strategy: LayoutStrategy
    curve_build_method: CurveBuildMethod
    sample_size: int

    @property
    def should_cluster_single_group(self) -> bool:
        """Whether a group with one file slice is kept; Hudi keeps it when sorting, whatever the flag says."""
        return self.single_group_clustering_enabled or bool(self.sort_columns_value)

    @property
    def strategy_params(self) -> dict[str, str]:
        """`HoodieClusteringStrategy.strategyParams` as Java's size-based plan strategy fills it."""
        return {SORT_COLUMNS_KEY: self.sort_columns_value} if self.sort_columns_value else {}

    @classmethod
    def from_reader(cls, r: KeyReader) -> ClusteringConfig:
        plan_class, kind = _PLAN_STRATEGY_KEY.resolve(r)
        configured_mode = PartitionFilterMode(r.get_str("hoodie.clustering.plan.partition.filter.mode"))
        filter_mode = _FILTER_OF_KIND.get(kind, configured_mode)
        update_class, update_strategy = _UPDATE_STRATEGY_KEY.resolve(r)
        sort_value = r.get_optional_str(SORT_COLUMNS_KEY)
        config = cls(
            inline=r.get_bool("hoodie.clustering.inline"),
            schedule_inline=r.get_bool("hoodie.clustering.schedule.inline"),
            async_enabled=r.get_bool("hoodie.clustering.async.enabled"),
            inline_max_commits=r.get_int("hoodie.clustering.inline.max.commits"),
            async_max_commits=r.get_int("hoodie.clustering.async.max.commits"),
            max_parallelism=r.get_int("hoodie.clustering.max.parallelism"),
            plan_strategy_class=plan_class,
            plan_strategy_kind=kind,
            execution_strategy_class=r.get_str("hoodie.clustering.execution.strategy.class").strip(),
            small_file_limit_bytes=r.get_int("hoodie.clustering.plan.strategy.small.file.limit"),
            max_bytes_per_group=r.get_int("hoodie.clustering.plan.strategy.max.bytes.per.group"),
            max_num_groups=r.get_int("hoodie.clustering.plan.strategy.max.num.groups"),
            target_file_max_bytes=r.get_int("hoodie.clustering.plan.strategy.target.file.max.bytes"),
            single_group_clustering_enabled=r.get_bool(
                "hoodie.clustering.plan.strategy.single.group.clustering.enabled"
            ),
            sort_columns=_split_list(sort_value),
            sort_columns_value=sort_value,
            partition_filter_mode=filter_mode,
            lookback_partitions=r.get_int("hoodie.clustering.plan.strategy.daybased.lookback.partitions"),
            skip_from_latest_partitions=r.get_int(
                "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions"
            ),
            begin_partition=r.get_optional_str("hoodie.clustering.plan.strategy.cluster.begin.partition"),
            end_partition=r.get_optional_str("hoodie.clustering.plan.strategy.cluster.end.partition"),
            partition_regex_pattern=r.get_optional_str(
                "hoodie.clustering.plan.strategy.partition.regex.pattern"
            ),
            selected_partitions=_split_list(
                r.get_optional_str("hoodie.clustering.plan.strategy.partition.selected")
            ),
            update_strategy_class=update_class,
            update_strategy=update_strategy,
            rollback_pending_on_conflict=r.get_bool(
                "hoodie.clustering.rollback.pending.replacecommit.on.conflict"
            ),
            expirations_enabled=r.get_bool("hoodie.clustering.enable.expirations"),
            expiration_threshold_mins=r.get_int("hoodie.clustering.expiration.threshold.mins"),
            layout_strategy=LayoutStrategy(r.get_str("hoodie.layout.optimize.strategy")),
            curve_build_method=CurveBuildMethod(r.get_str("hoodie.layout.optimize.curve.build.method")),
            sample_size=r.get_int("hoodie.layout.optimize.build.curve.sample.size"),
        )
        config._validate(r)
        return config

    def _validate(self, r: KeyReader) -> None:
        if self.inline and self.schedule_inline:
            # Hudi's HoodieClusteringConfig.Builder refuses the same combination.
            raise r.error(
                "hoodie.clustering.schedule.inline",
                "cannot be combined with hoodie.clustering.inline=true (Hudi allows only one of them)",
            )
        if self.partition_filter_mode is PartitionFilterMode.SELECTED_PARTITIONS:
            for key, value in (
                ("hoodie.clustering.plan.strategy.cluster.begin.partition", self.begin_partition),
                ("hoodie.clustering.plan.strategy.cluster.end.partition", self.end_partition),
            ):
                if value is None:
                    raise r.error(key, "must be set: the partition filter mode is SELECTED_PARTITIONS")
            assert self.begin_partition is not None and self.end_partition is not None
            if self.begin_partition > self.end_partition:
                raise r.error(
                    "hoodie.clustering.plan.strategy.cluster.begin.partition",
                    f"sorts after the end partition {self.end_partition!r}; no partition can match",
                )
        if self.partition_regex_pattern is not None:
            try:
                re.compile(self.partition_regex_pattern)
            except re.error as exc:
                raise r.error(
                    "hoodie.clustering.plan.strategy.partition.regex.pattern", f"is not a valid regex: {exc}"
                ) from None


def _split_list(value: str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _closest(name: str, candidates: list[str]) -> str:
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.0)
    return matches[0] if matches else candidates[0]


_Choice = TypeVar("_Choice")


@dataclass(frozen=True)
class _ClassKey(Generic[_Choice]):
    """A `*.class`-style key naming a Hudi class: the classes the product implements, and the real Hudi
    classes it refuses, each with why (`reason` frames it for the error message)."""

    key: str
    what: str
    known: Mapping[str, _Choice]
    unsupported: Mapping[str, str]
    reason: str

    def resolve(self, r: KeyReader) -> tuple[str, _Choice]:
        """The configured class name and what it selects; ConfigError for a Hudi class the product
        does not implement, or a typo."""
        class_name = r.get_str(self.key).strip()
        if class_name in self.known:
            return class_name, self.known[class_name]
        if class_name in self.unsupported:
            why = self.reason.format(self.unsupported[class_name])
            raise r.error(self.key, f"is not supported by the product ({why})")
        closest = _closest(class_name, list(self.known))
        raise r.error(self.key, f"is not a known {self.what}; closest known: {closest}")


_PLAN_STRATEGY_KEY = _ClassKey(
    CLUSTERING_PLAN_STRATEGY_CLASS,
    "clustering plan strategy class",
    PLAN_STRATEGY_CLASSES,
    UNSUPPORTED_PLAN_STRATEGY_CLASSES,
    "it plans {}",
)
_UPDATE_STRATEGY_KEY = _ClassKey(
    CLUSTERING_UPDATES_STRATEGY,
    "clustering update strategy class",
    UPDATE_STRATEGY_CLASSES,
    UNSUPPORTED_UPDATE_STRATEGY_CLASSES,
    "it is for {}",
)
