"""Write markers (`.hoodie/.temp/<instant>/...`): which data files an instant wrote, for rollback.

A marker is created *before* its data file, so a crash can leave a marker without a file but never a
file without a marker; rollback deletes what the markers name, and the commit's finalize step deletes
marked files that are not in its write stats.

- DIRECT markers (what the product writes): an empty file
  `.hoodie/.temp/<instant>/<partition>/<data file name>.marker.<CREATE|MERGE|APPEND>`.
- TIMELINE_SERVER_BASED markers (Hudi Spark's default): `.hoodie/.temp/<instant>/MARKERS.type`
  holding `TIMELINE_SERVER_BASED`, and `MARKERS0..N`, each a newline-separated list of marker names
  `<partition>/<data file name>.marker.<IOType>`. Read only, to roll back Java's instants.

Reading follows `MarkerBasedRollbackUtils.getAllMarkerPaths`: `MARKERS.type` decides; without it
the DIRECT listing is used, and when that finds nothing the MARKERS files are read (Java falls back
to them only when the DIRECT listing fails; reading them when it is merely empty finds the same).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import StrEnum

from service.errors import CorruptTableError
from service.table.paths import PathGuard
from service.table.storage import Storage

TEMP_FOLDER = ".hoodie/.temp"
MARKER_EXTENSION = ".marker"
MARKERS_TYPE_FILE = "MARKERS.type"
MARKERS_FILE_PREFIX = "MARKERS"


class IOType(StrEnum):
    CREATE = "CREATE"  # a new base file
    MERGE = "MERGE"  # a rewritten base file
    APPEND = "APPEND"  # a log file appended to (merge-on-read)


class MarkerType(StrEnum):
    DIRECT = "DIRECT"
    TIMELINE_SERVER_BASED = "TIMELINE_SERVER_BASED"


@dataclass(frozen=True, order=True)
class Marker:
    """One marker: the data file it announces and how that file was written."""

    data_file_path: str  # base-relative, `<partition>/<file name>` (just the name when non-partitioned)
    io_type: IOType

    @property
    def partition_path(self) -> str:
        return posixpath.dirname(self.data_file_path)

    @property
    def file_name(self) -> str:
        return posixpath.basename(self.data_file_path)

    @property
    def name(self) -> str:
        """The marker's path inside the instant's marker folder (the MARKERS-file line, too)."""
        return f"{self.data_file_path}{MARKER_EXTENSION}.{self.io_type.value}"

    @classmethod
    def parse(cls, name: str, guard: PathGuard, field: str) -> Marker:
        """`<partition>/<file>.marker.<IOType>`; CorruptTableError names `guard.source` otherwise.

        The data file path must be base-relative and inside the table (`service.table.paths`):
        rollback and a commit's finalize delete what markers name. `PathOutsideTableError` names the
        marker (`guard.source`), `field` and the path otherwise.
        """
        data_path, sep, io_type = name.strip().rpartition(f"{MARKER_EXTENSION}.")
        if not sep or not data_path or io_type not in IOType.__members__:
            raise CorruptTableError(f"{guard.source}: {name!r} is not a marker name (<path>.marker.<IOType>)")
        return cls(guard.relative_file(field, data_path), IOType(io_type))


def _guard(storage: Storage, source: str) -> PathGuard:
    # Markers name files, never partitions on their own: whether the table is partitioned is moot.
    return PathGuard(storage.location, storage.base_uri, partitioned=False, source=source)


def marker_dir(instant_time: str) -> str:
    """Base-relative folder of an instant's markers."""
    return f"{TEMP_FOLDER}/{instant_time}"


def marker_path(instant_time: str, data_file_path: str, io_type: IOType = IOType.CREATE) -> str:
    """Base-relative path of the DIRECT marker for `data_file_path`."""
    return f"{marker_dir(instant_time)}/{Marker(data_file_path, io_type).name}"


def create_marker(
    storage: Storage, instant_time: str, data_file_path: str, io_type: IOType = IOType.CREATE
) -> Marker:
    """Create a DIRECT marker before writing `data_file_path`; an existing marker is kept (a retry)."""
    marker = Marker(data_file_path, io_type)
    path = f"{marker_dir(instant_time)}/{marker.name}"
    if not storage.exists(path):
        storage.write_bytes(path, b"")
    return marker


def marker_dir_exists(storage: Storage, instant_time: str) -> bool:
    return storage.exists(marker_dir(instant_time))


def read_marker_type(storage: Storage, instant_time: str) -> MarkerType | None:
    """The type `MARKERS.type` declares, or None when the file is absent or empty."""
    path = f"{marker_dir(instant_time)}/{MARKERS_TYPE_FILE}"
    try:
        text = storage.read_bytes(path).decode("utf-8").strip()
    except FileNotFoundError:
        return None
    if not text:
        return None
    try:
        return MarkerType(text)
    except ValueError:
        raise CorruptTableError(f"{storage.qualify(path)}: unknown marker type {text!r}") from None


def list_direct_markers(storage: Storage, instant_time: str) -> list[Marker]:
    """Every `*.marker.*` file under the instant's marker folder, sorted."""
    root = marker_dir(instant_time)
    found = []
    for status in storage.walk_files(root):
        if MARKER_EXTENSION not in status.name:
            continue
        rel = status.path[len(root) + 1 :]
        found.append(Marker.parse(rel, _guard(storage, storage.qualify(status.path)), "marker name"))
    return sorted(found)


def read_timeline_server_markers(storage: Storage, instant_time: str) -> list[Marker]:
    """The markers listed in `MARKERS0..N` (Java's timeline-server markers persisted to storage), sorted."""
    found: set[Marker] = set()
    for status in storage.list_dir(marker_dir(instant_time)):
        if (
            status.is_dir
            or not status.name.startswith(MARKERS_FILE_PREFIX)
            or status.name == MARKERS_TYPE_FILE
        ):
            continue
        guard = _guard(storage, storage.qualify(status.path))
        for line in storage.read_bytes(status.path).decode("utf-8").splitlines():
            if line.strip():
                found.add(Marker.parse(line, guard, f"{status.name} line"))
    return sorted(found)


def list_markers(storage: Storage, instant_time: str) -> list[Marker]:
    """All markers of an instant, whichever way they were written; empty when there are none."""
    kind = read_marker_type(storage, instant_time)
    if kind is MarkerType.TIMELINE_SERVER_BASED:
        return read_timeline_server_markers(storage, instant_time)
    direct = list_direct_markers(storage, instant_time)
    if direct or kind is MarkerType.DIRECT:
        return direct
    return read_timeline_server_markers(storage, instant_time)


def delete_marker_dir(storage: Storage, instant_time: str) -> None:
    """Remove the instant's marker folder (after its commit or rollback); absent is fine."""
    storage.delete_dir(marker_dir(instant_time))
