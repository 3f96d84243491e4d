"""Value normalisation (YAML scalars to Hudi's strings) and typed parsing."""

from __future__ import annotations

import pytest

from service.config.cleaning import CleaningPolicy
from service.config.clustering import LayoutStrategy, PartitionFilterMode
from service.config.hoodie_keys import HOODIE_KEYS
from service.config.values import normalise, parse
from service.errors import ConfigError


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, "true"), (False, "false"), (7, "7"), (1e-09, "1e-09"), ("gzip", "gzip"), (None, None)],
)
def test_normalise_yaml_scalar_to_hudi_string(value: object, expected: str | None) -> None:
    assert normalise("t", "hoodie.k", value) == expected


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, float("nan")])
def test_normalise_rejects_non_scalars_naming_table_and_key(value: object) -> None:
    with pytest.raises(ConfigError, match=r"table 't': hoodie\.k"):
        normalise("t", "hoodie.k", value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("hoodie.cleaner.commits.retained", "12", 12),
        ("hoodie.cleaner.commits.retained", " +12 ", 12),
        ("hoodie.parquet.max.file.size", "9223372036854775807", 2**63 - 1),
        ("hoodie.clustering.inline", "TRUE", True),
        ("hoodie.clustering.inline", "false", False),
        ("hoodie.index.bloom.fpp", "1e-7", 1e-7),
        ("hoodie.layout.optimize.strategy", "z-order", "ZORDER"),
        ("hoodie.layout.optimize.strategy", "hilbert", "HILBERT"),
        ("hoodie.write.concurrency.mode", "optimistic_concurrency_control", "OPTIMISTIC_CONCURRENCY_CONTROL"),
        ("hoodie.parquet.compression.codec", "snappy", "SNAPPY"),
    ],
)
def test_parse_accepts_what_hudi_accepts(key: str, value: str, expected: object) -> None:
    assert parse(HOODIE_KEYS[key], value, "t") == expected


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("hoodie.cleaner.commits.retained", "ten", "is not an integer"),
        ("hoodie.cleaner.commits.retained", "1.5", "is not an integer"),
        ("hoodie.cleaner.commits.retained", "2147483648", "out of range for a 32-bit integer"),
        ("hoodie.cleaner.commits.retained", "-1", "must be at least 0"),
        ("hoodie.clustering.inline", "yes", "is not a boolean"),
        ("hoodie.index.bloom.fpp", "tiny", "is not a number"),
        ("hoodie.index.bloom.fpp", "inf", "is not a finite number"),
        # Hudi parses these with Enum.valueOf: lower case fails there too.
        ("hoodie.cleaner.policy", "keep_latest_commits", "Hudi matches these case-sensitively"),
        ("hoodie.clustering.plan.partition.filter.mode", "recent_days", "is not one of"),
        ("hoodie.table.timeline.timezone", "utc", "is not one of"),
    ],
)
def test_parse_error_names_table_key_and_value(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(HOODIE_KEYS[key], value, "orders")
    assert str(info.value).startswith(f"table 'orders': {key}={value!r} ")
    assert reason in str(info.value)


def test_java_enum_auto_value_is_the_java_constant_name() -> None:
    # StrEnum's own auto() lower-cases; Hudi's Enum.valueOf needs the constant's exact name.
    assert [m.value for m in CleaningPolicy] == [
        "KEEP_LATEST_COMMITS",
        "KEEP_LATEST_FILE_VERSIONS",
        "KEEP_LATEST_BY_HOURS",
    ]
    assert LayoutStrategy("ZORDER") is LayoutStrategy.ZORDER
    assert all(m.value == m.name for m in PartitionFilterMode)
