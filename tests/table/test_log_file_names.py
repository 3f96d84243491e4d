"""Log file names: parse and format both ways, Hudi's examples, Hudi's order within a slice."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.table.data_files import (
    CDC_SUFFIX,
    LogFileName,
    log_file_order_key,
    parse_log_file,
    parse_log_file_name,
)

_FILE_ID = st.from_regex(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d", fullmatch=True)
_INSTANT = st.from_regex(r"[0-9]{17}", fullmatch=True)
_TOKEN = st.from_regex(r"[0-9]{1,4}-[0-9]{1,4}-[0-9]{1,4}", fullmatch=True)
_NAMES = st.builds(
    LogFileName,
    file_id=_FILE_ID,
    base_instant_time=_INSTANT,
    version=st.integers(min_value=1, max_value=10**6),
    write_token=st.one_of(st.none(), _TOKEN),
    extension=st.sampled_from(["log", "archive"]),
    suffix=st.sampled_from(["", CDC_SUFFIX]),
).filter(lambda n: n.write_token is not None or not n.suffix)


@given(_NAMES)
def test_log_file_name_parse_inverts_format(name: LogFileName) -> None:
    assert parse_log_file_name(name.format()) == name


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        # Shapes Hudi writes (MOR_FORMAT §1.1: a deltacommit's log, then the rollback command's roll-over
        # with UNKNOWN_WRITE_TOKEN 1-0-1, and a CDC log); the Spark tests also round-trip every log
        # file name real Hudi 0.15 writes.
        (
            ".0712b9f9-8c3e-4b6c-9c36-1d7c0c5d5b8c-0_20250126040823628.log.1_0-33-43",
            LogFileName("0712b9f9-8c3e-4b6c-9c36-1d7c0c5d5b8c-0", "20250126040823628", 1, "0-33-43"),
        ),
        (
            ".0712b9f9-8c3e-4b6c-9c36-1d7c0c5d5b8c-0_20250126040823628.log.2_1-0-1",
            LogFileName("0712b9f9-8c3e-4b6c-9c36-1d7c0c5d5b8c-0", "20250126040823628", 2, "1-0-1"),
        ),
        (
            ".ff32ab89-5ad0-4968-83b4-89a34c95d32f-0_20240402144910683.log.1_0-26-19.cdc",
            LogFileName(
                "ff32ab89-5ad0-4968-83b4-89a34c95d32f-0", "20240402144910683", 1, "0-26-19", "log", ".cdc"
            ),
        ),
    ],
)
def test_log_file_name_parses_hudi_examples(file_name: str, expected: LogFileName) -> None:
    assert parse_log_file_name(file_name) == expected
    assert expected.format() == file_name
    log = parse_log_file("region=asia", file_name, 7)
    assert log is not None and log.name == expected and log.path == f"region=asia/{file_name}"


@pytest.mark.parametrize(
    "file_name",
    [
        "abc_0-1-2_20240101000000000.parquet",  # a base file
        ".abc_20240101000000000.log.1_0-1-2.crc",  # Hadoop's checksum beside a log
        "._.abc_20240101000000000.log.1_0-1-2",  # macOS AppleDouble junk
        ".hoodie_partition_metadata",
        ".abc_20240101000000000.log.x_0-1-2",
    ],
)
def test_log_file_name_refuses_non_log_files(file_name: str) -> None:
    assert parse_log_file_name(file_name) is None


def test_log_file_order_is_hudi_log_file_comparator() -> None:
    """`HoodieLogFile.LogFileComparator`: base instant, then version (numeric), then write token
    (String order, so "10-0-1" < "2-0-1"), token-less first."""
    names = [
        LogFileName("f", "002", 1, "0-1-1"),
        LogFileName("f", "001", 10, "0-1-1"),
        LogFileName("f", "001", 2, "2-0-1"),
        LogFileName("f", "001", 2, "10-0-1"),
        LogFileName("f", "001", 2, None),
        LogFileName("f", "001", 9, "0-1-1"),
    ]
    ordered = sorted(names, key=log_file_order_key)
    assert [(n.base_instant_time, n.version, n.write_token) for n in ordered] == [
        ("001", 2, None),
        ("001", 2, "10-0-1"),
        ("001", 2, "2-0-1"),
        ("001", 9, "0-1-1"),
        ("001", 10, "0-1-1"),
        ("002", 1, "0-1-1"),
    ]
