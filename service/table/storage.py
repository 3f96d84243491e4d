"""One storage facade over pyarrow.fs, addressed by a table's base URI.

Every path the product handles inside a table is *relative to the base path* and uses `/`
separators (`.hoodie/20240101000000000.commit`, `2024/01/01/<file>.parquet`). `Storage` turns those
into filesystem paths for pyarrow and into qualified URIs in the form Hudi's Java writers use
(`file:/abs/path`, `s3a://bucket/key`), so nothing above this module assumes a local disk.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import BinaryIO
from urllib.parse import urlparse

import pyarrow.fs as pafs

from service.errors import DeleteFailedError, HudiTableServiceError, InstantExistsError
from service.table.paths import STORE_OF_SCHEME, Refused, TableLocation, resolve_file_path

# Scheme aliases Hudi users write (Hadoop's s3a/s3n) mapped to what pyarrow understands.
_PYARROW_SCHEME = STORE_OF_SCHEME

# Temporary files for atomic create live here: a folder neither Hudi's nor hudi-rs's timeline
# listing (non-recursive over `.hoodie`) nor partition discovery ever looks into.
_TMP_DIR = ".hoodie/.aux/.hts-tmp"


@dataclass(frozen=True)
class FileStatus:
    """One listing entry; `path` is relative to the table's base path."""

    path: str
    size: int
    is_dir: bool
    mtime_ns: int | None = None

    @cached_property  # asked hundreds of thousands of times per view of a large table
    def name(self) -> str:
        return posixpath.basename(self.path)


class Storage:
    """Files of one table. Construct with `Storage.for_base_uri`."""

    def __init__(self, fs: pafs.FileSystem, root: str, scheme: str, authority: str) -> None:
        self._fs = fs
        self._root = root.rstrip("/") or "/"
        self._scheme = scheme
        self._authority = authority

    @classmethod
    def for_base_uri(cls, base_uri: str, options: Mapping[str, str] | None = None) -> Storage:
        """Open the table at `base_uri` (a local path, `file:`, `s3://`/`s3a://`, `hdfs://`).

        `options` holds backend settings, e.g. `endpoint_override`, `region`, `access_key`,
        `secret_key` for S3-compatible servers.
        """
        parsed = urlparse(base_uri)
        scheme = parsed.scheme.lower()
        if len(scheme) == 1:  # a Windows drive letter is not a scheme
            scheme = ""
        if scheme not in _PYARROW_SCHEME:
            raise HudiTableServiceError(f"unsupported storage scheme {scheme!r} in base path {base_uri!r}")
        opts = dict(options or {})
        kind = _PYARROW_SCHEME[scheme]
        if kind == "file":
            root = os.path.abspath(parsed.path if scheme == "file" else base_uri)
            return cls(pafs.LocalFileSystem(), root, "file", "")
        if kind == "s3":
            fs = pafs.S3FileSystem(
                endpoint_override=opts.get("endpoint_override"),
                region=opts.get("region", "us-east-1"),
                access_key=opts.get("access_key"),
                secret_key=opts.get("secret_key"),
                scheme=opts.get("endpoint_scheme", "https"),
                allow_bucket_creation=opts.get("allow_bucket_creation", "false") == "true",
                # Without it every output stream starts with a HEAD of the key and of its parent
                # "directory": an instant file would cost 8 requests where Hudi's costs 1-2.
                allow_delayed_open=True,
            )
            return cls(fs, f"{parsed.netloc}{parsed.path}".rstrip("/"), scheme, parsed.netloc)
        host, _, port = parsed.netloc.partition(":")
        fs = pafs.HadoopFileSystem(host or "default", int(port or 0))
        return cls(fs, parsed.path, scheme, parsed.netloc)

    # ----------------------------------------------------------------- addressing
    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    @property
    def is_local(self) -> bool:
        return isinstance(self._fs, pafs.LocalFileSystem)

    @property
    def is_object_store(self) -> bool:
        """S3 and its kin: no directories to create, a key exists once its PUT completed."""
        return isinstance(self._fs, pafs.S3FileSystem)

    @property
    def base_uri(self) -> str:
        return self.qualify("")

    def fs_path(self, rel: str) -> str:
        """The path pyarrow's filesystem takes for a base-relative path."""
        rel = rel.strip("/")
        return f"{self._root}/{rel}" if rel else self._root

    def qualify(self, rel: str) -> str:
        """The fully qualified URI Hudi writes into plans (`file:/…`, `s3a://bucket/…`)."""
        path = self.fs_path(rel)
        if self._scheme == "file":
            return f"file:{path}"
        if self._scheme in ("s3", "s3a", "s3n"):
            return f"{self._scheme}://{path}"
        return f"{self._scheme}://{self._authority}{path}"

    @property
    def location(self) -> TableLocation:
        """The base path as the confinement rule (`service.table.paths`) compares paths with it."""
        return TableLocation(_PYARROW_SCHEME[self._scheme], self._authority, self._root)

    def relativize(self, uri_or_path: str) -> str:
        """Inverse of `qualify` for a file strictly inside the table: accepts qualified URIs,
        scheme-less absolute paths and relative paths, under the confinement rule of
        `service.table.paths` (no `..`, not `.hoodie`, not the base path, same store and bucket).

        Raises when the path breaks it: callers that delete files rely on this. Paths from stored
        files go through a `PathGuard` instead, whose error names the stored file and the field.
        """
        resolved = resolve_file_path(self.location, uri_or_path)
        if isinstance(resolved, Refused):
            raise HudiTableServiceError(
                f"path {uri_or_path!r} is refused for the table at {self.base_uri}: {resolved.reason}"
            )
        return resolved

    # ----------------------------------------------------------------- reading
    def exists(self, rel: str) -> bool:
        return self._fs.get_file_info(self.fs_path(rel)).type != pafs.FileType.NotFound

    def status(self, rel: str) -> FileStatus | None:
        info = self._fs.get_file_info(self.fs_path(rel))
        if info.type == pafs.FileType.NotFound:
            return None
        return FileStatus(rel.strip("/"), info.size or 0, info.type == pafs.FileType.Directory, info.mtime_ns)

    def list_dir(self, rel: str) -> list[FileStatus]:
        """Direct children of a directory; empty if it does not exist."""
        selector = pafs.FileSelector(self.fs_path(rel), allow_not_found=True, recursive=False)
        return [self._to_status(info) for info in self._fs.get_file_info(selector)]

    def list_file_names(self, rel: str) -> list[str]:
        """Names of the non-directory children of a directory (empty if it does not exist).

        Cheaper than `list_dir` when sizes are not needed: on a local disk no entry is stat'ed
        (the daemon lists every table's `.hoodie` on every tick).
        """
        if self.is_local:
            try:
                with os.scandir(self.fs_path(rel)) as entries:
                    return [e.name for e in entries if not e.is_dir()]
            except FileNotFoundError:
                return []
        selector = pafs.FileSelector(self.fs_path(rel), allow_not_found=True, recursive=False)
        return [i.base_name for i in self._fs.get_file_info(selector) if i.type != pafs.FileType.Directory]

    def walk_files(self, rel: str) -> Iterator[FileStatus]:
        """Every file below a directory, recursively."""
        selector = pafs.FileSelector(self.fs_path(rel), allow_not_found=True, recursive=True)
        file, relativize = pafs.FileType.File, self.relativize_fs_path
        for info in self._fs.get_file_info(selector):
            # `info.type` builds an enum member per read: read once (a million files a full listing).
            if info.type == file:
                yield FileStatus(relativize(info.path), info.size or 0, False, info.mtime_ns)

    def read_bytes(self, rel: str) -> bytes:
        with self._fs.open_input_stream(self.fs_path(rel)) as stream:
            return bytes(stream.read())

    def read_chunks(self, rel: str, chunk_bytes: int) -> Iterator[bytes]:
        """The file's bytes in chunks of `chunk_bytes` (the last shorter), read as they are taken: one
        stream, as `read_bytes` opens, so an object store sees the same first request."""
        with self._fs.open_input_stream(self.fs_path(rel)) as stream:
            while chunk := stream.read(chunk_bytes):
                yield bytes(chunk)

    def open_input(self, rel: str) -> BinaryIO:
        return self._fs.open_input_file(self.fs_path(rel))

    # ----------------------------------------------------------------- writing
    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write (or overwrite) a file, creating parent directories."""
        self.make_dirs(posixpath.dirname(rel))
        with self._fs.open_output_stream(self.fs_path(rel)) as out:
            out.write(data)

    def create_if_absent(self, rel: str, data: bytes) -> None:
        """Create a file with its whole content, failing with `InstantExistsError` if it exists.

        On local disks this is atomic and exclusive (write a temp file, then hard-link it into
        place: `link` fails if the target exists, and readers never see a partial file). On object
        stores without create-if-absent the check-then-put is made exclusive by the table lock,
        which every caller that creates instants holds.
        """
        if self.is_local:
            target = self.fs_path(rel)
            tmp_dir = self.fs_path(_TMP_DIR)
            os.makedirs(tmp_dir, exist_ok=True)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = os.path.join(tmp_dir, uuid.uuid4().hex)
            with open(tmp, "wb") as f:
                f.write(data)
            try:
                os.link(tmp, target)
            except FileExistsError as exc:
                raise InstantExistsError(f"{self.qualify(rel)} already exists") from exc
            finally:
                os.unlink(tmp)
            return
        if self._file_exists(rel):
            raise InstantExistsError(f"{self.qualify(rel)} already exists")
        self.write_bytes(rel, data)

    def copy_file(self, src: str, dst: str) -> None:
        """Copy a file within the table's storage (a server-side copy on object stores), creating
        `dst`'s parent directories; an existing `dst` is overwritten."""
        self.make_dirs(posixpath.dirname(dst))
        self._fs.copy_file(self.fs_path(src), self.fs_path(dst))

    def _file_exists(self, rel: str) -> bool:
        """Whether a *file* is at `rel`: one HEAD on an object store, where `exists` may add a LIST
        (pyarrow looks for a "directory" of that name once the HEAD misses)."""
        if not self.is_object_store:
            return self.exists(rel)
        try:
            self._fs.open_input_file(self.fs_path(rel)).close()
        except FileNotFoundError:
            return False
        return True

    def make_dirs(self, rel: str) -> None:
        if self.is_object_store:
            return  # keys need no parent; pyarrow would HEAD and PUT directory markers
        if rel.strip("/") or self.is_local:
            self._fs.create_dir(self.fs_path(rel), recursive=True)

    def delete_file(self, rel: str, *, verify: bool = True) -> bool:
        """Delete one file; False when it was already gone (callers treat that as deleted).

        A delete that reports the file gone is verified, as Hudi 0.15's
        `CleanActionExecutor.deleteFileAndGetResult` does since HUDI-7655: a file still there is a
        failed delete (`DeleteFailedError`), never "already gone". On stores other than the local
        disk a delete that succeeded is verified too (a delete may return while the object or
        block is still served, the HDFS case of HUDI-7867); a local unlink that returned is final.

        `verify=False` skips that check on stores other than the local disk: only for a caller that
        verifies the deletes itself (`service.cleaning.deleter` lists each partition once after its
        deletes, instead of a HEAD and a LIST per file on S3). A local delete is always checked.
        """
        path = self.fs_path(rel)
        try:
            self._fs.delete_file(path)
        except FileNotFoundError:
            removed = False
        else:
            removed = True
            if self.is_local:
                return True
        if not verify and not self.is_local:
            return removed
        if self._fs.get_file_info(path).type != pafs.FileType.NotFound:
            outcome = "returned" if removed else "reported it already gone"
            raise DeleteFailedError(f"{self.qualify(rel)} is still on storage after its delete {outcome}")
        return removed

    def delete_checksum_sibling(self, rel: str) -> None:
        """Delete the `.<name>.crc` Hadoop's local file system writes beside each file Java writes
        there (and removes with it), when this is a local disk; a missing one is fine."""
        if self.is_local:
            self.delete_file(posixpath.join(posixpath.dirname(rel), f".{posixpath.basename(rel)}.crc"))

    def delete_file_and_checksum(self, rel: str) -> bool:
        """Delete a file the archiver retires, its checksum first, as Hadoop's ChecksumFileSystem
        deletes: a run killed between the two leaves the file, which the next run finds and deletes
        again, not an orphan checksum. False when the file was already gone."""
        self.delete_checksum_sibling(rel)
        return self.delete_file(rel)

    def delete_dir(self, rel: str) -> None:
        """Delete a directory tree if it exists."""
        if self.exists(rel):
            self._fs.delete_dir(self.fs_path(rel))

    def open_output(self, rel: str) -> BinaryIO:
        self.make_dirs(posixpath.dirname(rel))
        return self._fs.open_output_stream(self.fs_path(rel))

    # ----------------------------------------------------------------- helpers
    def _to_status(self, info: pafs.FileInfo) -> FileStatus:
        return FileStatus(
            path=self.relativize_fs_path(info.path),
            size=info.size or 0,
            is_dir=info.type == pafs.FileType.Directory,
            mtime_ns=info.mtime_ns,
        )

    def relativize_fs_path(self, fs_path: str) -> str:
        root = self._root.rstrip("/")
        if fs_path == root:
            return ""
        if not fs_path.startswith(root + "/"):
            raise HudiTableServiceError(f"listing returned {fs_path!r} outside {root!r}")
        return fs_path[len(root) + 1 :]
