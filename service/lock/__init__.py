"""Table locks: the interface and its providers, chosen by Hudi's `hoodie.write.lock.provider` value."""

from __future__ import annotations

from collections.abc import Mapping

from service.config.hoodie_keys import BASE_PATH, LOCK_PROVIDER
from service.config.locking import (
    IN_PROCESS_PROVIDER,
    ZOOKEEPER_PROVIDER,
    ZookeeperLockSettings,
    lock_config_from_props,
)
from service.errors import ConfigError
from service.lock.base import TableLock
from service.lock.in_process import InProcessTableLock
from service.lock.kazoo_pool import KazooClientPool
from service.lock.zookeeper import ZookeeperTableLock, close_default_pool

__all__ = [
    "IN_PROCESS_PROVIDER_CLASS",
    "ZOOKEEPER_PROVIDER_CLASS",
    "InProcessTableLock",
    "TableLock",
    "ZookeeperLockSettings",
    "ZookeeperTableLock",
    "close_default_pool",
    "create_lock",
]

ZOOKEEPER_PROVIDER_CLASS = ZOOKEEPER_PROVIDER
IN_PROCESS_PROVIDER_CLASS = IN_PROCESS_PROVIDER

_ZOOKEEPER_NAMES = {"zookeeper", ZOOKEEPER_PROVIDER_CLASS}
_IN_PROCESS_NAMES = {"in-process", IN_PROCESS_PROVIDER_CLASS}


def create_lock(
    provider: str, table_name: str, props: Mapping[str, str], pool: KazooClientPool | None = None
) -> TableLock:
    """A lock for `table_name` configured from Hudi's `hoodie.write.lock.*` props.

    `provider` is "zookeeper" or "in-process", or the matching Hudi class name. The in-process lock is
    keyed by `hoodie.base.path` when given (as Hudi's InProcessLockProvider), else by the table name.
    A ZooKeeper lock takes its client from `pool` (a daemon's own), else from the process-wide pool.
    """
    name = provider.strip()
    if name in _ZOOKEEPER_NAMES:
        settings = ZookeeperLockSettings.from_hoodie_props(props, table_name)
        return ZookeeperTableLock(settings, table_name, pool=pool)
    if name in _IN_PROCESS_NAMES:
        wait_ms = lock_config_from_props(props, table_name).acquire_timeout_ms
        key = (props.get(BASE_PATH) or "").strip() or table_name
        return InProcessTableLock(table_name, key=key, default_timeout_s=wait_ms / 1000)
    raise ConfigError(
        f"table '{table_name}': {LOCK_PROVIDER}={provider!r} is not supported; "
        f"use zookeeper ({ZOOKEEPER_PROVIDER_CLASS}) or in-process ({IN_PROCESS_PROVIDER_CLASS})"
    )
