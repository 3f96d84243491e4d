"""Raw configuration values to Hudi's string form, and Hudi's string form to typed Python values.

Parsing accepts what Hudi's Java accepts, with two exceptions that keep the product from silently doing
something else than asked: a boolean must be `true` or `false` (Java's `Boolean.parseBoolean` reads any other
text as false), and a number must be finite and within the Java type's range.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum

from service.config.hoodie_keys import HoodieKey, KeyType
from service.errors import ConfigError

_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)

TypedValue = int | bool | float | str


class JavaEnum(StrEnum):
    """A Hudi Java enum as a config value: members declared with `auto()` take the Java constant's name as
    their value, the string Hudi's `Enum.valueOf` reads from a `hoodie.*` key (StrEnum's own `auto()` would
    lower-case it)."""

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[str]) -> str:
        return name


def describe(table_name: str, written_key: str, value: str) -> str:
    """The common message head: `table 'orders': hoodie.x.y='value'`."""
    return f"table {table_name!r}: {written_key}={value!r}"


def normalise(table_name: str, key: str, value: object) -> str | None:
    """A mapping value (from a props file, the command line or YAML) in Hudi's string form.

    YAML gives ints, floats and booleans; Hudi's form is Java's `String.valueOf`. None (a YAML key without
    a value) means the key is not set.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"table {table_name!r}: {key}={value!r} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        return value
    raise ConfigError(
        f"table {table_name!r}: {key} must be a string, number or boolean, not {type(value).__name__}"
    )


def parse(spec: HoodieKey, value: str, table_name: str, written_key: str | None = None) -> TypedValue:
    """Parse `value` as `spec` says; ConfigError names the table, the key as written and the value."""
    head = describe(table_name, written_key or spec.name, value)
    if spec.type in (KeyType.INT, KeyType.LONG):
        return _parse_integer(spec, value, head)
    if spec.type is KeyType.BOOL:
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise ConfigError(f"{head} is not a boolean (true or false)")
        return lowered == "true"
    if spec.type is KeyType.FLOAT:
        return _parse_float(value, head)
    if spec.type is KeyType.ENUM:
        return _parse_enum(spec, value, head)
    return value


def _parse_integer(spec: HoodieKey, value: str, head: str) -> int:
    text = value.strip()
    if not _INTEGER.fullmatch(text):
        raise ConfigError(f"{head} is not an integer")
    number = int(text)
    low, high = _INT_RANGE if spec.type is KeyType.INT else _LONG_RANGE
    if not low <= number <= high:
        bits = 32 if spec.type is KeyType.INT else 64
        raise ConfigError(f"{head} is out of range for a {bits}-bit integer")
    if spec.min_value is not None and number < spec.min_value:
        raise ConfigError(f"{head} must be at least {spec.min_value}")
    return number


def _parse_float(value: str, head: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise ConfigError(f"{head} is not a number") from None
    if not math.isfinite(number):
        raise ConfigError(f"{head} is not a finite number")
    return number


def _parse_enum(spec: HoodieKey, value: str, head: str) -> str:
    aliases = dict(spec.value_aliases)
    if value.lower() in aliases:
        return aliases[value.lower()]
    candidate = value if spec.case_sensitive else value.upper()
    if candidate in spec.allowed:
        return candidate
    case_note = "" if not spec.case_sensitive else " (Hudi matches these case-sensitively)"
    raise ConfigError(f"{head} is not one of {', '.join(spec.allowed)}{case_note}")
