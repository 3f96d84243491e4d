from __future__ import annotations

import re

import pytest

from service.config.locking import ZookeeperLockSettings
from service.errors import ConfigError
from service.lock import (
    IN_PROCESS_PROVIDER_CLASS,
    ZOOKEEPER_PROVIDER_CLASS,
    InProcessTableLock,
    ZookeeperTableLock,
    create_lock,
)
from service.lock.znodes import find_protected, new_protected_prefix, ordered_contenders, sort_key

ZK_PROPS = {
    "hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181",
    "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
}


def test_settings_from_hoodie_props_use_hudi_defaults() -> None:
    settings = ZookeeperLockSettings.from_hoodie_props(ZK_PROPS, "trips")
    assert settings == ZookeeperLockSettings(
        connect_string="zk1:2181,zk2:2181",
        base_path="/hudi/locks",
        lock_key="trips",
        session_timeout_ms=60_000,
        connection_timeout_ms=15_000,
        wait_time_ms=60_000,
        retry_wait_time_ms=1_000,
        retry_max_wait_time_ms=16_000,
        num_retries=15,
    )
    assert settings.lock_path == "/hudi/locks/trips"


def test_settings_from_hoodie_props_read_every_key() -> None:
    props = {
        **ZK_PROPS,
        "hoodie.write.lock.zookeeper.lock_key": "trips_lock",
        "hoodie.write.lock.zookeeper.session_timeout_ms": "30000",
        "hoodie.write.lock.zookeeper.connection_timeout_ms": "5000",
        "hoodie.write.lock.wait_time_ms": "1234",
        "hoodie.write.lock.wait_time_ms_between_retry": "200",
        "hoodie.write.lock.max_wait_time_ms_between_retry": "800",
        "hoodie.write.lock.num_retries": "4",
    }
    settings = ZookeeperLockSettings.from_hoodie_props(props, "trips")
    assert (settings.lock_path, settings.session_timeout_ms, settings.connection_timeout_ms) == (
        "/hudi/locks/trips_lock",
        30_000,
        5_000,
    )
    retries = (settings.wait_time_ms, settings.retry_wait_time_ms, settings.retry_max_wait_time_ms)
    assert retries == (1234, 200, 800)
    assert settings.num_retries == 4


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"hoodie.write.lock.zookeeper.url": ""}, "needs hoodie.write.lock.zookeeper.url"),
        ({"hoodie.write.lock.zookeeper.base_path": ""}, "needs hoodie.write.lock.zookeeper.base_path"),
        ({"hoodie.write.lock.zookeeper.base_path": "/hudi/"}, "base_path='/hudi/'"),
        ({"hoodie.write.lock.zookeeper.base_path": "hudi"}, "base_path='hudi'"),
        ({"hoodie.write.lock.zookeeper.lock_key": "a//b"}, "lock_key='a//b'"),
        ({"hoodie.write.lock.wait_time_ms": "soon"}, "wait_time_ms='soon' is not an integer"),
        (
            {"hoodie.write.lock.zookeeper.session_timeout_ms": "0"},
            "session_timeout_ms='0' must be at least 1",
        ),
    ],
)
def test_settings_reject_bad_values_naming_key_and_value(override: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigError) as raised:
        ZookeeperLockSettings.from_hoodie_props({**ZK_PROPS, **override}, "trips")
    assert fragment in str(raised.value)
    assert "trips" in str(raised.value)


def test_znodes_order_like_curator_fix_for_sorting() -> None:
    children = [
        "_c_bbbbbbbb-0000-0000-0000-000000000000-lock-0000000012",
        "0123abcd__lock__0000000003",  # stock kazoo name: no "lock-", Curator sorts it by the whole name
        "_c_aaaaaaaa-0000-0000-0000-000000000000-lock-0000000011",
        "_c_cccccccc-lock-0000-0000-000000000000-lock-0000000010",  # key is after the LAST "lock-"
    ]
    assert [sort_key(child) for child in ordered_contenders(children)] == [
        "0000000010",
        "0000000011",
        "0000000012",
        "0123abcd__lock__0000000003",
    ]


def test_znodes_protected_prefix_matches_curator_names() -> None:
    prefix = new_protected_prefix()
    assert re.fullmatch(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-", prefix)
    mine = prefix + "0000000007"
    assert find_protected(["_c_other-lock-0000000006", mine], prefix) == mine
    assert find_protected(["_c_other-lock-0000000006"], prefix) is None


@pytest.mark.parametrize("provider", ["zookeeper", ZOOKEEPER_PROVIDER_CLASS])
def test_create_lock_zookeeper_by_name_or_hudi_class(provider: str) -> None:
    lock = create_lock(provider, "trips", {**ZK_PROPS, "hoodie.write.lock.wait_time_ms": "2500"})
    assert isinstance(lock, ZookeeperTableLock)
    assert lock.lock_path == "/hudi/locks/trips"
    assert lock.default_timeout_s == 2.5
    assert not lock.is_held  # nothing connects before the first acquire


@pytest.mark.parametrize("provider", ["in-process", IN_PROCESS_PROVIDER_CLASS])
def test_create_lock_in_process_by_name_or_hudi_class(provider: str) -> None:
    props = {"hoodie.base.path": "s3://b/trips", "hoodie.write.lock.wait_time_ms": "500"}
    lock = create_lock(provider, "trips", props)
    assert isinstance(lock, InProcessTableLock)
    assert (lock.lock_path, lock.default_timeout_s) == ("in-process:s3://b/trips", 0.5)


def test_create_lock_rejects_unknown_provider() -> None:
    with pytest.raises(ConfigError, match=r"trips.*hoodie.write.lock.provider='dynamodb'"):
        create_lock("dynamodb", "trips", {})
