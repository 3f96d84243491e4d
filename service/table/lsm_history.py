"""The archived (LSM) timeline of timeline layout 2: completion times of archived instants, read-only.

Hudi 1.x's archiver (`TimelineArchiverV2`, writing through `LSMTimelineWriter`) moves completed instants
out of the active timeline into `.hoodie/<timeline.path>/<timeline.history.path>/`:

* `<min>_<max>_<layer>.parquet`: one `HoodieLSMTimelineInstant` record per archived instant
  (`MetadataConversionUtils.createLSMTimelineInstant`), `min`/`max` the first and last instant time
  of the batch written (`LSMTimelineWriter.write`, `compactedFileName`); layer 0 for archived batches,
  layer N+1 for the merge of layer-N files (`LSMTimelineWriter.compactAndClean`).
* `manifest_<N>`: the JSON of `HoodieLSMTimelineManifest`, the files of snapshot N; every change writes
  manifest N+1 (`LSMTimelineWriter.updateManifest`) and keeps only the last few.
* `_version_`: the decimal N of the latest manifest, deleted and created again on each change
  (`LSMTimelineWriter.updateVersionFile`); while it is missing or empty, readers take the highest
  `manifest_<N>` (`LSMTimeline.latestSnapshotVersion`, which ignores `*.tmp`).

The service never writes here (Hudi's writers archive); it reads the columns `instantTime`,
`completionTime` and `action` (`ArchivedInstantReadSchemas`) of the files whose name range can hold the
instants asked for, as `ArchivedTimelineLoaderV2.loadInstants` with a time-range filter does. Every file
is untrusted: one that Hudi could not read, or that contradicts itself, raises CorruptTableError naming
it. Where Hudi is lenient (an unparseable `_version_`, an empty manifest) the service refuses instead.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from service.errors import CorruptTableError
from service.table.storage import Storage

VERSION_FILE_NAME = "_version_"  # LSMTimeline.VERSION_FILE_NAME
MANIFEST_FILE_PREFIX = "manifest_"  # LSMTimeline.MANIFEST_FILE_PREFIX
TEMP_FILE_SUFFIX = ".tmp"  # LSMTimeline.TEMP_FILE_SUFFIX: left out of the manifest listing
# LSMTimeline.ARCHIVE_FILE_PATTERN, matched whole (`Matcher.matches`): one digit of layer.
_DATA_FILE_NAME = re.compile(r"(\d+)_(\d+)_(\d)\.parquet")
_MANIFEST_NAME = re.compile(rf"{MANIFEST_FILE_PREFIX}(\d+)")
_VERSION_TEXT = re.compile(rb"\d{1,9}")  # String.valueOf(int), as updateVersionFile writes it
# HoodieLSMTimelineInstant's fields the service reads (ArchivedInstantReadSchemas, LoadMode.ACTION).
INSTANT_TIME, COMPLETION_TIME, ACTION = "instantTime", "completionTime", "action"
_COLUMNS = (INSTANT_TIME, COMPLETION_TIME, ACTION)


@dataclass(frozen=True)
class LsmDataFile:
    """One entry of a manifest (`HoodieLSMTimelineManifest.LSMFileEntry`), its name parsed."""

    file_name: str
    file_len: int
    min_instant: str
    max_instant: str
    layer: int

    def may_hold(self, instant_time: str) -> bool:
        """Whether the name's range covers `instant_time` (`LSMTimeline.isFileInRange`)."""
        return self.min_instant <= instant_time <= self.max_instant


@dataclass(frozen=True)
class LsmManifest:
    """`manifest_<version>`: the data files of one snapshot of the archived timeline."""

    version: int
    files: tuple[LsmDataFile, ...] = ()


EMPTY_MANIFEST = LsmManifest(-1)  # HoodieLSMTimelineManifest.EMPTY: nothing archived yet


@dataclass(frozen=True)
class ArchivedInstant:
    """The fields read of one `HoodieLSMTimelineInstant` record. `completion_time` is the instant time
    when the record has none, as `CompletionTimeQueryViewV2.setCompletionTime` takes it."""

    instant_time: str
    completion_time: str
    action: str


def parse_version_file(data: bytes, source: str) -> int | None:
    """The snapshot version `_version_` names; None when it is empty (caught between its delete and
    create: the manifests are listed instead, as Hudi does)."""
    if not data:
        return None
    if not _VERSION_TEXT.fullmatch(data):
        raise CorruptTableError(f"{source}: {data[:40]!r} is not a snapshot version number")
    return int(data)


def parse_data_file_name(name: str, source: str) -> LsmDataFile:
    """A manifest's file name: `<min instant>_<max instant>_<layer>.parquet`, nothing else (no path)."""
    match = _DATA_FILE_NAME.fullmatch(name)
    if match is None:
        raise CorruptTableError(f"{source}: {name!r} is not an archived timeline file name")
    low, high, layer = match.groups()
    if low > high:
        raise CorruptTableError(f"{source}: {name!r} names a range whose start is after its end")
    return LsmDataFile(name, 0, low, high, int(layer))


def parse_manifest(data: bytes, version: int, source: str) -> LsmManifest:
    """`HoodieLSMTimelineManifest.fromJsonString`: `{"files": [{"fileName": …, "fileLen": …}, …]}`,
    other keys ignored (Hudi's `JsonUtils` mapper ignores unknown properties). An empty manifest, which
    Hudi reads as no files at all, is refused: no writer creates one."""
    if not data.strip():
        raise CorruptTableError(f"{source}: empty manifest")
    try:
        root = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptTableError(f"{source}: not a JSON manifest: {exc}") from None
    entries = root.get("files") if isinstance(root, dict) else None
    if not isinstance(entries, list):
        raise CorruptTableError(f"{source}: a manifest is an object with a `files` array")
    files = []
    for index, entry in enumerate(entries):
        name = entry.get("fileName") if isinstance(entry, dict) else None
        length = entry.get("fileLen") if isinstance(entry, dict) else None
        if not isinstance(name, str) or type(length) is not int or length < 0:
            raise CorruptTableError(
                f"{source}: files[{index}] is not a {{fileName: string, fileLen: non-negative long}} entry"
            )
        parsed = parse_data_file_name(name, source)
        files.append(LsmDataFile(name, length, parsed.min_instant, parsed.max_instant, parsed.layer))
    if len({f.file_name for f in files}) != len(files):
        raise CorruptTableError(f"{source}: a file is listed twice")
    return LsmManifest(version, tuple(files))


def read_latest_manifest(storage: Storage, history_dir: str) -> LsmManifest:
    """The latest snapshot (`LSMTimeline.latestSnapshotManifest`): the manifest `_version_` names, or
    the highest `manifest_<N>` while `_version_` is missing or empty; EMPTY_MANIFEST when there is none."""
    version_path = posixpath.join(history_dir, VERSION_FILE_NAME)
    try:
        version = parse_version_file(storage.read_bytes(version_path), storage.qualify(version_path))
    except FileNotFoundError:
        version = None
    if version is None:
        version = max(manifest_versions(storage, history_dir), default=None)
        if version is None:
            return EMPTY_MANIFEST
    manifest_path = posixpath.join(history_dir, f"{MANIFEST_FILE_PREFIX}{version}")
    source = storage.qualify(manifest_path)
    try:
        data = storage.read_bytes(manifest_path)
    except FileNotFoundError:
        raise CorruptTableError(
            f"{source}: missing, though {storage.qualify(version_path)} names it as the latest"
        ) from None
    return parse_manifest(data, version, source)


def manifest_versions(storage: Storage, history_dir: str) -> list[int]:
    """`LSMTimeline.allSnapshotVersions`: `manifest_*` names but `*.tmp`; another such name is refused
    (Hudi fails on it too, parsing its version)."""
    versions = []
    for name in storage.list_file_names(history_dir):
        if not name.startswith(MANIFEST_FILE_PREFIX) or name.endswith(TEMP_FILE_SUFFIX):
            continue
        match = _MANIFEST_NAME.fullmatch(name)
        if match is None:
            path = storage.qualify(posixpath.join(history_dir, name))
            raise CorruptTableError(f"{path}: not a manifest name (manifest_<version>)")
        versions.append(int(match.group(1)))
    return versions


def read_archived_instants(
    storage: Storage, history_dir: str, instant_times: Collection[str]
) -> dict[str, ArchivedInstant]:
    """The archived records of `instant_times` (those the history holds), reading the latest
    snapshot's files whose name range covers one of them, and of those only the columns needed."""
    wanted = frozenset(instant_times)
    if not wanted:
        return {}
    manifest = read_latest_manifest(storage, history_dir)
    found: dict[str, ArchivedInstant] = {}
    sources: dict[str, str] = {}
    for data_file in manifest.files:
        if not any(data_file.may_hold(t) for t in wanted):
            continue
        rel = posixpath.join(history_dir, data_file.file_name)
        source = storage.qualify(rel)
        for record in _read_records(storage, rel, source, wanted):
            previous = found.get(record.instant_time)
            if previous is not None and previous.completion_time != record.completion_time:
                raise CorruptTableError(
                    f"{source}: instant {record.instant_time} completed at {record.completion_time}, "
                    f"but {sources[record.instant_time]} says {previous.completion_time}"
                )
            found[record.instant_time] = record
            sources[record.instant_time] = source
    return found


def _read_records(storage: Storage, rel: str, source: str, wanted: frozenset[str]) -> list[ArchivedInstant]:
    """The records of `wanted` instants in one data file, each checked."""
    try:
        with storage.open_input(rel) as stream:
            parquet = pq.ParquetFile(stream)
            _check_columns(parquet.schema_arrow, source)
            table = parquet.read(columns=list(_COLUMNS))
    except FileNotFoundError:
        raise CorruptTableError(f"{source}: missing, though the latest manifest lists it") from None
    except (pa.ArrowException, OSError) as exc:
        raise CorruptTableError(f"{source}: not a readable Parquet file: {exc}") from None
    if table.column(INSTANT_TIME).null_count:
        raise CorruptTableError(f"{source}: a record has no {INSTANT_TIME}")
    asked = pc.is_in(table.column(INSTANT_TIME), value_set=pa.array(sorted(wanted), pa.string()))
    return [_archived_instant(row, source) for row in table.filter(asked).to_pylist()]


def _check_columns(schema: pa.Schema, source: str) -> None:
    for name in _COLUMNS:
        index = schema.get_field_index(name)
        if index < 0 or not pa.types.is_string(schema.field(index).type):
            raise CorruptTableError(f"{source}: no string column {name!r} (HoodieLSMTimelineInstant)")


def _archived_instant(row: Mapping[str, str | None], source: str) -> ArchivedInstant:
    instant = str(row[INSTANT_TIME])
    completion = row[COMPLETION_TIME]
    if completion is None:
        completion = instant
    action = row[ACTION]
    if not completion.isdigit() or len(completion) != len(instant) or completion < instant:
        raise CorruptTableError(
            f"{source}: instant {instant} has completion time {completion!r}, not a time at or after it"
        )
    if not action:
        raise CorruptTableError(f"{source}: instant {instant} has no action")
    return ArchivedInstant(instant, completion, action)


@dataclass
class LsmHistory:
    """One table's archived timeline, read when a completion time is asked for. What it found is kept:
    an archived instant's completion time never changes (later archiving and the LSM compaction only
    move records between files)."""

    storage: Storage
    history_dir: str
    _completion_times: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    @property
    def location(self) -> str:
        return self.storage.qualify(self.history_dir)

    def completion_times(self, instant_times: Iterable[str]) -> dict[str, str]:
        """Instant time -> completion time, for those of `instant_times` the history holds."""
        wanted = set(instant_times)
        missing = wanted - self._completion_times.keys()
        if missing:
            for t, archived in read_archived_instants(self.storage, self.history_dir, missing).items():
                self._completion_times[t] = archived.completion_time
        return {t: self._completion_times[t] for t in wanted if t in self._completion_times}
