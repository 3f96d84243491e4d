"""Against Hudi 0.15.0 itself: the registry's defaults, the typed views, and `--props` file parsing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from service.config.clustering import PLAN_STRATEGY_CLASSES, ClusteringPlanKind
from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import ALTERNATIVE_NAMES, HOODIE_KEYS, is_watched
from service.config.props import load_hoodie_props
from service.errors import ConfigError
from tests.support.hudi_jvm import hudi_bundle
from tests.support.jvm import run_java
from tests.support.paths import HUDI_BUNDLE

pytestmark = pytest.mark.hudi

HUDI_CONFIG_CLASSES = [
    "org.apache.hudi.config.HoodieClusteringConfig",
    "org.apache.hudi.config.HoodieCleanConfig",
    "org.apache.hudi.config.HoodieArchivalConfig",
    "org.apache.hudi.config.HoodieLockConfig",
    "org.apache.hudi.config.HoodieCompactionConfig",
    "org.apache.hudi.config.HoodieWriteConfig",
    "org.apache.hudi.common.config.HoodieStorageConfig",
    "org.apache.hudi.config.HoodieIndexConfig",
    "org.apache.hudi.common.table.HoodieTableConfig",
    "org.apache.hudi.common.config.HoodieMetadataConfig",
]

HUDI_1X = ("1.0.2", "1.1.1", "1.2.0")
PLAN = "org.apache.hudi.client.clustering.plan.strategy."
ZK = ["hoodie.write.lock.zookeeper.url=zk:2181", "hoodie.write.lock.zookeeper.base_path=/hudi"]


def _properties(bundle: Path = HUDI_BUNDLE) -> dict[str, dict[str, object]]:
    out = run_java("HudiConfigDefaults", *HUDI_CONFIG_CLASSES, bundle=bundle).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    properties: dict[str, dict[str, object]] = {}
    for row in rows:
        properties.setdefault(str(row["key"]), row)
    return properties


@pytest.fixture(scope="module")
def hudi_properties() -> dict[str, dict[str, object]]:
    return _properties()


def test_registry_defaults_and_alternatives_equal_hudi(hudi_properties: dict[str, dict[str, object]]) -> None:
    """Every key against the Hudi release it names as its first (0.15.0 unless a later one added it:
    those are checked against Hudi 1.0.2's, 1.1.1's or 1.2.0's own config classes, and must be absent
    from 0.15.0)."""
    newer = {v: _properties(hudi_bundle(v)) for v in HUDI_1X}
    for name, spec in HOODIE_KEYS.items():
        if spec.since != "0.15.0":
            assert spec.since in newer and name not in hudi_properties, name
        source = hudi_properties if spec.since == "0.15.0" else newer[spec.since]
        assert name in source, f"{name} is not a Hudi {spec.since} key"
        hudi = source[name]
        assert spec.default == hudi["default"], name
        alternatives = hudi["alternatives"]
        assert isinstance(alternatives, list)
        assert set(alternatives) <= set(spec.alternatives), name


@pytest.mark.parametrize("version", HUDI_1X)
def test_every_name_hudi_1x_reads_a_registered_key_by_is_known_with_its_default(version: str) -> None:
    """Hudi 1.0 renamed the cleaner's keys (`hoodie.clean.commits.retained`, the 0.15 name its
    alternative) and 1.x added keys under the prefixes the product watches: a 1.x user's name must
    set the same setting (never be ignored as an unknown key, with a typo warning), with the default
    the registry has for it. (The registry's defaults are 0.15.0's: where 1.x changed one under the same
    name, `hoodie.write.lock.provider` and 1.2's `hoodie.clustering.updates.strategy`, that name is not
    checked here.)"""
    properties = _properties(hudi_bundle(version))
    known = {**{n: n for n in HOODIE_KEYS}, **ALTERNATIVE_NAMES}
    assert "hoodie.clean.commits.retained" in properties  # the renames are there to check
    for name, row in properties.items():
        alternatives = row["alternatives"]
        assert isinstance(alternatives, list)
        names = [name, *alternatives]
        entries = {known[n] for n in names if n in known}
        if is_watched(name):
            assert entries, f"Hudi {version}'s {name} is unknown here"
        if not entries:
            continue
        assert len(entries) == 1 and all(n in known for n in names), (name, names, entries)
        [entry] = entries
        if name != entry and HOODIE_KEYS[entry].used:  # a name of 1.x's for one of ours: the same default
            assert HOODIE_KEYS[entry].default == row["default"], (version, name)


def test_registry_knows_every_hudi_key_under_watched_prefixes(
    hudi_properties: dict[str, dict[str, object]],
) -> None:
    missing = sorted(key for key in hudi_properties if is_watched(key) and key not in HOODIE_KEYS)
    assert missing == []  # otherwise a real Hudi key would be warned about as a typo


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _opt(value: object) -> str:
    return "null" if value is None else str(value)


# probe name -> the same value from our HoodieConfig, in Java's String.valueOf form
VIEWS: dict[str, Callable[[HoodieConfig], str]] = {
    "cleaner.policy": lambda c: c.clean.policy.value,
    "cleaner.commits.retained": lambda c: str(c.clean.commits_retained),
    "cleaner.hours.retained": lambda c: str(c.clean.hours_retained),
    "cleaner.fileversions.retained": lambda c: str(c.clean.file_versions_retained),
    "clean.trigger.strategy": lambda c: c.clean.trigger_strategy.value,
    "clean.max.commits": lambda c: str(c.clean.max_commits),
    "cleaner.incremental.mode": lambda c: _bool(c.clean.incremental_mode),
    "clean.allow.multiple": lambda c: _bool(c.clean.allow_multiple),
    "cleaner.parallelism": lambda c: str(c.clean.parallelism),
    "cleaner.policy.failed.writes": lambda c: c.clean.failed_writes_policy.value,
    "clean.automatic": lambda c: _bool(c.clean.automatic),
    "clean.async": lambda c: _bool(c.clean.async_clean),
    "keep.min.commits": lambda c: str(c.archival.min_commits_to_keep),
    "keep.max.commits": lambda c: str(c.archival.max_commits_to_keep),
    "commits.archival.batch": lambda c: str(c.archival.archival_batch_size),
    "archive.automatic": lambda c: _bool(c.archival.automatic),
    "archive.async": lambda c: _bool(c.archival.async_archive),
    "archive.beyond.savepoint": lambda c: _bool(c.archival.beyond_savepoint),
    "clustering.inline": lambda c: _bool(c.clustering.inline),
    "clustering.schedule.inline": lambda c: _bool(c.clustering.schedule_inline),
    "clustering.async.enabled": lambda c: _bool(c.clustering.async_enabled),
    "clustering.inline.max.commits": lambda c: str(c.clustering.inline_max_commits),
    "clustering.async.max.commits": lambda c: str(c.clustering.async_max_commits),
    "clustering.max.parallelism": lambda c: str(c.clustering.max_parallelism),
    "clustering.execution.strategy.class": lambda c: c.clustering.execution_strategy_class,
    "clustering.small.file.limit": lambda c: str(c.clustering.small_file_limit_bytes),
    "clustering.max.bytes.per.group": lambda c: str(c.clustering.max_bytes_per_group),
    "clustering.max.num.groups": lambda c: str(c.clustering.max_num_groups),
    "clustering.target.file.max.bytes": lambda c: str(c.clustering.target_file_max_bytes),
    "clustering.single.group": lambda c: _bool(c.clustering.should_cluster_single_group),
    "clustering.sort.columns": lambda c: _opt(c.clustering.sort_columns_value),
    "clustering.lookback.partitions": lambda c: str(c.clustering.lookback_partitions),
    "clustering.skipfromlatest.partitions": lambda c: str(c.clustering.skip_from_latest_partitions),
    "clustering.begin.partition": lambda c: _opt(c.clustering.begin_partition),
    "clustering.end.partition": lambda c: _opt(c.clustering.end_partition),
    "clustering.partition.regex": lambda c: _opt(c.clustering.partition_regex_pattern),
    "clustering.partition.selected": lambda c: _opt(
        c.get("hoodie.clustering.plan.strategy.partition.selected")
    ),
    "clustering.updates.strategy": lambda c: c.clustering.update_strategy_class,
    "clustering.rollback.pending": lambda c: _bool(c.clustering.rollback_pending_on_conflict),
    "layout.strategy": lambda c: c.clustering.layout_strategy.value,
    "layout.curve.build.method": lambda c: c.clustering.curve_build_method.value,
    "layout.sample.size": lambda c: str(c.clustering.sample_size),
    "parquet.max.file.size": lambda c: str(c.parquet.max_file_size_bytes),
    "parquet.block.size": lambda c: str(c.parquet.block_size_bytes),
    "parquet.page.size": lambda c: str(c.parquet.page_size_bytes),
    "parquet.dictionary.enabled": lambda c: _bool(c.parquet.dictionary_enabled),
    "bloom.num.entries": lambda c: str(c.parquet.bloom_num_entries),
    "bloom.dynamic.max.entries": lambda c: str(c.parquet.bloom_dynamic_max_entries),
    "compact.trigger.strategy": lambda c: c.compaction.trigger_strategy.value,
    "compact.max.delta.commits": lambda c: str(c.compaction.max_delta_commits),
    "compact.max.delta.seconds": lambda c: str(c.compaction.max_delta_seconds),
    "compaction.target.io": lambda c: str(c.compaction.target_io_mb),
    "compaction.logfile.size.threshold": lambda c: str(c.compaction.log_file_size_threshold_bytes),
    "compaction.strategy": lambda c: c.compaction.strategy_class,
    "write.concurrency.mode": lambda c: c.write_concurrency_mode.value,
    "lock.provider": lambda c: c.lock.provider_class,
    "lock.zookeeper.lock_key": lambda c: c.lock.lock_key_for("probe"),
    "clustering.filter.mode": lambda c: c.clustering.partition_filter_mode.value,
}

# Hudi keeps these as given (case included); the product normalises them, so compare case-insensitively.
CASE_INSENSITIVE = {
    "parquet.compression.codec": lambda c: c.parquet.compression_codec,
    "bloom.filter.type": lambda c: c.parquet.bloom_filter_type.value,
}

VIEW_CASES: list[list[str]] = [
    [],
    ["hoodie.cleaner.hours.retained=5"],
    ["hoodie.cleaner.fileversions.retained=2"],
    ["hoodie.cleaner.commits.retained=7"],
    ["hoodie.cleaner.hours.retained=5", "hoodie.cleaner.fileversions.retained=2"],
    ["hoodie.cleaner.hours.retained=5", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS"],
    [
        "hoodie.write.concurrency.mode=optimistic_concurrency_control",
        "hoodie.cleaner.policy.failed.writes=EAGER",
        *ZK,
    ],
    ["hoodie.cleaner.commits.retained=25", "hoodie.keep.max.commits=40"],
    [
        "hoodie.datasource.clustering.inline.enable=true",
        "hoodie.datasource.clustering.async.enable=true",
        "hoodie.clustering.async.enabled=false",
        "hoodie.layout.optimize.strategy=z-order",
        "hoodie.layout.optimize.curve.build.method=sample",
        "hoodie.layout.optimize.build.curve.sample.size=5000",
        "hoodie.clustering.plan.strategy.sort.columns=city,ts",
        "hoodie.clustering.plan.partition.filter.mode=RECENT_DAYS",
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions=5",
        "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions=1",
        "hoodie.clustering.plan.strategy.partition.regex.pattern=dt=.*",
        "hoodie.clustering.plan.strategy.partition.selected=dt=1,dt=2",
        "hoodie.clustering.plan.strategy.max.bytes.per.group=10737418240",
        "hoodie.clustering.plan.strategy.target.file.max.bytes=268435456",
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled=false",
        "hoodie.clustering.updates.strategy="
        "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy",
        "hoodie.clustering.rollback.pending.replacecommit.on.conflict=true",
        "hoodie.parquet.compression.codec=SNAPPY",
        "hoodie.parquet.max.file.size=268435456",
        "hoodie.bloom.index.filter.type=simple",
        "hoodie.index.bloom.fpp=0.001",
        "hoodie.clean.allow.multiple=true",
        "hoodie.write.lock.zookeeper.lock_key=orders_lock",
    ],
    [f"hoodie.clustering.plan.strategy.class={PLAN}SparkRecentDaysClusteringPlanStrategy"],
    [
        f"hoodie.clustering.plan.strategy.class={PLAN}SparkSelectedPartitionsClusteringPlanStrategy",
        "hoodie.clustering.plan.partition.filter.mode=RECENT_DAYS",
        "hoodie.clustering.plan.strategy.cluster.begin.partition=2024/01/01",
        "hoodie.clustering.plan.strategy.cluster.end.partition=2024/01/31",
    ],
    [f"hoodie.clustering.plan.strategy.class={PLAN}JavaRecentDaysClusteringPlanStrategy"],
    ["hoodie.clustering.plan.partition.filter.mode=DAY_ROLLING"],
    [
        "hoodie.compact.inline.trigger.strategy=NUM_AND_TIME",
        "hoodie.compact.inline.max.delta.commits=12",
        "hoodie.compact.inline.max.delta.seconds=600",
        "hoodie.compaction.target.io=2048",
        "hoodie.compaction.logfile.size.threshold=1048576",
        "hoodie.compaction.strategy=org.apache.hudi.table.action.compact.strategy.UnBoundedCompactionStrategy",
    ],
]

# Configurations both Hudi and the product refuse.
REJECTED_CASES: list[list[str]] = [
    ["hoodie.keep.min.commits=30"],
    ["hoodie.cleaner.policy=keep_latest_commits"],
    ["hoodie.cleaner.commits.retained=ten"],
    ["hoodie.compact.inline.trigger.strategy=num_commits"],  # Java's CompactionTriggerStrategy.valueOf
    ["hoodie.compaction.target.io=lots"],
]


def _probe(cases: list[list[str]]) -> list[dict[str, str]]:
    args: list[str] = []
    for i, case in enumerate(cases):
        if i:
            args.append("--")
        args.extend(case)
    out = run_java("HudiWriteConfigProbe", *args).stdout
    results = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(results) == len(cases)
    return results


def _mapping(case: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in case)


def test_views_equal_hudi_write_config_getters() -> None:
    for case, hudi in zip(VIEW_CASES, _probe(VIEW_CASES), strict=True):
        assert "BUILD_ERROR" not in hudi, (case, hudi)
        config = HoodieConfig.from_mapping(_mapping(case), "orders")
        ours = {name: view(config) for name, view in VIEWS.items()}
        theirs = {name: hudi[name] for name in VIEWS}
        assert ours == theirs, case
        for name, view in CASE_INSENSITIVE.items():
            assert view(config).upper() == hudi[name].upper(), (case, name)
        assert float(hudi["bloom.fpp"]) == config.parquet.bloom_fpp
        assert float(hudi["parquet.compression.ratio"]) == config.parquet.compression_ratio
        # Hudi rewrites a deprecated plan class to its engine's size-based class when scheduling
        resolved = hudi["clustering.plan.strategy.class"]
        assert PLAN_STRATEGY_CLASSES[resolved] is ClusteringPlanKind.SIZE_BASED


def test_hudi_and_product_reject_the_same_configurations() -> None:
    for case, hudi in zip(REJECTED_CASES, _probe(REJECTED_CASES), strict=True):
        hudi_rejects = "BUILD_ERROR" in hudi or any(v.startswith("!ERROR") for v in hudi.values())
        assert hudi_rejects, case
        with pytest.raises(ConfigError, match="table 'orders': "):
            HoodieConfig.from_mapping(_mapping(case), "orders")


def test_props_file_read_as_hudi_reads_it(tmp_path: Path) -> None:
    (tmp_path / "base.properties").write_text(
        "hoodie.clean.max.commits=2\nhoodie.cleaner.parallelism = 4\n", encoding="utf-8"
    )
    main = tmp_path / "table.properties"
    main.write_text(
        "# comment\n"
        "hoodie.cleaner.commits.retained = 12\n"
        "hoodie.clustering.plan.strategy.sort.columns=city,   ts  \n"
        "hoodie.clustering.plan.strategy.partition.regex.pattern=dt=\\d{4}\\:x\n"
        "include=base.properties\n"
        "hoodie.table.name orders\n"
        "\thoodie.layout.optimize.strategy\t=\tzorder\n"
        "!bang=1\n"
        "lonely\n"
        "hoodie.cleaner.parallelism=8\r\n"
        "hoodie.write.lock.zookeeper.url=zk1\\:2181\n",
        encoding="utf-8",
    )
    overrides = ["hoodie.clean.max.commits=5", "hoodie.cleaner.hours.retained = 3  "]
    hudi = json.loads(run_java("HudiPropsFileProbe", str(main), *overrides).stdout.strip().splitlines()[-1])
    assert load_hoodie_props([main], overrides) == hudi
