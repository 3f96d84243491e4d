"""ZooKeeper lock settings, read from the same `hoodie.write.lock.*` keys as Hudi's Java writers.

Self-contained on purpose: the keys, defaults and quirks are Hudi 0.14/0.15's `LockConfiguration`
(HUDI_FORMAT.md §6.1). Using the writers' values is what makes the two sides meet on one znode.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from service.errors import ConfigError

log = logging.getLogger(__name__)

ZK_URL = "hoodie.write.lock.zookeeper.url"
ZK_PORT = "hoodie.write.lock.zookeeper.port"
ZK_BASE_PATH = "hoodie.write.lock.zookeeper.base_path"
ZK_LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"
ZK_SESSION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.session_timeout_ms"
ZK_CONNECTION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.connection_timeout_ms"
WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms"
RETRY_WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms_between_retry"
RETRY_MAX_WAIT_TIME_MS = "hoodie.write.lock.max_wait_time_ms_between_retry"
NUM_RETRIES = "hoodie.write.lock.num_retries"

DEFAULT_WAIT_TIME_MS = 60_000


def read_int(props: Mapping[str, str], key: str, default: int, table_name: str, minimum: int = 0) -> int:
    """An integer property with Hudi's default; ConfigError names the table, key and value."""
    raw = props.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"table '{table_name}': {key}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"table '{table_name}': {key}={raw!r} must be >= {minimum}")
    return value


def _required(props: Mapping[str, str], key: str, table_name: str) -> str:
    value = (props.get(key) or "").strip()
    if not value:
        raise ConfigError(f"table '{table_name}': {key} is required by the ZooKeeper lock provider")
    return value


@dataclass(frozen=True)
class ZookeeperLockSettings:
    """Where and how to take the table's ZooKeeper lock; field defaults are Hudi's."""

    connect_string: str
    """`hoodie.write.lock.zookeeper.url`: the whole connect string, e.g. `zk1:2181,zk2:2181` (Hudi
    0.14/0.15 hand it to Curator unchanged and ignore `...zookeeper.port`; a host without a port
    means 2181)."""
    base_path: str
    """`hoodie.write.lock.zookeeper.base_path`: parent znode, e.g. `/hudi/locks`."""
    lock_key: str
    """`hoodie.write.lock.zookeeper.lock_key`: lock znode name under base_path; Hudi infers the table name."""
    session_timeout_ms: int = 60_000
    connection_timeout_ms: int = 15_000
    wait_time_ms: int = DEFAULT_WAIT_TIME_MS
    """`hoodie.write.lock.wait_time_ms`: default acquire timeout (one Curator `acquire(time)` in Hudi)."""
    retry_wait_time_ms: int = 1_000
    """`hoodie.write.lock.wait_time_ms_between_retry`: base retry sleep; also caps our reconnect backoff."""
    retry_max_wait_time_ms: int = 16_000
    num_retries: int = 15

    def __post_init__(self) -> None:
        where = "ZooKeeper lock"
        if not self.connect_string or any(c.isspace() for c in self.connect_string):
            raise ConfigError(f"{where}: {ZK_URL}={self.connect_string!r} is not a ZooKeeper connect string")
        if not self.base_path.startswith("/") or self.base_path.endswith("/") or "//" in self.base_path:
            # Hudi builds `base_path + "/" + lock_key` verbatim; a trailing slash would make `//`.
            raise ConfigError(
                f"{where}: {ZK_BASE_PATH}={self.base_path!r} must be an absolute znode path "
                "without a trailing '/'"
            )
        key = self.lock_key
        if not key or key.startswith("/") or key.endswith("/") or "//" in key:
            raise ConfigError(f"{where}: {ZK_LOCK_KEY}={self.lock_key!r} is not a valid znode name")

    @property
    def lock_path(self) -> str:
        """The InterProcessMutex path Hudi's writers use: `<base_path>/<lock_key>`."""
        return f"{self.base_path}/{self.lock_key}"

    @classmethod
    def from_hoodie_props(cls, props: Mapping[str, str], table_name: str) -> ZookeeperLockSettings:
        """Read Hudi's keys; `lock_key` defaults to the table name (`hoodie.table.name`) as in Hudi."""
        connect_string = _required(props, ZK_URL, table_name)
        if props.get(ZK_PORT) and any(":" not in host for host in connect_string.split("/")[0].split(",")):
            log.warning(
                "table '%s': %s=%s is ignored, as by Hudi 0.14/0.15; hosts of %s=%s without a port use 2181",
                table_name,
                ZK_PORT,
                props.get(ZK_PORT),
                ZK_URL,
                connect_string,
            )
        base_path = _required(props, ZK_BASE_PATH, table_name)
        lock_key = (props.get(ZK_LOCK_KEY) or "").strip() or table_name
        session_timeout_ms = read_int(props, ZK_SESSION_TIMEOUT_MS, 60_000, table_name, minimum=1)
        connection_timeout_ms = read_int(props, ZK_CONNECTION_TIMEOUT_MS, 15_000, table_name, minimum=1)
        wait_time_ms = read_int(props, WAIT_TIME_MS, DEFAULT_WAIT_TIME_MS, table_name)
        retry_wait_time_ms = read_int(props, RETRY_WAIT_TIME_MS, 1_000, table_name)
        retry_max_wait_time_ms = read_int(props, RETRY_MAX_WAIT_TIME_MS, 16_000, table_name)
        num_retries = read_int(props, NUM_RETRIES, 15, table_name)
        try:
            return cls(
                connect_string, base_path, lock_key, session_timeout_ms, connection_timeout_ms,
                wait_time_ms, retry_wait_time_ms, retry_max_wait_time_ms, num_retries,
            )  # fmt: skip
        except ConfigError as error:  # the constructor's checks do not know the table
            raise ConfigError(f"table '{table_name}': {error}") from None
