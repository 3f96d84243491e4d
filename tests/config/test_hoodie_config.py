"""HoodieConfig: defaults, alternative names, errors, unknown-key warnings, YAML values, cross checks."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from service.config.cleaning import CleaningPolicy, FailedWritesCleaningPolicy
from service.config.clustering import (
    ClusteringPlanKind,
    CurveBuildMethod,
    LayoutStrategy,
    PartitionFilterMode,
    UpdateStrategy,
)
from service.config.hoodie import HoodieConfig, TimelineTimezone
from service.config.hoodie_keys import HOODIE_KEYS
from service.config.locking import LockProviderKind, WriteConcurrencyMode
from service.config.parquet import BloomFilterType
from service.errors import ConfigError

RUN = "org.apache.hudi.client.clustering.run.strategy."

# view attribute path -> the value Hudi 0.15.0's HoodieWriteConfig getters return with no configuration
DEFAULT_VIEWS: dict[str, object] = {
    "write_concurrency_mode": WriteConcurrencyMode.SINGLE_WRITER,
    "timeline_timezone": TimelineTimezone.LOCAL,
    "clustering.inline": False,
    "clustering.schedule_inline": False,
    "clustering.async_enabled": False,
    "clustering.inline_max_commits": 4,
    "clustering.async_max_commits": 4,
    "clustering.max_parallelism": 15,
    "clustering.plan_strategy_kind": ClusteringPlanKind.SIZE_BASED,
    "clustering.execution_strategy_class": RUN + "SparkSortAndSizeExecutionStrategy",
    "clustering.small_file_limit_bytes": 314572800,
    "clustering.max_bytes_per_group": 2147483648,
    "clustering.max_num_groups": 30,
    "clustering.target_file_max_bytes": 1073741824,
    "clustering.single_group_clustering_enabled": True,
    "clustering.sort_columns": (),
    "clustering.partition_filter_mode": PartitionFilterMode.NONE,
    "clustering.lookback_partitions": 2,
    "clustering.skip_from_latest_partitions": 0,
    "clustering.begin_partition": None,
    "clustering.end_partition": None,
    "clustering.partition_regex_pattern": None,
    "clustering.selected_partitions": (),
    "clustering.update_strategy": UpdateStrategy.REJECT,
    "clustering.rollback_pending_on_conflict": False,
    "clustering.layout_strategy": LayoutStrategy.LINEAR,
    "clustering.curve_build_method": CurveBuildMethod.DIRECT,
    "clustering.sample_size": 200000,
    "clean.policy": CleaningPolicy.KEEP_LATEST_COMMITS,
    "clean.policy_inferred": False,
    "clean.commits_retained": 10,
    "clean.hours_retained": 24,
    "clean.file_versions_retained": 3,
    "clean.max_commits": 1,
    "clean.incremental_mode": True,
    "clean.allow_multiple": False,
    "clean.parallelism": 200,
    "clean.failed_writes_policy": FailedWritesCleaningPolicy.EAGER,
    "clean.automatic": True,
    "clean.async_clean": False,
    "archival.min_commits_to_keep": 20,
    "archival.max_commits_to_keep": 30,
    "archival.archival_batch_size": 10,
    "archival.beyond_savepoint": False,
    "parquet.compression_codec": "GZIP",
    "parquet.pyarrow_compression": "gzip",
    "parquet.max_file_size_bytes": 125829120,
    "parquet.block_size_bytes": 125829120,
    "parquet.page_size_bytes": 1048576,
    "parquet.bloom_filter_type": BloomFilterType.DYNAMIC_V0,
    "parquet.bloom_num_entries": 60000,
    "parquet.bloom_fpp": 1e-9,
    "parquet.bloom_dynamic_max_entries": 100000,
    "lock.provider": LockProviderKind.ZOOKEEPER,
    "lock.zookeeper_url": None,
    "lock.zookeeper_base_path": None,
    "lock.zookeeper_lock_key": None,
    "lock.zookeeper_session_timeout_ms": 60000,
    "lock.zookeeper_connection_timeout_ms": 15000,
    "lock.acquire_timeout_ms": 60000,
    "lock.retry_wait_ms": 1000,
    "lock.retry_max_wait_ms": 16000,
    "lock.num_retries": 15,
    "lock.client_num_retries": 50,
    "lock.client_retry_wait_ms": 5000,
}


def attr(config: object, path: str) -> object:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def build(mapping: Mapping[str, object], table: str = "orders") -> HoodieConfig:
    return HoodieConfig.from_mapping(mapping, table)


@pytest.mark.parametrize(("path", "expected"), sorted(DEFAULT_VIEWS.items()))
def test_hoodie_config_defaults_equal_hudi(path: str, expected: object) -> None:
    assert attr(build({}), path) == expected


def test_hoodie_config_empty_mapping_has_no_warnings() -> None:
    config = build({})
    assert config.warnings == ()
    assert config.values == {}


@pytest.mark.parametrize(
    ("alternative", "value", "path", "expected"),
    [
        ("hoodie.datasource.clustering.inline.enable", "true", "clustering.inline", True),
        ("hoodie.datasource.clustering.async.enable", "true", "clustering.async_enabled", True),
        (
            "hoodie.layout.optimize.build.curve.method",
            "sample",
            "clustering.curve_build_method",
            CurveBuildMethod.SAMPLE,
        ),
        # Hudi 1.0 renamed the cleaner's keys; the 0.15 names are their alternatives there.
        ("hoodie.clean.commits.retained", "3", "clean.commits_retained", 3),
        (
            "hoodie.clean.policy",
            "KEEP_LATEST_FILE_VERSIONS",
            "clean.policy",
            CleaningPolicy.KEEP_LATEST_FILE_VERSIONS,
        ),
        ("hoodie.clean.fileversions.retained", "2", "clean.file_versions_retained", 2),
        (
            "hoodie.clean.failed.writes.policy",
            "LAZY",
            "clean.failed_writes_policy",
            FailedWritesCleaningPolicy.LAZY,
        ),
        ("hoodie.clean.incremental.enabled", "false", "clean.incremental_mode", False),
        ("hoodie.clean.trigger.max.commits", "4", "clean.max_commits", 4),
    ],
)
def test_hoodie_config_alternative_name_sets_primary_key(
    alternative: str, value: str, path: str, expected: object
) -> None:
    config = build({alternative: value})
    assert attr(config, path) == expected
    assert config.is_set(alternative)
    assert config.get(alternative) == config.get(next(iter(config.values)))
    assert config.warnings == ()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.clustering.plan.strategy.file.slices.sort.by", "INSTANT_TIME"),
        ("hoodie.clustering.plan.strategy.earliest.commit.to.cluster", "20260101000000000"),
        ("hoodie.compaction.partition.path.regex", "2026/.*"),
        ("hoodie.clustering.fail.on.pending.ingestion.during.conflict.resolution", "true"),
    ],
)
def test_a_hudi_1x_plan_setting_the_product_does_not_reproduce_is_refused_by_name(
    key: str, value: str
) -> None:
    """Never ignored: a plan Hudi would narrow or order otherwise is not what the product would plan."""
    with pytest.raises(
        ConfigError, match=rf"^table 'orders': {key}='{value}' is not supported by the product"
    ):
        build({key: value})
    spec = HOODIE_KEYS[key]
    if spec.default is not None:
        assert build({key: spec.default}).is_set(key)  # Hudi's default is what the product does


def test_hoodie_config_primary_name_wins_over_alternative_with_warning() -> None:
    config = build(
        {"hoodie.datasource.clustering.async.enable": "true", "hoodie.clustering.async.enabled": "false"}
    )
    assert config.clustering.async_enabled is False
    assert len(config.warnings) == 1
    assert "hoodie.datasource.clustering.async.enable='true' is ignored" in config.warnings[0]


def test_hoodie_config_error_names_alternative_as_written() -> None:
    with pytest.raises(
        ConfigError, match=r"^table 'orders': hoodie\.datasource\.clustering\.inline\.enable='on' "
    ):
        build({"hoodie.datasource.clustering.inline.enable": "on"})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "hoodie.cleaner.commits.retained",
            "ten",
            "table 'orders': hoodie.cleaner.commits.retained='ten' is not an integer",
        ),
        (
            "hoodie.clustering.plan.strategy.max.num.groups",
            "0",
            "table 'orders': hoodie.clustering.plan.strategy.max.num.groups='0' must be at least 1",
        ),
        (
            "hoodie.clustering.async.enabled",
            "maybe",
            "table 'orders': hoodie.clustering.async.enabled='maybe' is not a boolean (true or false)",
        ),
        (
            "hoodie.layout.optimize.strategy",
            "spiral",
            "table 'orders': hoodie.layout.optimize.strategy='spiral' is not one of LINEAR, ZORDER, HILBERT",
        ),
        (
            "hoodie.parquet.compression.codec",
            "lzo",
            "table 'orders': hoodie.parquet.compression.codec='lzo' is not supported by the product's "
            "Parquet writer",
        ),
        (
            "hoodie.index.bloom.fpp",
            "1.5",
            "table 'orders': hoodie.index.bloom.fpp='1.5' must be a probability strictly between 0 and 1",
        ),
        # keys no view reads are checked too
        (
            "hoodie.archive.merge.enable",
            "sometimes",
            "table 'orders': hoodie.archive.merge.enable='sometimes' is not a boolean",
        ),
    ],
)
def test_hoodie_config_rejects_bad_value_naming_table_key_value(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        build({key: value})
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("unknown", "closest"),
    [
        ("hoodie.cleaner.commit.retained", "hoodie.cleaner.commits.retained"),
        (
            "hoodie.clustering.plan.strategy.max.bytes.pergroup",
            "hoodie.clustering.plan.strategy.max.bytes.per.group",
        ),
        ("hoodie.clean.max.commit", "hoodie.clean.max.commits"),
        ("hoodie.layout.optimize.curve.build.methods", "hoodie.layout.optimize.curve.build.method"),
        ("hoodie.write.lock.zookeeper.basepath", "hoodie.write.lock.zookeeper.base_path"),
    ],
)
def test_hoodie_config_unknown_watched_key_warns_with_closest_key(
    unknown: str, closest: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="service.config.hoodie"):
        config = build({unknown: "5"})
    expected = f"table 'orders': unknown key {unknown} is ignored; closest known key: {closest}"
    assert config.warnings == (expected,)
    assert [r.getMessage() for r in caplog.records] == [expected]
    assert unknown in config.raw and not config.values


def test_hoodie_config_other_hoodie_keys_pass_through_silently(caplog: pytest.LogCaptureFixture) -> None:
    pasted = {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.metadata.enable": "false",
        "hoodie.write.lock.dynamodb.table": "locks",
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    }
    with caplog.at_level(logging.WARNING):
        config = build(pasted)
    assert config.warnings == ()
    assert not caplog.records
    assert config.raw == pasted
    assert config.effective()["hoodie.datasource.write.recordkey.field"] == "id"


def test_hoodie_config_accepts_yaml_typed_values() -> None:
    config = build(
        {
            "hoodie.clustering.async.enabled": True,
            "hoodie.cleaner.commits.retained": 12,
            "hoodie.index.bloom.fpp": 1e-07,
            "hoodie.clustering.plan.strategy.sort.columns": None,  # YAML key without a value: not set
        }
    )
    assert config.clustering.async_enabled is True
    assert config.clean.commits_retained == 12
    assert config.parquet.bloom_fpp == 1e-07
    assert config.values["hoodie.clustering.async.enabled"] == "true"
    assert not config.is_set("hoodie.clustering.plan.strategy.sort.columns")


def test_hoodie_config_effective_merges_defaults_and_set_values() -> None:
    config = build(
        {"hoodie.cleaner.commits.retained": "5", "hoodie.datasource.clustering.inline.enable": "true"}
    )
    effective = config.effective()
    assert effective["hoodie.cleaner.commits.retained"] == "5"
    assert effective["hoodie.clustering.inline"] == "true"
    assert effective["hoodie.keep.min.commits"] == "20"
    assert "hoodie.write.lock.zookeeper.url" not in effective
    assert "hoodie.datasource.clustering.inline.enable" not in effective


def test_hoodie_config_get_rejects_unknown_key() -> None:
    with pytest.raises(KeyError):
        build({}).get("hoodie.not.a.key")


def test_hoodie_config_keep_max_must_exceed_keep_min() -> None:
    with pytest.raises(
        ConfigError, match=r"hoodie\.keep\.max\.commits='30' must be greater than hoodie\.keep\.min"
    ):
        build({"hoodie.keep.min.commits": "30"})


def test_hoodie_config_keep_min_not_above_commits_retained_warns_as_hudi() -> None:
    config = build({"hoodie.cleaner.commits.retained": "25", "hoodie.keep.max.commits": "40"})
    assert config.clean.commits_retained == 25
    assert len(config.warnings) == 1
    assert (
        "hoodie.keep.min.commits=20 should be greater than hoodie.cleaner.commits.retained=25"
        in config.warnings[0]
    )


def test_hoodie_config_non_string_key_rejected() -> None:
    with pytest.raises(ConfigError, match="table 'orders': configuration key 5 is not a string"):
        HoodieConfig.from_mapping({5: "x"}, "orders")  # type: ignore[dict-item]
