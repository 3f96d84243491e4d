"""The key registry: Hudi's defaults, alternative names and watched prefixes."""

from __future__ import annotations

import pytest

from service.config.hoodie_keys import (
    ALTERNATIVE_NAMES,
    HOODIE_KEYS,
    KeyType,
    is_watched,
)
from service.config.values import parse

CLUSTERING = "org.apache.hudi.client.clustering."

# Hudi 0.15.0's defaults: the bundle's `ConfigProperty.defaultValue()` (HoodieLockConfig, ...).
HUDI_DEFAULTS: dict[str, str | None] = {
    "hoodie.clustering.inline": "false",
    "hoodie.clustering.inline.max.commits": "4",
    "hoodie.clustering.schedule.inline": "false",
    "hoodie.clustering.async.enabled": "false",
    "hoodie.clustering.async.max.commits": "4",
    "hoodie.clustering.max.parallelism": "15",
    "hoodie.clustering.plan.strategy.class": CLUSTERING
    + "plan.strategy.SparkSizeBasedClusteringPlanStrategy",
    "hoodie.clustering.execution.strategy.class": CLUSTERING
    + "run.strategy.SparkSortAndSizeExecutionStrategy",
    "hoodie.clustering.plan.strategy.small.file.limit": "314572800",
    "hoodie.clustering.plan.strategy.max.bytes.per.group": "2147483648",
    "hoodie.clustering.plan.strategy.max.num.groups": "30",
    "hoodie.clustering.plan.strategy.target.file.max.bytes": "1073741824",
    "hoodie.clustering.plan.strategy.single.group.clustering.enabled": "true",
    "hoodie.clustering.plan.strategy.sort.columns": None,
    "hoodie.clustering.plan.partition.filter.mode": "NONE",
    "hoodie.clustering.plan.strategy.daybased.lookback.partitions": "2",
    "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions": "0",
    "hoodie.clustering.plan.strategy.cluster.begin.partition": None,
    "hoodie.clustering.plan.strategy.cluster.end.partition": None,
    "hoodie.clustering.plan.strategy.partition.regex.pattern": None,
    "hoodie.clustering.plan.strategy.partition.selected": None,
    "hoodie.clustering.updates.strategy": CLUSTERING + "update.strategy.SparkRejectUpdateStrategy",
    "hoodie.clustering.rollback.pending.replacecommit.on.conflict": "false",
    "hoodie.layout.optimize.strategy": "LINEAR",
    "hoodie.layout.optimize.curve.build.method": "DIRECT",
    "hoodie.layout.optimize.build.curve.sample.size": "200000",
    "hoodie.clean.automatic": "true",
    "hoodie.clean.async": "false",
    "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
    "hoodie.cleaner.commits.retained": "10",
    "hoodie.cleaner.hours.retained": "24",
    "hoodie.cleaner.fileversions.retained": "3",
    "hoodie.clean.trigger.strategy": "NUM_COMMITS",
    "hoodie.clean.max.commits": "1",
    "hoodie.cleaner.incremental.mode": "true",
    "hoodie.cleaner.policy.failed.writes": "EAGER",
    "hoodie.cleaner.parallelism": "200",
    "hoodie.clean.allow.multiple": "false",
    "hoodie.archive.automatic": "true",
    "hoodie.archive.async": "false",
    "hoodie.keep.min.commits": "20",
    "hoodie.keep.max.commits": "30",
    "hoodie.commits.archival.batch": "10",
    "hoodie.archive.merge.enable": "false",
    "hoodie.archive.merge.small.file.limit.bytes": "20971520",
    "hoodie.archive.merge.files.batch.size": "10",
    "hoodie.archive.beyond.savepoint": "false",
    "hoodie.write.concurrency.mode": "SINGLE_WRITER",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
    "hoodie.write.lock.zookeeper.url": None,
    "hoodie.write.lock.zookeeper.port": None,
    "hoodie.write.lock.zookeeper.base_path": None,
    "hoodie.write.lock.zookeeper.lock_key": None,
    "hoodie.write.lock.zookeeper.session_timeout_ms": "60000",
    "hoodie.write.lock.zookeeper.connection_timeout_ms": "15000",
    "hoodie.write.lock.wait_time_ms": "60000",
    "hoodie.write.lock.wait_time_ms_between_retry": "1000",
    "hoodie.write.lock.max_wait_time_ms_between_retry": "16000",
    "hoodie.write.lock.num_retries": "15",
    "hoodie.write.lock.client.num_retries": "50",
    "hoodie.write.lock.client.wait_time_ms_between_retry": "5000",
    "hoodie.write.lock.conflict.resolution.strategy": (
        "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy"
    ),
    "hoodie.parquet.compression.codec": "gzip",
    "hoodie.parquet.max.file.size": "125829120",
    "hoodie.parquet.block.size": "125829120",
    "hoodie.parquet.page.size": "1048576",
    "hoodie.bloom.index.filter.type": "DYNAMIC_V0",
    "hoodie.index.bloom.num_entries": "60000",
    "hoodie.index.bloom.fpp": "0.000000001",
    "hoodie.bloom.index.filter.dynamic.max.entries": "100000",
    "hoodie.table.timeline.timezone": "LOCAL",
    "hoodie.client.heartbeat.interval_in_ms": "60000",
    "hoodie.client.heartbeat.tolerable.misses": "2",
}


@pytest.mark.parametrize(("key", "default"), sorted(HUDI_DEFAULTS.items()))
def test_registry_default_equals_hudi(key: str, default: str | None) -> None:
    assert HOODIE_KEYS[key].default == default


@pytest.mark.parametrize("spec", list(HOODIE_KEYS.values()), ids=lambda s: s.name)
def test_registry_default_parses_as_declared_type(spec: object) -> None:
    from service.config.hoodie_keys import HoodieKey

    assert isinstance(spec, HoodieKey)
    if spec.default is not None:
        parse(spec, spec.default, "t")
    if spec.type is KeyType.ENUM:
        assert spec.allowed, spec.name
    else:
        assert not spec.allowed and not spec.value_aliases, spec.name
    assert spec.doc.strip(), spec.name


@pytest.mark.parametrize(
    ("alternative", "primary"),
    [
        ("hoodie.datasource.clustering.inline.enable", "hoodie.clustering.inline"),
        ("hoodie.datasource.clustering.async.enable", "hoodie.clustering.async.enabled"),
        ("hoodie.layout.optimize.build.curve.method", "hoodie.layout.optimize.curve.build.method"),
    ],
)
def test_registry_alternative_names_map_to_primary(alternative: str, primary: str) -> None:
    assert ALTERNATIVE_NAMES[alternative] == primary


@pytest.mark.parametrize(
    ("name", "watched"),
    [
        ("hoodie.clustering.foo", True),
        ("hoodie.cleaner.foo", True),
        ("hoodie.clean.foo", True),
        ("hoodie.layout.foo", True),
        ("hoodie.write.lock.foo", True),
        ("hoodie.write.lock.dynamodb.table", False),  # hudi-aws's provider: Hudi's key, not a typo
        ("hoodie.datasource.write.recordkey.field", False),
        ("hoodie.keep.min.commit", False),
    ],
)
def test_is_watched_covers_implemented_prefixes_only(name: str, watched: bool) -> None:
    assert is_watched(name) is watched
