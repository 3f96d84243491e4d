"""Typed access to resolved `hoodie.*` values with Hudi's defaults, for building the per-concern views."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from service.config.hoodie_keys import HOODIE_KEYS, HoodieKey
from service.config.values import TypedValue, describe, parse
from service.errors import ConfigError


@dataclass(frozen=True)
class KeyReader:
    """Values by Hudi's primary names; `written` remembers the name the user wrote (maybe an alternative)."""

    table_name: str
    values: Mapping[str, str]
    written: Mapping[str, str] = field(default_factory=dict)

    def spec(self, key: str) -> HoodieKey:
        return HOODIE_KEYS[key]

    def is_set(self, key: str) -> bool:
        return key in self.values

    def string(self, key: str) -> str | None:
        """The value as set, else Hudi's default (None when Hudi has none)."""
        return self.values.get(key, self.spec(key).default)

    def typed(self, key: str) -> TypedValue | None:
        raw = self.string(key)
        if raw is None:
            return None
        return parse(self.spec(key), raw, self.table_name, self.written.get(key))

    def get_int(self, key: str) -> int:
        value = self.typed(key)
        assert isinstance(value, int) and not isinstance(value, bool), key
        return value

    def get_bool(self, key: str) -> bool:
        value = self.typed(key)
        assert isinstance(value, bool), key
        return value

    def get_float(self, key: str) -> float:
        value = self.typed(key)
        assert isinstance(value, float), key
        return value

    def get_str(self, key: str) -> str:
        value = self.typed(key)
        assert isinstance(value, str), key
        return value

    def get_optional_str(self, key: str) -> str | None:
        """Strings Hudi treats as absent when empty (`StringUtils.isNullOrEmpty`)."""
        raw = self.string(key)
        return None if raw is None or raw.strip() == "" else raw

    def error(self, key: str, reason: str) -> ConfigError:
        """ConfigError about `key`'s current value, named as the user wrote it."""
        value = self.string(key)
        name = self.written.get(key, key)
        if value is None:
            return ConfigError(f"table {self.table_name!r}: {name} {reason}")
        return ConfigError(f"{describe(self.table_name, name, value)} {reason}")
