"""The confinement rule for every path the service takes from a stored file (plan, metadata, marker).

Stored files are untrusted: another process (or a bug, or an attacker with write access to
`.hoodie`) may have written them. Before anything reads, deletes or rolls back a path taken from
one, the path must resolve *inside the table*, in a partition of it:

- a file path (a qualified URI as Java writes it — `file:/…`, `s3a://bucket/…`, `hdfs://nn/…` —, a
  scheme-less absolute path, or a base-relative path) must lie strictly under the base path, on the
  same store (`s3`/`s3a`/`s3n` are one store) and bucket/authority, never be the base path itself,
  never be `.hoodie` or below it, and lie directly in the partition the stored file lists it under;
- a partition path is base-relative; `""` is the root of a non-partitioned table and is refused on a
  table with partition fields; a partition path is never the target of a directory delete when it is
  `""` (HUDI-6675: Java's `CleanActionExecutor` once deleted a whole non-partitioned table through
  `basePath + "/" + ""`);
- in both, `..`, `.` and empty segments (`a//b`, a trailing `/`) are refused *as written*: nothing is
  normalised away (`posixpath.normpath("p/../../x")` would hide the escape), control characters
  (NUL, newline, …) are refused, and so are backslashes: Hadoop's `Path` turns `\\` into `/` on
  Windows only, so the same string names different files on different platforms.

Schemes are parsed as Hadoop's `Path(String)` does (a `:` before the first `/` ends the scheme, the
rest is the path, `?` and `#` included): a URL parser would drop a `#…` fragment and act on a
different path than the one written.

The rule is pure (`resolve_file_path`, `check_partition_path`); `PathGuard` binds it to one table and
one stored file so that a refusal names the table, the stored file (hence the instant), the field
and the path. `is_partition_dir` is the one I/O check: a directory is a partition of the table when
it holds a `.hoodie_partition_metadata*` file, exactly how Java discovers partitions
(`FSUtils.getAllPartitionPaths` looks for `HoodiePartitionMetadata`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from service.errors import PathOutsideTableError

METAFOLDER_NAME = ".hoodie"

# Scheme aliases Hudi users write (Hadoop's s3a/s3n) mapped to the store pyarrow serves them with.
STORE_OF_SCHEME = {"s3a": "s3", "s3n": "s3", "s3": "s3", "hdfs": "hdfs", "file": "file", "": "file"}

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")


@dataclass(frozen=True)
class TableLocation:
    """Where a table's base path is: its store, authority and root as `Storage` addresses them.

    `root` is the filesystem path pyarrow takes (`/abs/path` locally and on HDFS, `bucket/prefix`
    on S3); `authority` is the S3 bucket or the HDFS name node (`""` locally).
    """

    store: str
    authority: str
    root: str


@dataclass(frozen=True)
class Refused:
    """Why a path breaks the rule."""

    reason: str


def resolve_file_path(location: TableLocation, raw: str) -> str | Refused:
    """The base-relative path `raw` names, or why it is refused (see the module docstring)."""
    if not raw:
        return Refused("empty path")
    if (bad := _bad_character(raw)) is not None:
        return bad
    scheme, rest = _split_scheme(raw)
    if scheme is not None:
        located = _locate_qualified(location, scheme, rest)
    elif rest.startswith("/"):
        # Scheme-less absolute: on S3 the path starts with the bucket (`/bucket/key`).
        located = rest[1:] if location.store == "s3" else rest
    else:
        return check_relative_path(rest)
    if isinstance(located, Refused):
        return located
    if (bad := _bad_segments(located.lstrip("/") if location.store != "s3" else located)) is not None:
        return bad
    root = location.root.rstrip("/")
    if located == root or located == location.root:
        return Refused("it is the base path itself")
    if not located.startswith(root + "/"):
        return Refused(f"it is outside the table at {location.root!r}")
    return check_relative_path(located[len(root) + 1 :])


def check_relative_path(rel: str) -> str | Refused:
    """A base-relative path naming something strictly inside the table and outside `.hoodie`."""
    if not rel:
        return Refused("it is the base path itself")
    if (bad := _bad_character(rel)) is not None:
        return bad
    if rel.startswith("/"):
        return Refused("an absolute path where a base-relative one is expected")
    if (bad := _bad_segments(rel)) is not None:
        return bad
    if METAFOLDER_NAME in rel.split("/"):
        return Refused(f"it is in the timeline folder {METAFOLDER_NAME}")
    return rel


def check_partition_path(raw: str, partitioned: bool) -> str | Refused:
    """A partition path as stored: `""` only on a table without partition fields."""
    if raw == "":
        if partitioned:
            return Refused("an empty partition path (the base path) on a table with partition fields")
        return raw
    return check_relative_path(raw)


def check_in_partition(rel: str, partition: str) -> Refused | None:
    """A file listed under `partition` must lie directly in that partition's directory."""
    if posixpath.dirname(rel) != partition:
        return Refused(f"it is not directly in partition {partition!r}")
    return None


# Unicode category Cc is exactly U+0000-U+001F and U+007F-U+009F; with the backslash, one scan finds
# every refused character (the character-by-character loop cost seconds on a 100,000-file plan).
_BAD_CHARACTER = re.compile(r"[\\\x00-\x1f\x7f-\x9f]")


def _bad_character(path: str) -> Refused | None:
    found = _BAD_CHARACTER.search(path)
    if found is None:
        return None
    char = found.group()
    if char == "\\":
        return Refused("a backslash (Hadoop reads it as a separator on Windows only)")
    return Refused(f"a control character U+{ord(char):04X}")


def _bad_segments(path: str) -> Refused | None:
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            return Refused(f"a {segment!r} segment" if segment else "an empty segment (// or a trailing /)")
    return None


def _split_scheme(raw: str) -> tuple[str | None, str]:
    """Hadoop's `Path(String)`: a `:` before the first `/` ends the scheme."""
    colon = raw.find(":")
    slash = raw.find("/")
    if colon != -1 and (slash == -1 or colon < slash):
        return raw[:colon], raw[colon + 1 :]
    return None, raw


def _locate_qualified(location: TableLocation, scheme: str, rest: str) -> str | Refused:
    """The filesystem path (as `TableLocation.root` is written) of `scheme:rest`."""
    if not _SCHEME.fullmatch(scheme) or len(scheme) == 1:
        return Refused(f"{scheme!r} is not a storage scheme")
    store = STORE_OF_SCHEME.get(scheme.lower())
    if store is None or store != location.store:
        return Refused(f"scheme {scheme!r} is another store than the table's ({location.store})")
    authority: str | None = None
    path = rest
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        path = slash + tail
    if not path.startswith("/"):
        return Refused("a qualified path that is not absolute")
    if store == "file":
        if authority:
            return Refused(f"a local path with the authority {authority!r}")
        return path
    if (authority or "") != location.authority:
        return Refused(f"authority {authority or ''!r} is not the table's {location.authority!r}")
    return f"{authority}{path}" if store == "s3" else path


@dataclass(frozen=True)
class PathGuard:
    """The rule bound to one table and one stored file: refusals raise `PathOutsideTableError`.

    `source` names the stored file the paths come from (`.hoodie/<instant>.clean.requested`, a
    marker file), so the error names the instant.
    """

    location: TableLocation
    table: str
    partitioned: bool
    source: str

    def file(self, field: str, raw: str, partition: str | None = None) -> str:
        """The base-relative path of a file `field` names (in `partition`, when given)."""
        resolved = resolve_file_path(self.location, raw)
        if isinstance(resolved, Refused):
            raise self._refuse(field, raw, resolved)
        if partition is not None and (outside := check_in_partition(resolved, partition)) is not None:
            raise self._refuse(field, raw, outside)
        return resolved

    def relative_file(self, field: str, rel: str, partition: str | None = None) -> str:
        """A file path that must already be base-relative (marker names, joined v1 names)."""
        resolved = check_relative_path(rel)
        if isinstance(resolved, Refused):
            raise self._refuse(field, rel, resolved)
        if partition is not None and (outside := check_in_partition(resolved, partition)) is not None:
            raise self._refuse(field, rel, outside)
        return resolved

    def partition(self, field: str, raw: str) -> str:
        checked = check_partition_path(raw, self.partitioned)
        if isinstance(checked, Refused):
            raise self._refuse(field, raw, checked)
        return checked

    def refuse(self, field: str, path: str, reason: str) -> PathOutsideTableError:
        return self._refuse(field, path, Refused(reason))

    def _refuse(self, field: str, path: str, refused: Refused) -> PathOutsideTableError:
        return PathOutsideTableError(self.table, self.source, field, path, refused.reason)
