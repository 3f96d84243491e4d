"""Base and log files of a file group: names parsed and built exactly as Hudi and hudi-rs do."""

from __future__ import annotations

import posixpath
import re
import sys
from dataclasses import dataclass
from functools import cached_property

from service.errors import CorruptTableError

PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"
# `.<fileId>_<baseInstant>.log.<version>_<writeToken>`, optional `.cdc` suffix (Hudi's regex).
_LOG_NAME = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?\Z")


@dataclass(frozen=True)
class BaseFile:
    """`<fileId>_<writeToken>_<instantTime>.<ext>` in a partition."""

    partition_path: str
    file_name: str
    file_id: str
    write_token: str
    instant_time: str
    size_bytes: int = 0

    @cached_property  # asked hundreds of thousands of times per view of a large table
    def path(self) -> str:
        """Base-relative path."""
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name


LOG_EXTENSION = "log"  # `HoodieLogFile.DELTA_EXTENSION` without its dot
LOG_BASE_VERSION = 1  # `HoodieLogFile.LOGFILE_BASE_VERSION`
CDC_SUFFIX = ".cdc"  # `HoodieCDCUtils.CDC_LOGFILE_SUFFIX`: change-data logs, skipped by every scanner


@dataclass(frozen=True)
class LogFileName:
    """The parts of `.<fileId>_<baseInstant>.<extension>.<version>[_<writeToken>[<suffix>]]`.

    Java's `FSUtils.makeLogFileName` writes it; `FSUtils.LOG_FILE_PATTERN` reads it. The base instant
    is the slice the writer appended to (`HoodieAppendHandle.init`), not the deltacommit that wrote the
    blocks: that one is in each block's INSTANT_TIME header.
    """

    file_id: str
    base_instant_time: str
    version: int
    write_token: str | None
    extension: str = LOG_EXTENSION
    suffix: str = ""

    @property
    def is_cdc(self) -> bool:
        return self.suffix == CDC_SUFFIX

    def format(self) -> str:
        """Java's `FSUtils.makeLogFileName` (plus the CDC suffix `HoodieCDCLogger` appends)."""
        token = f"_{self.write_token}" if self.write_token is not None else ""
        return f".{self.file_id}_{self.base_instant_time}.{self.extension}.{self.version}{token}{self.suffix}"


def log_file_order_key(name: LogFileName) -> tuple[str, int, tuple[int, str], str]:
    """Sort key of Java's `HoodieLogFile.LogFileComparator`: base instant, version, write token
    (natural String order, nulls first), then suffix (a `.cdc` file after its data log).

    Readers merge log files in this (ascending) order: `MergeOnReadSnapshotRelation` and the
    compaction planner sort a slice's logs with `HoodieLogFile.getLogFileComparator()`.
    """
    token = (0, "") if name.write_token is None else (1, name.write_token)
    return (name.base_instant_time, name.version, token, name.suffix)


@dataclass(frozen=True)
class LogFile:
    partition_path: str
    file_name: str
    file_id: str
    base_instant_time: str
    version: int
    write_token: str | None
    size_bytes: int = 0
    extension: str = LOG_EXTENSION
    suffix: str = ""

    @property
    def path(self) -> str:
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name

    @property
    def name(self) -> LogFileName:
        return LogFileName(
            self.file_id, self.base_instant_time, self.version, self.write_token, self.extension, self.suffix
        )

    @property
    def is_cdc(self) -> bool:
        return self.suffix == CDC_SUFFIX

    @property
    def order_key(self) -> tuple[str, int, tuple[int, str], str]:
        """Java's `HoodieLogFile.LogFileComparator` order (see `log_file_order_key`)."""
        return log_file_order_key(self.name)


def parse_base_file(partition_path: str, file_name: str, size_bytes: int = 0) -> BaseFile:
    """Java: fileId before the first `_`, instant = third token up to the first `.`."""
    stem, dot, _ext = file_name.partition(".")
    parts = stem.split("_")
    if not dot or len(parts) != 3 or not all(parts):
        raise CorruptTableError(
            f"base file name {posixpath.join(partition_path, file_name)!r} is not "
            "<fileId>_<writeToken>_<instantTime>.<ext>"
        )
    file_id, token, instant = parts
    if not instant.isdigit():
        raise CorruptTableError(
            f"base file {posixpath.join(partition_path, file_name)!r}: "
            f"instant time {instant!r} is not numeric"
        )
    # One copy per process of what many files repeat: a commit's instant, a write token.
    return BaseFile(partition_path, file_name, file_id, sys.intern(token), sys.intern(instant), size_bytes)


def parse_log_file_name(file_name: str) -> LogFileName | None:
    """Java's `FSUtils.LOG_FILE_PATTERN`, anchored at the end (a `.crc` beside a log is not a log).

    macOS AppleDouble junk (`._.<fileId>…`) would match with a file id starting `_.`; it is no
    Hudi file, so names starting `._` are refused.
    """
    if file_name.startswith("._"):
        return None
    match = _LOG_NAME.match(file_name)
    if not match:
        return None
    file_id, base_instant, extension, version, _, token = match.groups()[:6]
    suffix = match.group(10) or ""
    return LogFileName(file_id, base_instant, int(version), token, extension, suffix)


def parse_log_file(partition_path: str, file_name: str, size_bytes: int = 0) -> LogFile | None:
    parsed = parse_log_file_name(file_name)
    if parsed is None:
        return None
    return LogFile(
        partition_path,
        file_name,
        parsed.file_id,
        parsed.base_instant_time,
        parsed.version,
        parsed.write_token,
        size_bytes,
        parsed.extension,
        parsed.suffix,
    )


def base_file_name(file_id: str, write_token: str, instant_time: str, extension: str = ".parquet") -> str:
    if "_" in file_id or "_" in write_token:
        raise ValueError(f"file id {file_id!r} and write token {write_token!r} may not contain '_'")
    return f"{file_id}_{write_token}_{instant_time}{extension}"
