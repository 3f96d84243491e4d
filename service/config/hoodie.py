"""`HoodieConfig`: one table's `hoodie.*` settings, resolved against Hudi's keys and defaults, typed, checked.

Built from any mapping of Hudi keys: a `--props` file plus `--hoodie-conf` pairs (`service.config.props`), or
a table's `hoodie.*` entries in the daemon's YAML file, whose values may be YAML ints, floats or booleans.
Alternative names resolve to Hudi's primary name (the primary wins when both are given, as in Hudi). Unknown
keys under the prefixes the product implements produce warnings naming the closest known key; any other key
passes through untouched, so whole Hudi writer configs can be pasted.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from service.config.cleaning import ArchivalConfig, CleanConfig, check_archival_against_cleaning
from service.config.clustering import ClusteringConfig
from service.config.compaction import CompactionConfig
from service.config.hoodie_keys import ALTERNATIVE_NAMES, HOODIE_KEYS, is_watched, known_names
from service.config.locking import LockConfig, WriteConcurrencyMode
from service.config.parquet import ParquetWriteConfig
from service.config.reader import KeyReader
from service.config.values import TypedValue, normalise, parse
from service.errors import ConfigError

logger = logging.getLogger(__name__)


class TimelineTimezone(StrEnum):
    """`hoodie.table.timeline.timezone` (Hudi's `HoodieTimelineTimeZone`): the zone of instant times."""

    LOCAL = "LOCAL"
    UTC = "UTC"


@dataclass(frozen=True)
class HoodieConfig:
    """Typed, validated views of one table's Hudi settings; `warnings` were also logged."""

    table_name: str
    raw: Mapping[str, str]  # every key given, values in Hudi's string form (pass-through keys included)
    values: Mapping[str, str]  # known keys that were set, by Hudi's primary name
    warnings: tuple[str, ...]
    write_concurrency_mode: WriteConcurrencyMode
    timeline_timezone: TimelineTimezone  # hoodie.properties decides for an existing table
    clustering: ClusteringConfig
    compaction: CompactionConfig
    clean: CleanConfig
    archival: ArchivalConfig
    parquet: ParquetWriteConfig
    lock: LockConfig

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object], table_name: str) -> HoodieConfig:
        """Resolve, type and check `mapping`; ConfigError names the table, the key and the value."""
        raw = _normalised(mapping, table_name)
        warnings: list[str] = []
        values, written = _resolve_names(raw, table_name, warnings)
        reader = KeyReader(table_name, values, written)
        mode = WriteConcurrencyMode(reader.get_str("hoodie.write.concurrency.mode"))
        clean = CleanConfig.from_reader(reader, mode, warnings)
        archival = ArchivalConfig.from_reader(reader)
        check_archival_against_cleaning(table_name, archival, clean, warnings)
        config = cls(
            table_name=table_name,
            raw=MappingProxyType(raw),
            values=MappingProxyType(values),
            warnings=tuple(warnings),
            write_concurrency_mode=mode,
            timeline_timezone=TimelineTimezone(reader.get_str("hoodie.table.timeline.timezone")),
            clustering=ClusteringConfig.from_reader(reader),
            compaction=CompactionConfig.from_reader(reader),
            clean=clean,
            archival=archival,
            parquet=ParquetWriteConfig.from_reader(reader),
            lock=LockConfig.from_reader(reader, mode),
        )
        for warning in warnings:
            logger.warning("%s", warning)
        return config

    def is_set(self, key: str) -> bool:
        """Whether `key` (a primary or alternative name) was given."""
        return ALTERNATIVE_NAMES.get(key, key) in self.values

    def get(self, key: str) -> TypedValue | None:
        """Typed value of a known key (primary or alternative name), Hudi's default when not set."""
        primary = ALTERNATIVE_NAMES.get(key, key)
        if primary not in HOODIE_KEYS:
            raise KeyError(f"{key} is not a hoodie key the product knows")
        return KeyReader(self.table_name, self.values).typed(primary)

    def effective(self) -> dict[str, str]:
        """Every known key with its value or Hudi's default, over the pass-through keys (as Hudi's props)."""
        merged = {k: v for k, v in self.raw.items() if k not in HOODIE_KEYS and k not in ALTERNATIVE_NAMES}
        for name, spec in HOODIE_KEYS.items():
            value = self.values.get(name, spec.default)
            if value is not None:
                merged[name] = value
        return merged


def _normalised(mapping: Mapping[str, object], table_name: str) -> dict[str, str]:
    raw: dict[str, str] = {}
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise ConfigError(f"table {table_name!r}: configuration key {key!r} is not a string")
        text = normalise(table_name, key, value)
        if text is not None:
            raw[key] = text
    return raw


def _resolve_names(
    raw: Mapping[str, str], table_name: str, warnings: list[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Primary name -> value, and primary name -> the name the user wrote."""
    values: dict[str, str] = {}
    written: dict[str, str] = {}
    for name, value in raw.items():
        if name in HOODIE_KEYS:
            primary = name
        elif name in ALTERNATIVE_NAMES:
            primary = ALTERNATIVE_NAMES[name]
            if primary in raw:
                if raw[primary] != value:
                    warnings.append(
                        f"table {table_name!r}: {name}={value!r} is ignored; "
                        f"{primary}={raw[primary]!r} takes precedence, as in Hudi"
                    )
                continue
        else:
            if is_watched(name):
                warnings.append(
                    f"table {table_name!r}: unknown key {name} is ignored; "
                    f"closest known key: {closest_known_key(name)}"
                )
            continue
        spec = HOODIE_KEYS[primary]
        parse(spec, value, table_name, name)  # fail on the first bad value, in input order
        if spec.only_default and value != spec.default:
            default = f"its default {spec.default!r}" if spec.default is not None else "leaving it unset"
            raise ConfigError(
                f"table {table_name!r}: {name}={value!r} is not supported by the product, which reproduces "
                f"only Hudi's behaviour at {default} ({spec.doc}); remove the setting"
            )
        values[primary] = value
        written[primary] = name
    return values, written


def closest_known_key(name: str) -> str:
    """The known key (primary or alternative name) most similar to `name`."""
    return difflib.get_close_matches(name, known_names(), n=1, cutoff=0.0)[0]
