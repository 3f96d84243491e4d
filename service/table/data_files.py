"""Base and log files of a file group: names parsed and built exactly as Hudi and hudi-rs do."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from service.errors import CorruptTableError

PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"
# `.<fileId>_<baseInstant>.log.<version>_<writeToken>`, optional `.cdc` suffix (Hudi's regex).
_LOG_NAME = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?$")


@dataclass(frozen=True)
class BaseFile:
    """`<fileId>_<writeToken>_<instantTime>.<ext>` in a partition."""

    partition_path: str
    file_name: str
    file_id: str
    write_token: str
    instant_time: str
    size_bytes: int = 0

    @property
    def path(self) -> str:
        """Base-relative path."""
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name


@dataclass(frozen=True)
class LogFile:
    partition_path: str
    file_name: str
    file_id: str
    base_instant_time: str
    version: int
    write_token: str | None
    size_bytes: int = 0

    @property
    def path(self) -> str:
        return posixpath.join(self.partition_path, self.file_name) if self.partition_path else self.file_name


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
    return BaseFile(partition_path, file_name, file_id, token, instant, size_bytes)


def parse_log_file(partition_path: str, file_name: str, size_bytes: int = 0) -> LogFile | None:
    match = _LOG_NAME.match(file_name)
    if not match:
        return None
    file_id, base_instant, _kind, version, _, token = match.groups()[:6]
    return LogFile(partition_path, file_name, file_id, base_instant, int(version), token, size_bytes)


def base_file_name(file_id: str, write_token: str, instant_time: str, extension: str = ".parquet") -> str:
    if "_" in file_id or "_" in write_token:
        raise ValueError(f"file id {file_id!r} and write token {write_token!r} may not contain '_'")
    return f"{file_id}_{write_token}_{instant_time}{extension}"
