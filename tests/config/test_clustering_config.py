"""ClusteringConfig: strategy class names, partition filters, layout, update strategy and checks."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from service.config.clustering import (
    ClusteringConfig,
    ClusteringPlanKind,
    CurveBuildMethod,
    LayoutStrategy,
    PartitionFilterMode,
    UpdateStrategy,
)
from service.config.hoodie import HoodieConfig
from service.errors import ConfigError

PLAN = "org.apache.hudi.client.clustering.plan.strategy."
UPDATE = "org.apache.hudi.client.clustering.update.strategy."
PLAN_KEY = "hoodie.clustering.plan.strategy.class"
MODE_KEY = "hoodie.clustering.plan.partition.filter.mode"
BEGIN_KEY = "hoodie.clustering.plan.strategy.cluster.begin.partition"
END_KEY = "hoodie.clustering.plan.strategy.cluster.end.partition"


def clustering(mapping: Mapping[str, object]) -> ClusteringConfig:
    return HoodieConfig.from_mapping(mapping, "orders").clustering


@pytest.mark.parametrize(
    ("class_name", "configured_mode", "kind", "effective_mode"),
    [
        (
            "SparkSizeBasedClusteringPlanStrategy",
            "NONE",
            ClusteringPlanKind.SIZE_BASED,
            PartitionFilterMode.NONE,
        ),
        (
            "JavaSizeBasedClusteringPlanStrategy",
            "DAY_ROLLING",
            ClusteringPlanKind.SIZE_BASED,
            PartitionFilterMode.DAY_ROLLING,
        ),
        (
            "FlinkSizeBasedClusteringPlanStrategy",
            "RECENT_DAYS",
            ClusteringPlanKind.SIZE_BASED,
            PartitionFilterMode.RECENT_DAYS,
        ),
        # deprecated classes: Hudi rewrites the filter mode whatever was configured
        (
            "SparkRecentDaysClusteringPlanStrategy",
            "NONE",
            ClusteringPlanKind.RECENT_DAYS,
            PartitionFilterMode.RECENT_DAYS,
        ),
        (
            "JavaRecentDaysClusteringPlanStrategy",
            "DAY_ROLLING",
            ClusteringPlanKind.RECENT_DAYS,
            PartitionFilterMode.RECENT_DAYS,
        ),
        (
            "FlinkRecentDaysClusteringPlanStrategy",
            "NONE",
            ClusteringPlanKind.RECENT_DAYS,
            PartitionFilterMode.RECENT_DAYS,
        ),
        (
            "SparkSelectedPartitionsClusteringPlanStrategy",
            "RECENT_DAYS",
            ClusteringPlanKind.SELECTED_PARTITIONS,
            PartitionFilterMode.SELECTED_PARTITIONS,
        ),
        (
            "FlinkSelectedPartitionsClusteringPlanStrategy",
            "NONE",
            ClusteringPlanKind.SELECTED_PARTITIONS,
            PartitionFilterMode.SELECTED_PARTITIONS,
        ),
    ],
)
def test_clustering_plan_class_maps_to_kind_and_filter_mode(
    class_name: str, configured_mode: str, kind: ClusteringPlanKind, effective_mode: PartitionFilterMode
) -> None:
    config = clustering(
        {
            PLAN_KEY: PLAN + class_name,
            MODE_KEY: configured_mode,
            BEGIN_KEY: "2024/01/01",
            END_KEY: "2024/01/31",
        }
    )
    assert config.plan_strategy_kind is kind
    assert config.partition_filter_mode is effective_mode
    assert config.plan_strategy_class == PLAN + class_name


@pytest.mark.parametrize(
    ("class_name", "message"),
    [
        (PLAN + "SparkSingleFileSortPlanStrategy", "is not supported by the product"),
        (PLAN + "SparkConsistentBucketClusteringPlanStrategy", "consistent-hashing bucket index"),
        (
            PLAN + "SparkSizeBasedClusteringPlanStrateg",
            f"closest known: {PLAN}SparkSizeBasedClusteringPlanStrategy",
        ),
        (
            "SparkSizeBasedClusteringPlanStrategy",
            f"closest known: {PLAN}SparkSizeBasedClusteringPlanStrategy",
        ),
    ],
)
def test_clustering_plan_class_unknown_or_unsupported_rejected(class_name: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        clustering({PLAN_KEY: class_name})
    assert str(info.value).startswith(f"table 'orders': {PLAN_KEY}={class_name!r}")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("class_name", "expected"),
    [
        ("SparkRejectUpdateStrategy", UpdateStrategy.REJECT),
        ("SparkAllowUpdateStrategy", UpdateStrategy.ALLOW),
    ],
)
def test_clustering_update_strategy_from_class_name(class_name: str, expected: UpdateStrategy) -> None:
    config = clustering({"hoodie.clustering.updates.strategy": UPDATE + class_name})
    assert config.update_strategy is expected
    assert config.update_strategy_class == UPDATE + class_name


@pytest.mark.parametrize(
    "class_name",
    [UPDATE + "SparkConsistentBucketDuplicateUpdateStrategy", UPDATE + "SparkIgnoreUpdateStrategy"],
)
def test_clustering_update_strategy_unknown_rejected(class_name: str) -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.clustering\.updates\.strategy="):
        clustering({"hoodie.clustering.updates.strategy": class_name})


def test_clustering_selected_partitions_needs_begin_and_end() -> None:
    with pytest.raises(ConfigError) as info:
        clustering({MODE_KEY: "SELECTED_PARTITIONS", END_KEY: "2024/02/01"})
    assert str(info.value) == (
        f"table 'orders': {BEGIN_KEY} must be set: the partition filter mode is SELECTED_PARTITIONS"
    )


def test_clustering_selected_partitions_begin_after_end_rejected() -> None:
    with pytest.raises(ConfigError, match="sorts after the end partition"):
        clustering({MODE_KEY: "SELECTED_PARTITIONS", BEGIN_KEY: "2024/03/01", END_KEY: "2024/02/01"})


def test_clustering_filter_params_parsed() -> None:
    config = clustering(
        {
            MODE_KEY: "RECENT_DAYS",
            "hoodie.clustering.plan.strategy.daybased.lookback.partitions": "7",
            "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions": "1",
            "hoodie.clustering.plan.strategy.partition.regex.pattern": r"dt=\d{4}-\d{2}-\d{2}",
            "hoodie.clustering.plan.strategy.partition.selected": "dt=2024-01-01, dt=2024-01-02,",
        }
    )
    assert config.partition_filter_mode is PartitionFilterMode.RECENT_DAYS
    assert (config.lookback_partitions, config.skip_from_latest_partitions) == (7, 1)
    assert config.partition_regex_pattern == r"dt=\d{4}-\d{2}-\d{2}"
    assert config.selected_partitions == ("dt=2024-01-01", "dt=2024-01-02")


def test_clustering_invalid_partition_regex_rejected() -> None:
    with pytest.raises(ConfigError, match=r"partition\.regex\.pattern='dt=\(' is not a valid regex"):
        clustering({"hoodie.clustering.plan.strategy.partition.regex.pattern": "dt=("})


def test_clustering_sort_columns_and_strategy_params() -> None:
    config = clustering({"hoodie.clustering.plan.strategy.sort.columns": "city, ts"})
    assert config.sort_columns == ("city", "ts")
    # Java copies the configured string verbatim into the plan's strategyParams
    assert config.strategy_params == {"hoodie.clustering.plan.strategy.sort.columns": "city, ts"}
    assert clustering({}).strategy_params == {}


@pytest.mark.parametrize(
    ("mapping", "strategy", "method"),
    [
        ({"hoodie.layout.optimize.strategy": "z-order"}, LayoutStrategy.ZORDER, CurveBuildMethod.DIRECT),
        (
            {
                "hoodie.layout.optimize.strategy": "Hilbert",
                "hoodie.layout.optimize.curve.build.method": "sample",
            },
            LayoutStrategy.HILBERT,
            CurveBuildMethod.SAMPLE,
        ),
        (
            {"hoodie.layout.optimize.build.curve.method": "SAMPLE"},
            LayoutStrategy.LINEAR,
            CurveBuildMethod.SAMPLE,
        ),
    ],
)
def test_clustering_layout_strategy_and_curve_method(
    mapping: dict[str, object], strategy: LayoutStrategy, method: CurveBuildMethod
) -> None:
    config = clustering(mapping)
    assert (config.layout_strategy, config.curve_build_method) == (strategy, method)


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({}, True),
        ({"hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false"}, False),
        # Hudi's shouldClusteringSingleGroup(): sorting a lone file slice is still worth a group
        (
            {
                "hoodie.clustering.plan.strategy.single.group.clustering.enabled": "false",
                "hoodie.clustering.plan.strategy.sort.columns": "ts",
            },
            True,
        ),
    ],
)
def test_clustering_single_group_follows_hudi(mapping: dict[str, object], expected: bool) -> None:
    assert clustering(mapping).should_cluster_single_group is expected


def test_clustering_inline_and_schedule_inline_together_rejected() -> None:
    with pytest.raises(ConfigError, match=r"cannot be combined with hoodie\.clustering\.inline=true"):
        clustering({"hoodie.clustering.inline": "true", "hoodie.clustering.schedule.inline": "true"})


def test_clustering_sizes_parsed_as_longs() -> None:
    config = clustering(
        {
            "hoodie.clustering.plan.strategy.max.bytes.per.group": "10737418240",
            "hoodie.clustering.plan.strategy.target.file.max.bytes": "268435456",
            "hoodie.clustering.plan.strategy.small.file.limit": "0",
        }
    )
    assert config.max_bytes_per_group == 10 * 2**30
    assert config.target_file_max_bytes == 256 * 2**20
    assert config.small_file_limit_bytes == 0
