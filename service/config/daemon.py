"""The daemon's YAML file: daemon settings, `hoodie.*` defaults, and the tables it serves.

The file is validated in two layers. pydantic checks the structure (unknown fields are errors, so a
typo never silently falls back to a default). Each table's `hoodie.*` settings — the `defaults`
section under the table's own overrides, over the daemon's `hoodie.write.lock.*` keys — are then
resolved once through `HoodieConfig.from_mapping`, which names table, key and value on a bad value
and warns about unknown keys with the closest known one. Every failure is a ConfigError naming the file.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from service.config.cleaning import DEFAULT_MAX_DELETE_FRACTION
from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import LOCK_PREFIX, LOCK_ZK_URL
from service.config.locking import ZookeeperLockSettings
from service.config.schedule import (
    ArchivalSchedule,
    CleaningSchedule,
    ClusteringSchedule,
    CompactionSchedule,
    RepairSchedule,
)
from service.config.windows import MaintenanceWindow
from service.config.zones import ZoneChoice, choose_zone, machine_zone, named_zone
from service.errors import ConfigError

HoodieValue = str | int | float | bool
LOCK_KEY_PREFIX = LOCK_PREFIX


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SparkSettings(_Model):
    master: str = "local[*]"
    conf: dict[str, str] = Field(default_factory=dict)


class LockSettings(_Model):
    """`in-process` excludes this process's threads only: safe solely when no other writer commits."""

    provider: Literal["in-process", "zookeeper"] = "in-process"
    properties: dict[str, HoodieValue] = Field(default_factory=dict)  # Hudi's hoodie.write.lock.* keys

    @field_validator("properties")
    @classmethod
    def _lock_keys_only(cls, value: dict[str, HoodieValue]) -> dict[str, HoodieValue]:
        stray = sorted(k for k in value if not k.startswith(LOCK_KEY_PREFIX))
        if stray:
            raise ValueError(f"only {LOCK_KEY_PREFIX}* keys belong here, got {', '.join(stray)}")
        return value


class MetricsSettings(_Model):
    host: str = "127.0.0.1"
    port: int = Field(default=9464, ge=0, le=65535)  # 0: an ephemeral port (tests)


class LoggingSettings(_Model):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class DeletionSettings(_Model):
    # The cleaner's volume breaker: refuse a plan deleting more than this fraction of the files of the
    # table's live file groups (`strategies.cleaning.safety`).
    max_delete_fraction: float = Field(default=DEFAULT_MAX_DELETE_FRACTION, gt=0, le=1)


class FailureSettings(_Model):
    backoff_initial_seconds: float = Field(default=30.0, ge=0)
    backoff_max_seconds: float = Field(default=900.0, ge=0)
    quarantine_after: int = Field(default=5, ge=1)  # consecutive failed ticks of one table
    # A plan of ours whose execution failed this many times in a row is purged (writers unblocked).
    purge_after: int = Field(default=3, ge=1)
    history_size: int = Field(default=10, ge=1)


DEFAULT_CLUSTER_PATH = "/hudi-table-service/members"


class ClusterSettings(_Model):
    """Replicas dividing the configured tables among themselves through ZooKeeper (off: one replica).

    `zookeeper_url` defaults to the lock's `hoodie.write.lock.zookeeper.url`, `replica_id` to
    `<hostname>-<pid>` (`replica_id()`); the session timeout is the lock's
    (`hoodie.write.lock.zookeeper.session_timeout_ms`).
    """

    enabled: bool = False
    zookeeper_url: str | None = None
    path: str = DEFAULT_CLUSTER_PATH
    replica_id: str = ""
    # How long the member list must stay unchanged before the tables are divided again
    # (`service.daemon.membership`): a rolling restart rebalances once, not once per replica.
    settle_seconds: float = Field(default=5.0, gt=0)

    @field_validator("path")
    @classmethod
    def _znode_path(cls, value: str) -> str:
        if not value.startswith("/") or value.endswith("/") or "//" in value:
            raise ValueError("must be an absolute znode path without a trailing '/'")
        return value

    @field_validator("replica_id")
    @classmethod
    def _znode_name(cls, value: str) -> str:
        if "/" in value or any(c.isspace() for c in value):
            raise ValueError("must be a znode name: no '/' and no whitespace")
        return value

    def effective_replica_id(self) -> str:
        return self.replica_id or f"{socket.gethostname()}-{os.getpid()}"


class DaemonSettings(_Model):
    poll_interval_seconds: float = Field(default=60.0, gt=0)
    max_concurrent_clusterings: int = Field(default=1, ge=1)
    max_concurrent_cleans: int = Field(default=2, ge=1)
    # Compactions across all tables (Spark work, like clustering; its own slots).
    max_concurrent_compactions: int = Field(default=1, ge=1)
    # Ticks reading timelines and planning at once, across tables and services (`TickGate`); a tick
    # waiting for a slot or executing in one does not count. Unset: two per core.
    max_concurrent_ticks: int | None = Field(default=None, ge=1)
    shutdown_grace_seconds: float = Field(default=60.0, ge=0)
    # How often the config file is checked for changes (hot reload; SIGHUP reloads at once). 0: never.
    config_watch_seconds: float = Field(default=5.0, ge=0)
    spark: SparkSettings = Field(default_factory=SparkSettings)
    lock: LockSettings = Field(default_factory=LockSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    deletion: DeletionSettings = Field(default_factory=DeletionSettings)
    failures: FailureSettings = Field(default_factory=FailureSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    # Daemon-wide: no clustering execution starts outside these (a table's `clustering.windows`
    # overrides them). Empty: any time.
    maintenance_windows: tuple[MaintenanceWindow, ...] = ()
    # Runs kept per table for the status page and `/api/v1/tables/{name}` (rebuilt at start).
    run_history_size: int = Field(default=50, ge=1)
    # The writers' zone for tables with a LOCAL timeline (a table entry's `timezone` overrides it);
    # unset: this machine's zone, as the CLI and Java's services use their JVM's (`service.config.zones`).
    timezone: str | None = None
    # How often the `discover:` roots are scanned for tables that appeared or disappeared.
    discovery_interval_seconds: float = Field(default=300.0, gt=0)

    @field_validator("timezone")
    @classmethod
    def _iana_zone(cls, value: str | None) -> str | None:
        return _check_zone(value)


class TableTemplate(_Model):
    """What a table is served with: a table entry without its name and where it is (a discovered
    table's, from its root's rule)."""

    # The writers' zone for a LOCAL timeline; unset: `daemon.timezone`, else this machine's zone.
    timezone: str | None = None
    hoodie: dict[str, HoodieValue] = Field(default_factory=dict)
    clustering: ClusteringSchedule = Field(default_factory=ClusteringSchedule)
    cleaning: CleaningSchedule = Field(default_factory=CleaningSchedule)
    compaction: CompactionSchedule = Field(default_factory=CompactionSchedule)
    archival: ArchivalSchedule = Field(default_factory=ArchivalSchedule)
    repair: RepairSchedule = Field(default_factory=RepairSchedule)

    @field_validator("timezone")
    @classmethod
    def _iana_zone(cls, value: str | None) -> str | None:
        return _check_zone(value)

    def settings(self, name: str, base_path: str, storage_options: Mapping[str, str]) -> TableSettings:
        template = {k: v for k, v in self.model_dump().items() if k in TableTemplate.model_fields}
        return TableSettings(
            name=name, base_path=base_path, storage_options=dict(storage_options), **template
        )


class TableSettings(TableTemplate):
    """A served table's entry: where it is, and what it is served with."""

    name: str = Field(min_length=1)
    base_path: str = Field(min_length=1)
    storage_options: dict[str, str] = Field(default_factory=dict)


class DiscoveryRule(_Model):
    """Tables whose path under the root matches `match` (fnmatch: `*` crosses folders) get `table`."""

    match: str = Field(min_length=1)
    table: TableTemplate = Field(default_factory=TableTemplate)


class DiscoveryRoot(_Model):
    """`discover:` one root (a local path or a URI: s3a://bucket/prefix) scanned for Hudi tables, as
    Hudi's multi-table runner's `--auto-discovery` does: every folder holding `.hoodie/hoodie.properties`
    up to `max_depth` folders down, whose path under the root matches an `include` pattern and no
    `exclude` one (fnmatch). Each is served with the first matching rule's `table`, else `table`."""

    root: str = Field(min_length=1)
    storage_options: dict[str, str] = Field(default_factory=dict)
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    max_depth: int = Field(default=4, ge=1, le=16)
    rules: tuple[DiscoveryRule, ...] = ()
    table: TableTemplate = Field(default_factory=TableTemplate)

    def template_for(self, rel: str) -> TableTemplate:
        return next((r.table for r in self.rules if fnmatch.fnmatchcase(rel, r.match)), self.table)

    def wants(self, rel: str) -> bool:
        return any(fnmatch.fnmatchcase(rel, p) for p in self.include) and not any(
            fnmatch.fnmatchcase(rel, p) for p in self.exclude
        )


def _check_zone(value: str | None) -> str | None:
    if value is not None and named_zone(value) is None:
        raise ValueError(f"{value!r} is not a known IANA time zone")
    return value


class DaemonFile(_Model):
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    defaults: dict[str, HoodieValue] = Field(default_factory=dict)
    tables: list[TableSettings] = Field(default_factory=list)
    discover: list[DiscoveryRoot] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_tables(self) -> DaemonFile:
        _check_unique("table name", [t.name for t in self.tables])
        _check_unique("base_path", [t.base_path.rstrip("/") for t in self.tables])
        return self

    @model_validator(mode="after")
    def _cluster_zookeeper(self) -> DaemonFile:
        cluster = self.daemon.cluster
        if (
            cluster.enabled
            and not cluster.zookeeper_url
            and LOCK_ZK_URL not in self.cluster_lock_properties()
        ):
            raise ValueError(
                f"daemon.cluster.zookeeper_url: needed when daemon.lock.properties has no {LOCK_ZK_URL}"
            )
        return self

    def cluster_lock_properties(self) -> dict[str, HoodieValue]:
        """Lock keys the replicas share (`daemon.lock.properties` under `defaults`): where they meet."""
        merged = {**self.daemon.lock.properties, **self.defaults}
        return {k: v for k, v in merged.items() if k.startswith(LOCK_KEY_PREFIX)}


def _check_unique(what: str, values: list[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} appears more than once in tables")
        seen.add(value)


# What a LOCAL table's refusal asks for when no zone is known.
ZONE_SETTINGS = "daemon.timezone (or the table entry's timezone)"


@dataclass(frozen=True)
class TableEntry:
    settings: TableSettings
    hoodie: HoodieConfig
    fingerprint: str  # changes whenever the table's entry (or what it inherits) changes
    # The zone of a LOCAL timeline and where it came from (`choose_zone`); None: none is known.
    zone_choice: ZoneChoice | None = None

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def zone(self) -> ZoneInfo | None:
        return self.zone_choice.zone if self.zone_choice is not None else None


@dataclass(frozen=True)
class DaemonConfig:
    path: str
    daemon: DaemonSettings
    tables: tuple[TableEntry, ...]
    # `daemon.lock.properties` under `defaults`, lock keys only: the cluster's ZooKeeper settings.
    cluster_lock_properties: Mapping[str, HoodieValue] = field(default_factory=dict)
    # The roots scanned for tables (`service.discovery`), and what a found table's entry inherits.
    discover: tuple[DiscoveryRoot, ...] = ()
    file: DaemonFile | None = None
    # Tables found under `discover` roots, beside the file's own (`with_discovered`).
    discovered: tuple[TableEntry, ...] = ()

    def with_discovered(self, found: list[TableSettings]) -> DaemonConfig:
        """This config serving `found` too: each becomes an entry as a `tables:` entry would, under the
        same defaults; one whose base path or name a listed table has is left to that one."""
        assert self.file is not None, "only a config read from a file discovers"
        listed_paths = {e.settings.base_path.rstrip("/") for e in self.tables if e not in self.discovered}
        listed_names = {e.name for e in self.tables if e not in self.discovered}
        own = tuple(e for e in self.tables if e not in self.discovered)
        machine = machine_zone()
        entries = tuple(
            _entry(settings, self.file, self.path, machine)
            for settings in found
            if settings.base_path.rstrip("/") not in listed_paths and settings.name not in listed_names
        )
        return replace(self, tables=own + entries, discovered=entries)

    def table(self, name: str) -> TableEntry:
        for entry in self.tables:
            if entry.name == name:
                return entry
        raise KeyError(name)


def load_daemon_config(path: str | Path) -> DaemonConfig:
    """Read and validate the daemon's YAML file; ConfigError names the file (and line, for YAML errors)."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the daemon config: {exc}") from exc
    return parse_daemon_config(text, source)


def parse_daemon_config(text: str, source: str = "<config>") -> DaemonConfig:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}:{where}: invalid YAML: {problem}") from None
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise ConfigError(f"{source}: the daemon config must be a mapping, got {type(document).__name__}")
    try:
        model = DaemonFile.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid daemon config: {_describe(exc, document)}") from None
    machine = machine_zone()
    entries = tuple(_entry(table, model, source, machine) for table in model.tables)
    return DaemonConfig(
        source, model.daemon, entries, model.cluster_lock_properties(), tuple(model.discover), model
    )


def _entry(table: TableSettings, model: DaemonFile, source: str, machine: ZoneChoice | None) -> TableEntry:
    """A served table's entry: its `hoodie.*` resolved over the defaults and lock keys, its zone."""
    lock = model.daemon.lock
    mapping = {**lock.properties, **model.defaults, **table.hoodie}
    try:
        hoodie = HoodieConfig.from_mapping(mapping, table.name)
        if lock.provider == "zookeeper":
            ZookeeperLockSettings.from_hoodie_props(hoodie.effective(), table.name)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    zone = choose_zone(table.timezone, model.daemon.timezone, machine)
    inherited = [mapping, lock.provider, model.daemon.timezone]
    fingerprint = hashlib.sha256(json.dumps([table.model_dump(), *inherited], sort_keys=True).encode())
    return TableEntry(table, hoodie, fingerprint.hexdigest(), zone)


def _describe(exc: ValidationError, document: Mapping[str, object]) -> str:
    parts = []
    tables = document.get("tables")
    for error in exc.errors():
        location = ".".join(str(p) for p in error["loc"])
        loc = error["loc"]
        if len(loc) > 1 and loc[0] == "tables" and isinstance(loc[1], int) and isinstance(tables, list):
            entry = tables[loc[1]] if loc[1] < len(tables) else None
            if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                location = f"table {entry['name']!r}: " + ".".join(str(p) for p in loc[2:])
        value = error.get("input")
        shown = "" if isinstance(value, dict | list) else f" (got {value!r})"
        parts.append(f"{location}: {error['msg']}{shown}")
    return "; ".join(parts)
