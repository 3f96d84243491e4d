"""LockConfig: ZooKeeper keys, lock key inference, checks under optimistic concurrency control."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from service.config.hoodie import HoodieConfig
from service.config.locking import IN_PROCESS_PROVIDER, LockConfig, LockProviderKind, WriteConcurrencyMode
from service.errors import ConfigError

OCC = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}
ZK = {
    "hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181",
    "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
}


def lock(mapping: Mapping[str, object]) -> LockConfig:
    return HoodieConfig.from_mapping(mapping, "orders").lock


def test_lock_zookeeper_settings_parsed() -> None:
    config = lock(
        {
            **OCC,
            **ZK,
            "hoodie.write.lock.zookeeper.lock_key": "orders_lock",
            "hoodie.write.lock.zookeeper.session_timeout_ms": "30000",
            "hoodie.write.lock.wait_time_ms": 5000,
            "hoodie.write.lock.client.num_retries": "3",
        }
    )
    assert config.provider is LockProviderKind.ZOOKEEPER
    assert config.zookeeper_url == "zk1:2181,zk2:2181"
    assert config.zookeeper_lock_path("ignored") == "/hudi/locks/orders_lock"
    assert (config.zookeeper_session_timeout_ms, config.acquire_timeout_ms, config.client_num_retries) == (
        30000,
        5000,
        3,
    )


@pytest.mark.parametrize(
    ("mapping", "hoodie_table_name", "expected"),
    [
        ({}, "orders_hudi", "orders_hudi"),  # inferred from the table's name, as Hudi does
        ({"hoodie.table.name": "from_config"}, "orders_hudi", "from_config"),
        (
            {"hoodie.table.name": "from_config", "hoodie.write.lock.zookeeper.lock_key": "k"},
            "orders_hudi",
            "k",
        ),
    ],
)
def test_lock_key_inferred_from_table_name(
    mapping: dict[str, str], hoodie_table_name: str, expected: str
) -> None:
    assert lock({**ZK, **mapping}).lock_key_for(hoodie_table_name) == expected


def test_lock_occ_with_zookeeper_requires_url_and_base_path() -> None:
    with pytest.raises(ConfigError) as info:
        lock(OCC)
    assert str(info.value) == (
        "table 'orders': the ZooKeeper lock needs hoodie.write.lock.zookeeper.url and "
        "hoodie.write.lock.zookeeper.base_path (the same values as the table's writers)"
    )


def test_lock_single_writer_needs_no_zookeeper_until_asked() -> None:
    config = lock({})
    with pytest.raises(ConfigError, match=r"needs hoodie\.write\.lock\.zookeeper\.url"):
        config.require_zookeeper()


def test_lock_occ_with_unsupported_provider_rejected() -> None:
    provider = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    with pytest.raises(ConfigError, match=rf"hoodie\.write\.lock\.provider='{provider}' is not supported"):
        lock({**OCC, "hoodie.write.lock.provider": provider})


def test_lock_occ_with_in_process_provider_accepted() -> None:
    config = HoodieConfig.from_mapping({**OCC, "hoodie.write.lock.provider": IN_PROCESS_PROVIDER}, "orders")
    assert config.lock.provider is LockProviderKind.IN_PROCESS
    assert config.write_concurrency_mode is WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL


@pytest.mark.parametrize("url", ["zk1:abc", ":2181", "zk1:2181,", "zk1:2181/chroot/"])
def test_lock_bad_connect_string_rejected(url: str) -> None:
    with pytest.raises(ConfigError, match=r"hoodie\.write\.lock\.zookeeper\.url="):
        lock({"hoodie.write.lock.zookeeper.url": url})


@pytest.mark.parametrize("url", ["zk1", "zk1:2181", "zk1:2181,zk2:2182/hudi", "[::1]:2181"])
def test_lock_good_connect_string_accepted(url: str) -> None:
    assert lock({"hoodie.write.lock.zookeeper.url": url}).zookeeper_url == url


@pytest.mark.parametrize("base_path", ["hudi/locks", "/hudi/locks/", "/"])
def test_lock_base_path_must_be_absolute_without_trailing_slash(base_path: str) -> None:
    with pytest.raises(ConfigError, match="must be an absolute znode path"):
        lock({"hoodie.write.lock.zookeeper.base_path": base_path})
