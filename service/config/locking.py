"""Hudi's lock keys as typed, frozen views: `LockConfig` (every `hoodie.write.lock.*` key, checked as the
table's config) and `ZookeeperLockSettings` (where and how the ZooKeeper lock is taken).

Keys and defaults are the registry's (Hudi's `HoodieLockConfig` / `LockConfiguration`); using the writers'
values is what makes the daemon and Hudi's `ZookeeperBasedLockProvider` meet on one znode.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import auto

from service.config.hoodie_keys import (
    HOODIE_KEYS,
    LOCK_CLIENT_NUM_RETRIES,
    LOCK_CLIENT_RETRY_WAIT_TIME_MS,
    LOCK_NUM_RETRIES,
    LOCK_PROVIDER,
    LOCK_RETRY_MAX_WAIT_TIME_MS,
    LOCK_RETRY_WAIT_TIME_MS,
    LOCK_WAIT_TIME_MS,
    LOCK_ZK_BASE_PATH,
    LOCK_ZK_CONNECTION_TIMEOUT_MS,
    LOCK_ZK_LOCK_KEY,
    LOCK_ZK_PORT,
    LOCK_ZK_SESSION_TIMEOUT_MS,
    LOCK_ZK_URL,
    TABLE_NAME,
    KeyGroup,
)
from service.config.reader import KeyReader
from service.config.values import JavaEnum
from service.errors import ConfigError

log = logging.getLogger(__name__)

ZOOKEEPER_PROVIDER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
IN_PROCESS_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"

URL_KEY = LOCK_ZK_URL
BASE_PATH_KEY = LOCK_ZK_BASE_PATH
LOCK_KEY_KEY = LOCK_ZK_LOCK_KEY
PROVIDER_KEY = LOCK_PROVIDER


class WriteConcurrencyMode(JavaEnum):
    SINGLE_WRITER = auto()
    OPTIMISTIC_CONCURRENCY_CONTROL = auto()


class LockProviderKind(JavaEnum):
    ZOOKEEPER = auto()
    IN_PROCESS = auto()
    UNSUPPORTED = auto()  # a Hudi provider the product does not implement (file system, metastore)


_PROVIDERS = {
    ZOOKEEPER_PROVIDER: LockProviderKind.ZOOKEEPER,
    IN_PROCESS_PROVIDER: LockProviderKind.IN_PROCESS,
}


@dataclass(frozen=True)
class LockConfig:
    """Lock settings with Hudi's defaults; `zookeeper_lock_key` falls back to `hoodie.table.name` (Hudi)."""

    table_name: str  # for messages
    provider_class: str
    provider: LockProviderKind
    zookeeper_url: str | None  # the whole connect string: Hudi never appends the port key
    zookeeper_base_path: str | None
    zookeeper_lock_key: str | None
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int
    acquire_timeout_ms: int  # hoodie.write.lock.wait_time_ms: one acquisition attempt
    retry_wait_ms: int  # ZooKeeper connection retries: base sleep
    retry_max_wait_ms: int
    num_retries: int
    client_num_retries: int  # retries of a failed acquisition
    client_retry_wait_ms: int

    @classmethod
    def from_reader(cls, r: KeyReader, concurrency_mode: WriteConcurrencyMode) -> LockConfig:
        provider_class = r.get_str(PROVIDER_KEY).strip()
        config = cls(
            table_name=r.table_name,
            provider_class=provider_class,
            provider=_PROVIDERS.get(provider_class, LockProviderKind.UNSUPPORTED),
            zookeeper_url=_stripped(r.get_optional_str(URL_KEY)),
            zookeeper_base_path=_stripped(r.get_optional_str(BASE_PATH_KEY)),
            zookeeper_lock_key=_stripped(r.get_optional_str(LOCK_KEY_KEY) or r.get_optional_str(TABLE_NAME)),
            zookeeper_session_timeout_ms=r.get_int(LOCK_ZK_SESSION_TIMEOUT_MS),
            zookeeper_connection_timeout_ms=r.get_int(LOCK_ZK_CONNECTION_TIMEOUT_MS),
            acquire_timeout_ms=r.get_int(LOCK_WAIT_TIME_MS),
            retry_wait_ms=r.get_int(LOCK_RETRY_WAIT_TIME_MS),
            retry_max_wait_ms=r.get_int(LOCK_RETRY_MAX_WAIT_TIME_MS),
            num_retries=r.get_int(LOCK_NUM_RETRIES),
            client_num_retries=r.get_int(LOCK_CLIENT_NUM_RETRIES),
            client_retry_wait_ms=r.get_int(LOCK_CLIENT_RETRY_WAIT_TIME_MS),
        )
        config._validate(r, concurrency_mode)
        return config

    def _validate(self, r: KeyReader, concurrency_mode: WriteConcurrencyMode) -> None:
        if self.zookeeper_url is not None:
            _check_connect_string(r, self.zookeeper_url)
        if self.zookeeper_base_path is not None:
            path = self.zookeeper_base_path
            if not path.startswith("/") or path.endswith("/"):
                # Hudi locks `<base_path>/<lock_key>`; ZooKeeper paths are absolute without empty segments.
                raise r.error(BASE_PATH_KEY, "must be an absolute znode path without a trailing '/'")
        if concurrency_mode is not WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL:
            return
        if self.provider is LockProviderKind.UNSUPPORTED:
            raise r.error(
                PROVIDER_KEY,
                f"is not supported by the product (supported: {ZOOKEEPER_PROVIDER}, {IN_PROCESS_PROVIDER})",
            )
        if self.provider is LockProviderKind.ZOOKEEPER:
            self.require_zookeeper()

    def require_zookeeper(self) -> None:
        """Raise ConfigError naming every missing key the ZooKeeper lock needs."""
        needed = ((URL_KEY, self.zookeeper_url), (BASE_PATH_KEY, self.zookeeper_base_path))
        missing = [key for key, value in needed if value is None]
        if missing:
            raise ConfigError(
                f"table {self.table_name!r}: the ZooKeeper lock needs {' and '.join(missing)} "
                "(the same values as the table's writers)"
            )

    def lock_key_for(self, hoodie_table_name: str) -> str:
        """The lock znode: the configured lock_key, else the table's `hoodie.table.name` (as Hudi infers)."""
        return self.zookeeper_lock_key or hoodie_table_name

    def zookeeper_lock_path(self, hoodie_table_name: str) -> str:
        """`<base_path>/<lock_key>`: the InterProcessMutex znode of Hudi's ZookeeperBasedLockProvider."""
        self.require_zookeeper()
        assert self.zookeeper_base_path is not None
        return f"{self.zookeeper_base_path}/{self.lock_key_for(hoodie_table_name)}"

    def zookeeper_settings(self, hoodie_table_name: str) -> ZookeeperLockSettings:
        """The ZooKeeper lock of the table named `hoodie_table_name`; ConfigError names what is missing."""
        self.require_zookeeper()
        assert self.zookeeper_url is not None and self.zookeeper_base_path is not None
        try:
            return ZookeeperLockSettings(
                connect_string=self.zookeeper_url,
                base_path=self.zookeeper_base_path,
                lock_key=self.lock_key_for(hoodie_table_name),
                session_timeout_ms=self.zookeeper_session_timeout_ms,
                connection_timeout_ms=self.zookeeper_connection_timeout_ms,
                wait_time_ms=self.acquire_timeout_ms,
                retry_wait_time_ms=self.retry_wait_ms,
                retry_max_wait_time_ms=self.retry_max_wait_ms,
                num_retries=self.num_retries,
            )
        except ConfigError as error:  # the constructor's checks do not know the table
            raise ConfigError(f"table '{self.table_name}': {error}") from None


def lock_config_from_props(props: Mapping[str, str], table_name: str) -> LockConfig:
    """The lock keys of resolved props (`HoodieConfig.effective()`), with the registry's defaults.

    Only `hoodie.write.lock.*` keys are read: the lock key falls back to `table_name`, the name in the
    table's hoodie.properties, which Hudi's writers' `hoodie.table.name` (from which Hudi infers
    `hoodie.write.lock.zookeeper.lock_key`) must equal.
    """
    lock_keys = {k: v for k, v in props.items() if k in HOODIE_KEYS and HOODIE_KEYS[k].group is KeyGroup.LOCK}
    return LockConfig.from_reader(KeyReader(table_name, lock_keys), WriteConcurrencyMode.SINGLE_WRITER)


@dataclass(frozen=True)
class ZookeeperLockSettings:
    """Where and how to take the table's ZooKeeper lock (Hudi's `ZookeeperBasedLockProvider` keys)."""

    connect_string: str
    """`hoodie.write.lock.zookeeper.url`: the whole connect string, e.g. `zk1:2181,zk2:2181` (Hudi
    0.14/0.15 hand it to Curator unchanged and ignore `...zookeeper.port`; a host without a port
    means 2181)."""
    base_path: str
    """`hoodie.write.lock.zookeeper.base_path`: parent znode, e.g. `/hudi/locks`."""
    lock_key: str
    """`hoodie.write.lock.zookeeper.lock_key`: lock znode name under base_path; Hudi infers the table name."""
    session_timeout_ms: int
    connection_timeout_ms: int
    wait_time_ms: int
    """`hoodie.write.lock.wait_time_ms`: default acquire timeout (one Curator `acquire(time)` in Hudi)."""
    retry_wait_time_ms: int
    """`hoodie.write.lock.wait_time_ms_between_retry`: base retry sleep; also caps our reconnect backoff."""
    retry_max_wait_time_ms: int
    num_retries: int

    def __post_init__(self) -> None:
        where = "ZooKeeper lock"
        if not self.connect_string or any(c.isspace() for c in self.connect_string):
            raise ConfigError(f"{where}: {URL_KEY}={self.connect_string!r} is not a ZooKeeper connect string")
        if not self.base_path.startswith("/") or self.base_path.endswith("/") or "//" in self.base_path:
            # Hudi builds `base_path + "/" + lock_key` verbatim; a trailing slash would make `//`.
            raise ConfigError(
                f"{where}: {BASE_PATH_KEY}={self.base_path!r} must be an absolute znode path "
                "without a trailing '/'"
            )
        key = self.lock_key
        if not key or key.startswith("/") or key.endswith("/") or "//" in key:
            raise ConfigError(f"{where}: {LOCK_KEY_KEY}={self.lock_key!r} is not a valid znode name")

    @property
    def lock_path(self) -> str:
        """The InterProcessMutex path Hudi's writers use: `<base_path>/<lock_key>`."""
        return f"{self.base_path}/{self.lock_key}"

    @classmethod
    def from_hoodie_props(cls, props: Mapping[str, str], table_name: str) -> ZookeeperLockSettings:
        """Read Hudi's keys; `lock_key` defaults to the table name (`hoodie.table.name`) as in Hudi."""
        settings = lock_config_from_props(props, table_name).zookeeper_settings(table_name)
        connect_string = settings.connect_string
        if props.get(LOCK_ZK_PORT) and any(
            ":" not in host for host in connect_string.split("/")[0].split(",")
        ):
            log.warning(
                "table '%s': %s=%s is ignored, as by Hudi 0.14/0.15; hosts of %s=%s without a port use 2181",
                table_name,
                LOCK_ZK_PORT,
                props.get(LOCK_ZK_PORT),
                URL_KEY,
                connect_string,
            )
        return settings


def _stripped(value: str | None) -> str | None:
    return value.strip() if value is not None else None


def _check_connect_string(r: KeyReader, url: str) -> None:
    hosts, _, chroot = url.partition("/")
    for host in hosts.split(","):
        name, colon, port = host.strip().rpartition(":") if ":" in host else (host.strip(), "", "")
        if not name or (colon and not port.isdigit()):
            raise r.error(URL_KEY, "is not a ZooKeeper connect string (host1:2181,host2:2181[/chroot])")
    if chroot and chroot.endswith("/"):
        raise r.error(URL_KEY, "has a chroot ending in '/'")
