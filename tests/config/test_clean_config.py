"""CleanConfig and ArchivalConfig: policy inference (Hudi 0.14+), failed-writes policy, retained values."""

from __future__ import annotations

import pytest

from service.config.cleaning import CleaningPolicy, FailedWritesCleaningPolicy
from service.config.hoodie import HoodieConfig
from service.errors import ConfigError

COMMITS = "hoodie.cleaner.commits.retained"
HOURS = "hoodie.cleaner.hours.retained"
VERSIONS = "hoodie.cleaner.fileversions.retained"
POLICY = "hoodie.cleaner.policy"
OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}

# Each case was checked against Hudi 0.15.0's HoodieWriteConfig (tests/config/test_config_hudi_interop.py).
POLICY_CASES: list[tuple[dict[str, str], CleaningPolicy, bool]] = [
    ({}, CleaningPolicy.KEEP_LATEST_COMMITS, False),
    ({COMMITS: "5"}, CleaningPolicy.KEEP_LATEST_COMMITS, True),
    ({HOURS: "5"}, CleaningPolicy.KEEP_LATEST_BY_HOURS, True),
    ({VERSIONS: "2"}, CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, True),
    ({HOURS: "5", VERSIONS: "2"}, CleaningPolicy.KEEP_LATEST_COMMITS, False),
    ({HOURS: "5", COMMITS: "5"}, CleaningPolicy.KEEP_LATEST_COMMITS, False),
    ({HOURS: "5", COMMITS: "5", VERSIONS: "2"}, CleaningPolicy.KEEP_LATEST_COMMITS, False),
    ({HOURS: "5", POLICY: "KEEP_LATEST_FILE_VERSIONS"}, CleaningPolicy.KEEP_LATEST_FILE_VERSIONS, False),
    ({VERSIONS: "24", POLICY: "KEEP_LATEST_COMMITS"}, CleaningPolicy.KEEP_LATEST_COMMITS, False),
    ({HOURS: "24"}, CleaningPolicy.KEEP_LATEST_BY_HOURS, True),  # set to its default still counts as set
]


@pytest.mark.parametrize(("mapping", "policy", "inferred"), POLICY_CASES)
def test_clean_policy_inference(mapping: dict[str, str], policy: CleaningPolicy, inferred: bool) -> None:
    clean = HoodieConfig.from_mapping(mapping, "orders").clean
    assert (clean.policy, clean.policy_inferred) == (policy, inferred)


@pytest.mark.parametrize(
    ("mapping", "retained"),
    [({HOURS: "6"}, 6), ({VERSIONS: "2"}, 2), ({COMMITS: "7"}, 7), ({}, 10)],
)
def test_clean_retained_follows_active_policy(mapping: dict[str, str], retained: int) -> None:
    assert HoodieConfig.from_mapping(mapping, "orders").clean.retained == retained


def test_clean_active_policy_retains_at_least_one() -> None:
    with pytest.raises(ConfigError) as info:
        HoodieConfig.from_mapping({VERSIONS: "0"}, "orders")
    assert str(info.value) == (
        f"table 'orders': {VERSIONS}='0' must be at least 1 "
        "under the KEEP_LATEST_FILE_VERSIONS cleaning policy"
    )


def test_clean_inactive_policy_value_may_be_zero() -> None:
    clean = HoodieConfig.from_mapping({POLICY: "KEEP_LATEST_COMMITS", HOURS: "0"}, "orders").clean
    assert clean.hours_retained == 0


@pytest.mark.parametrize(
    ("mapping", "expected", "warns"),
    [
        ({}, FailedWritesCleaningPolicy.EAGER, False),
        ({"hoodie.cleaner.policy.failed.writes": "NEVER"}, FailedWritesCleaningPolicy.NEVER, False),
        (OCC, FailedWritesCleaningPolicy.LAZY, False),
        ({**OCC, "hoodie.cleaner.policy.failed.writes": "LAZY"}, FailedWritesCleaningPolicy.LAZY, False),
        # HoodieWriteConfig forces LAZY under OCC even over an explicit EAGER
        ({**OCC, "hoodie.cleaner.policy.failed.writes": "EAGER"}, FailedWritesCleaningPolicy.LAZY, True),
        (
            {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"},
            FailedWritesCleaningPolicy.LAZY,
            False,
        ),
    ],
)
def test_clean_failed_writes_policy_as_hudi_infers(
    mapping: dict[str, str], expected: FailedWritesCleaningPolicy, warns: bool
) -> None:
    config = HoodieConfig.from_mapping(
        {
            **mapping,
            "hoodie.write.lock.zookeeper.url": "zk:2181",
            "hoodie.write.lock.zookeeper.base_path": "/hudi",
        },
        "orders",
    )
    assert config.clean.failed_writes_policy is expected
    assert any("is replaced by LAZY" in w for w in config.warnings) is warns


def test_clean_other_settings_parsed() -> None:
    clean = HoodieConfig.from_mapping(
        {
            "hoodie.clean.max.commits": "3",
            "hoodie.cleaner.incremental.mode": "false",
            "hoodie.clean.allow.multiple": "true",
            "hoodie.cleaner.parallelism": "8",
            "hoodie.clean.automatic": "false",
        },
        "orders",
    ).clean
    assert (
        clean.max_commits,
        clean.incremental_mode,
        clean.allow_multiple,
        clean.parallelism,
        clean.automatic,
    ) == (3, False, True, 8, False)


def test_clean_trigger_strategy_only_num_commits() -> None:
    with pytest.raises(
        ConfigError, match=r"hoodie\.clean\.trigger\.strategy='NUM_HOURS' is not one of NUM_COMMITS"
    ):
        HoodieConfig.from_mapping({"hoodie.clean.trigger.strategy": "NUM_HOURS"}, "orders")
