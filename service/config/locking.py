"""`LockConfig`: Hudi's lock keys (§6.1 of HUDI_FORMAT.md) as a typed, frozen view."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from service.config.reader import KeyReader
from service.errors import ConfigError

ZOOKEEPER_PROVIDER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
IN_PROCESS_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"

URL_KEY = "hoodie.write.lock.zookeeper.url"
BASE_PATH_KEY = "hoodie.write.lock.zookeeper.base_path"
LOCK_KEY_KEY = "hoodie.write.lock.zookeeper.lock_key"
PROVIDER_KEY = "hoodie.write.lock.provider"


class WriteConcurrencyMode(StrEnum):
    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"


class LockProviderKind(StrEnum):
    ZOOKEEPER = "ZOOKEEPER"
    IN_PROCESS = "IN_PROCESS"
    UNSUPPORTED = "UNSUPPORTED"  # a Hudi provider the product does not implement (file system, metastore)


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
            zookeeper_lock_key=_stripped(
                r.get_optional_str(LOCK_KEY_KEY) or r.get_optional_str("hoodie.table.name")
            ),
            zookeeper_session_timeout_ms=r.get_int("hoodie.write.lock.zookeeper.session_timeout_ms"),
            zookeeper_connection_timeout_ms=r.get_int("hoodie.write.lock.zookeeper.connection_timeout_ms"),
            acquire_timeout_ms=r.get_int("hoodie.write.lock.wait_time_ms"),
            retry_wait_ms=r.get_int("hoodie.write.lock.wait_time_ms_between_retry"),
            retry_max_wait_ms=r.get_int("hoodie.write.lock.max_wait_time_ms_between_retry"),
            num_retries=r.get_int("hoodie.write.lock.num_retries"),
            client_num_retries=r.get_int("hoodie.write.lock.client.num_retries"),
            client_retry_wait_ms=r.get_int("hoodie.write.lock.client.wait_time_ms_between_retry"),
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
        """`<base_path>/<lock_key>`, the znode Curator's InterProcessMutex in Java writers uses (§6.2)."""
        self.require_zookeeper()
        assert self.zookeeper_base_path is not None
        return f"{self.zookeeper_base_path}/{self.lock_key_for(hoodie_table_name)}"


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
