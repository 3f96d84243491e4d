"""A `Storage` over the local disk whose deletes fail on demand, for failed-delete tests.

The faults are injected below `Storage`, in the pyarrow file system it drives, so that
`Storage.delete_file`'s own verification is what the tests exercise:

- PERMISSION / IO_ERROR: the delete raises (`PermissionError`, `OSError` EIO); the file stays.
- REPORTS_GONE: the delete raises `FileNotFoundError` while the file stays (a stale listing or HEAD
  on an object store; `Storage.delete_file` would return False, "already gone").
- SILENT: the delete returns normally while the file stays (an object store acknowledging a delete
  it has not applied yet, or HDFS's HUDI-7867 case).
"""

from __future__ import annotations

import errno
import os
from enum import StrEnum
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from service.table.storage import Storage
from service.table.table import HudiTable


class Fault(StrEnum):
    PERMISSION = "PERMISSION"
    IO_ERROR = "IO_ERROR"
    REPORTS_GONE = "REPORTS_GONE"
    SILENT = "SILENT"


# Every way a delete can leave its file, each on the storage kind where it happens: on the local disk
# the delete raises or claims the file is gone; on an object store it is acknowledged but not applied.
each_delete_leaving_the_file = pytest.mark.parametrize(
    ("fault", "local"),
    [
        (Fault.PERMISSION, True),
        (Fault.IO_ERROR, True),
        (Fault.REPORTS_GONE, True),
        (Fault.SILENT, False),
    ],
)


class _FaultyHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """Delegates to the local file system, failing `delete_file` for the paths in `faults`."""

    def __init__(self, faults: dict[str, Fault], attempts: list[str]) -> None:
        self._fs = pafs.LocalFileSystem()
        self._faults = faults
        self._attempts = attempts

    def delete_file(self, path: str) -> None:
        self._attempts.append(path)
        fault = self._faults.get(path)
        if fault is Fault.PERMISSION:
            raise PermissionError(errno.EACCES, "Permission denied (injected)", path)
        if fault is Fault.IO_ERROR:
            raise OSError(errno.EIO, "Input/output error (injected)", path)
        if fault is Fault.REPORTS_GONE:
            raise FileNotFoundError(errno.ENOENT, "No such file (injected; the file stays)", path)
        if fault is Fault.SILENT:
            return
        self._fs.delete_file(path)

    # ---------------------------------------------------------------- plain delegation
    def get_type_name(self) -> str:
        return "faulty-local"

    def equals(self, other: Any) -> bool:
        return other is self

    def normalize_path(self, path: str) -> str:
        return str(self._fs.normalize_path(path))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return list(self._fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return list(self._fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise PermissionError("refusing to empty the root directory")

    def move(self, src: str, dest: str) -> None:
        self._fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self._fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self._fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self._fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self._fs.open_append_stream(path, metadata=metadata)


class FaultyStorage(Storage):
    """The table at `base` on the local disk, with injectable delete faults.

    `local=True` keeps the local-disk behaviour of `Storage` (atomic create, checksum siblings, no
    re-check after a delete that returned); `local=False` makes it behave as an object store.
    """

    def __init__(self, base: Path, *, local: bool = True) -> None:
        self.faults: dict[str, Fault] = {}
        self.attempts: list[str] = []  # fs paths whose delete was called, in order
        handler = _FaultyHandler(self.faults, self.attempts)
        super().__init__(pafs.PyFileSystem(handler), os.path.abspath(base), "file", "")
        self._local = local

    @property
    def is_local(self) -> bool:
        return self._local

    @classmethod
    def failing(cls, base: Path, rel: str, fault: Fault, *, local: bool) -> FaultyStorage:
        """The storage of `base` whose delete of `rel` meets `fault`."""
        storage = cls(base, local=local)
        storage.fail(rel, fault)
        return storage

    def fail(self, rel: str, fault: Fault) -> None:
        self.faults[self.fs_path(rel)] = fault

    def heal(self) -> None:
        self.faults.clear()

    def attempted(self, rel: str) -> bool:
        return self.fs_path(rel) in self.attempts

    def open_table(self) -> HudiTable:
        """A `HudiTable` reading and writing through this storage."""
        from service.table.properties import load_table_config
        from service.table.table_format import TableFormat

        config = load_table_config(self)
        return HudiTable(self, config, TableFormat.for_table(config, self.base_uri))
