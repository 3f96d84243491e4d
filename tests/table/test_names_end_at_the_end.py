"""A stored name is a name only as a whole: Java's `Matcher.matches()` consumes the whole name, while
Python's `$` also matches before a trailing newline, so `<instant>.commit\n` (a file a stray tool
could leave) was read as the instant `<instant>.commit`."""

from __future__ import annotations

import pytest

from service.errors import CorruptTableError
from service.table.archived_log import archive_file_version
from service.table.data_files import parse_log_file_name
from service.table.instant import parse_instant_file_name
from service.table.mdt.files_listing import parse_log_file_name as parse_mdt_log_file_name

INSTANT = "20240101000000000.commit"
LOG = ".00000000-aaaa-bbbb-cccc-dddddddddddd-0_20240101000000000.log.1_0-1-0"


def test_an_instant_file_name_with_a_trailing_newline_is_not_an_instant() -> None:
    assert parse_instant_file_name(INSTANT).timestamp == "20240101000000000"
    with pytest.raises(CorruptTableError, match="unrecognised timeline file name"):
        parse_instant_file_name(INSTANT + "\n")


def test_a_log_file_name_with_a_trailing_newline_is_not_a_log_file() -> None:
    assert parse_log_file_name(LOG) is not None
    assert parse_log_file_name(LOG + "\n") is None


def test_an_archive_file_name_with_a_trailing_newline_is_not_an_archive_file() -> None:
    assert archive_file_version(".commits_.archive.3_1-0-1") == 3
    assert archive_file_version(".commits_.archive.3_1-0-1\n") is None


def test_a_metadata_table_log_file_name_with_a_trailing_newline_is_not_a_log_file() -> None:
    name = ".files-0000-0_20240101000000000.log.1_0-1-0"
    assert parse_mdt_log_file_name(name) is not None
    assert parse_mdt_log_file_name(name + "\n") is None
