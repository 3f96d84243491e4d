"""Writing the archived (LSM) timeline of layout 2, as Hudi 1.x's `LSMTimelineWriter.write` does.

One archival run writes one layer-0 data file `<min>_<max>_0.parquet` holding a
`HoodieLSMTimelineInstant` record per archived action (`MetadataConversionUtils.createLSMTimelineInstant`:
the completed file's bytes as `metadata`, the plan's bytes as `plan`, version 1), then a new manifest
`manifest_<N+1>` listing every file of the previous snapshot plus the new one, then `_version_`
naming N+1 (deleted, then created: readers fall back to the highest manifest meanwhile). A data file
of the same name the latest manifest already lists means the run was written before and is not
written again (a retried run); one it does not list is a crashed run's leftover and is replaced.

The Parquet file is written with pyarrow: the columns of `HoodieLSMTimelineInstant` in its order and
types (strings and bytes optional, `version` a required int), gzip (Hudi's default
`hoodie.parquet.compression.codec`), and the Avro schema in the footer (`parquet.avro.schema`), which
Hudi's `HoodieAvroParquetReader` matches fields by name against. Readers fail on a record without a
completion time, so every record has one.
"""

from __future__ import annotations

import io
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from service.table.lsm_history import (
    MANIFEST_FILE_PREFIX,
    VERSION_FILE_NAME,
    LsmDataFile,
    LsmManifest,
    manifest_versions,
    parse_manifest,
    read_latest_manifest,
)
from service.table.storage import Storage

LAYER_ZERO = 0  # LSMTimelineWriter.FILE_LAYER_ZERO
COMPACTION_BATCH_SIZE = 10  # hoodie.timeline.compaction.batch.size: files of one layer merged at once
COMPACTION_MAX_BYTES = 1024 * 1024 * 1000  # LSMTimelineWriter.MAX_FILE_SIZE_IN_BYTES
MANIFESTS_RETAINED = 3  # snapshots kept beside those compaction adds (1.2's manifest.retained.versions)
LSM_TIMELINE_INSTANT_VERSION = 1  # MetadataConversionUtils.LSM_TIMELINE_INSTANT_VERSION_1
# `HoodieLSMTimelineInstant.getClassSchema().toString()`, written as the footer's Avro schema.
AVRO_SCHEMA = (
    '{"type":"record","name":"HoodieLSMTimelineInstant","namespace":"org.apache.hudi.avro.model","fields":['
    '{"name":"instantTime","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"completionTime","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"action","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"metadata","type":["null","bytes"],"default":null},'
    '{"name":"plan","type":["null","bytes"],"default":null},'
    '{"name":"version","type":"int","default":1}]}'
)
LSM_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ],
    metadata={"parquet.avro.schema": AVRO_SCHEMA, "writer.model.name": "avro"},
)


@dataclass(frozen=True)
class ArchivedAction:
    """One archived action (`ActiveAction`): its requested time, the completed action and completion
    time, and the bytes of its completed file and of its plan (None: none, or an empty file)."""

    instant_time: str
    completion_time: str
    action: str
    metadata: bytes | None
    plan: bytes | None


def data_file_name(actions: Sequence[ArchivedAction], layer: int = LAYER_ZERO) -> str:
    """`LSMTimelineWriter.newFileName`: the first and last action's requested times and the layer."""
    return f"{actions[0].instant_time}_{actions[-1].instant_time}_{layer}.parquet"


def encode_data_file(actions: Sequence[ArchivedAction]) -> bytes:
    """The Parquet bytes of one data file holding `actions`, in their order."""
    table = pa.table(
        {
            "instantTime": [a.instant_time for a in actions],
            "completionTime": [a.completion_time for a in actions],
            "action": [a.action for a in actions],
            "metadata": [a.metadata for a in actions],
            "plan": [a.plan for a in actions],
            "version": [LSM_TIMELINE_INSTANT_VERSION] * len(actions),
        },
        schema=LSM_SCHEMA,
    )
    out = io.BytesIO()
    pq.write_table(table, out, compression="gzip", use_dictionary=True, write_statistics=True)
    return out.getvalue()


def manifest_json(files: Sequence[LsmDataFile]) -> str:
    """`HoodieLSMTimelineManifest.toJsonString`: Jackson's default pretty printer (two-space indent,
    `" : "`, arrays opened on the same line), no trailing newline."""
    if not files:
        return '{\n  "files" : [ ]\n}'
    entries = ", ".join(
        "{\n" + f'    "fileName" : {json.dumps(f.file_name)},\n    "fileLen" : {f.file_len}\n' + "  }"
        for f in files
    )
    return '{\n  "files" : [ ' + entries + " ]\n}"


def write_archived_actions(storage: Storage, history_dir: str, actions: Sequence[ArchivedAction]) -> str:
    """Write `actions` as the next layer-0 file and snapshot; returns the data file's name."""
    manifest = read_latest_manifest(storage, history_dir)
    name = data_file_name(actions)
    rel = posixpath.join(history_dir, name)
    if any(f.file_name == name for f in manifest.files):
        return name  # written by an earlier run that stopped before deleting the active files
    data = encode_data_file(actions)
    storage.write_bytes(rel, data)  # a leftover of the same name, not in the manifest, is replaced
    update_manifest(
        storage,
        history_dir,
        manifest,
        (),
        LsmDataFile(name, len(data), actions[0].instant_time, actions[-1].instant_time, LAYER_ZERO),
    )
    return name


def update_manifest(
    storage: Storage,
    history_dir: str,
    latest: LsmManifest,
    removed: Sequence[str],
    added: LsmDataFile,
) -> int:
    """`LSMTimelineWriter.updateManifest`: manifest N+1 (the latest's files without `removed`, then
    `added`), then `_version_` deleted and created naming N+1. Returns N+1."""
    files = [f for f in latest.files if f.file_name not in removed] + [added]
    version = 1 if latest.version < 0 else latest.version + 1
    manifest_rel = posixpath.join(history_dir, f"{MANIFEST_FILE_PREFIX}{version}")
    # A manifest of that version without `_version_` naming it is a stopped run's leftover, which no
    # reader trusts while a `_version_` names an older one: replaced, as Hudi 1.1's
    # `LSMTimelineWriter.updateManifest` does (it deletes the file if it exists before creating it).
    storage.delete_file(manifest_rel)
    storage.create_if_absent(manifest_rel, manifest_json(files).encode("utf-8"))
    version_rel = posixpath.join(history_dir, VERSION_FILE_NAME)
    storage.delete_file(version_rel)
    storage.create_if_absent(version_rel, str(version).encode("utf-8"))
    return version


def compact_and_clean(
    storage: Storage,
    history_dir: str,
    batch: int = COMPACTION_BATCH_SIZE,
    retained: int = MANIFESTS_RETAINED,
) -> list[str]:
    """`LSMTimelineWriter.compactAndClean`: while a layer holds `batch` files or more
    (`hoodie.timeline.compaction.batch.size`), its oldest (by name) are merged into one file of the
    next layer, the cascade going on upwards; then snapshots beyond the newest `retained`
    (`hoodie.timeline.manifest.retained.versions`) plus one per compaction are deleted, and every
    data file none of the kept snapshots lists. Returns the files written."""
    written: list[str] = []
    layer = LAYER_ZERO
    while (name := _compact_layer(storage, history_dir, layer, batch)) is not None:
        written.append(name)
        layer += 1
    _clean(storage, history_dir, retained + len(written))
    return written


def _compact_layer(storage: Storage, history_dir: str, layer: int, batch: int) -> str | None:
    manifest = read_latest_manifest(storage, history_dir)
    files = sorted((f for f in manifest.files if f.layer == layer), key=lambda f: f.file_name)
    if len(files) < batch:
        return None
    candidates: list[LsmDataFile] = []
    total = 0
    for entry in files[:batch]:  # `getCandidateFiles`: stop once the merged file would be too big
        if total > COMPACTION_MAX_BYTES:
            break
        total += entry.file_len
        candidates.append(entry)
    if len(candidates) < 2:
        return None
    low = min(f.min_instant for f in candidates)
    high = max(f.max_instant for f in candidates)
    name = f"{low}_{high}_{layer + 1}.parquet"
    # Every record of each candidate unchanged, in the candidates' order (`compactFiles`).
    tables = [
        pq.read_table(io.BytesIO(storage.read_bytes(posixpath.join(history_dir, f.file_name))))
        for f in candidates
    ]
    merged = pa.concat_tables([t.select(LSM_SCHEMA.names).cast(LSM_SCHEMA) for t in tables])
    out = io.BytesIO()
    pq.write_table(merged, out, compression="gzip", use_dictionary=True, write_statistics=True)
    data = out.getvalue()
    storage.write_bytes(
        posixpath.join(history_dir, name), data
    )  # a stopped compaction's leftover is replaced
    update_manifest(
        storage,
        history_dir,
        manifest,
        [f.file_name for f in candidates],
        LsmDataFile(name, len(data), low, high, layer + 1),
    )
    return name


def _clean(storage: Storage, history_dir: str, keep: int) -> None:
    """`LSMTimelineWriter.clean`: manifests older than the newest `keep` go first, then the data files
    none of the kept ones lists (a stopped run's unlisted file among them)."""
    versions = sorted(manifest_versions(storage, history_dir), reverse=True)
    if len(versions) <= keep:
        return
    kept = versions[:keep]
    listed: set[str] = set()
    for version in kept:
        rel = posixpath.join(history_dir, f"{MANIFEST_FILE_PREFIX}{version}")
        listed |= {
            f.file_name for f in parse_manifest(storage.read_bytes(rel), version, storage.qualify(rel)).files
        }
    for version in versions[keep:]:
        storage.delete_file_and_checksum(posixpath.join(history_dir, f"{MANIFEST_FILE_PREFIX}{version}"))
    for name in storage.list_file_names(history_dir):
        if name.endswith(".parquet") and name not in listed:
            storage.delete_file_and_checksum(posixpath.join(history_dir, name))
