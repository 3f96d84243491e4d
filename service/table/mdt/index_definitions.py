"""The index definition file of Hudi 1.x tables (`hoodie.table.index.defs.path`, usually
`.hoodie/.index_defs/index.json`): which columns each metadata-table index covers.

Jackson's `HoodieIndexMetadata`: `{"indexDefinitions": {<name>: {indexName, indexType, indexFunction,
sourceFields[], indexOptions{}, version}}}` (`version` only on table version 9). Hudi 1.x's
`HoodieTableMetadataUtil.getColumnsToIndex` takes the `column_stats` definition's `sourceFields` as
the indexed columns; a clean tombstones exactly those for each deleted file.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.properties import TableConfig
from service.table.storage import Storage

INDEX_VERSIONS = ("V1", "V2")  # HoodieIndexVersion; an absent version (table version 8) is V1


@dataclass(frozen=True)
class IndexDefinition:
    index_name: str
    index_type: str
    source_fields: tuple[str, ...]
    version: str | None

    @property
    def is_v2(self) -> bool:
        """V2 (Hudi 1.1 on table version 9): column and partition stats carry typed values."""
        return self.version == "V2"


def _relative(config: TableConfig, storage: Storage) -> str:
    raw = config.index_definitions_path
    if not raw:
        raise UnsupportedTableError(
            f"table {config.name!r} at {storage.base_uri}: the metadata table has an index partition but "
            "hoodie.properties names no hoodie.table.index.defs.path, so its indexed columns are unknown"
        )
    base = storage.base_uri.rstrip("/")
    path = raw[len(base) + 1 :] if raw.startswith(base + "/") else raw
    normal = posixpath.normpath(path)
    # Only a file under .hoodie/ is read: a stored path is untrusted input.
    if "://" in normal or not normal.startswith(".hoodie/"):
        raise UnsupportedTableError(
            f"table {config.name!r} at {storage.base_uri}: hoodie.table.index.defs.path={raw!r} is not a "
            "file under the table's .hoodie folder; refusing to read it"
        )
    return normal


def load_index_definitions(storage: Storage, config: TableConfig) -> dict[str, IndexDefinition]:
    """The table's index definitions by name; UnsupportedTableError when the file is missing,
    CorruptTableError (naming the file) when it is not Hudi's shape."""
    rel = _relative(config, storage)
    where = storage.qualify(rel)
    try:
        data = storage.read_bytes(rel)
    except FileNotFoundError:
        raise UnsupportedTableError(
            f"{where}: index definition file missing; the metadata table's indexed columns are unknown"
        ) from None
    try:
        tree = json.loads(data.decode("utf-8"))
        entries = tree["indexDefinitions"]
        if not isinstance(entries, dict):
            raise TypeError("indexDefinitions is not an object")
        out = {}
        for name, d in entries.items():
            fields = d.get("sourceFields") or []
            if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
                raise TypeError(f"{name}: sourceFields is not a list of names")
            version = d.get("version")
            if version is not None and version not in INDEX_VERSIONS:
                raise TypeError(f"{name}: version {version!r} is none of {', '.join(INDEX_VERSIONS)}")
            out[name] = IndexDefinition(str(d["indexName"]), str(d["indexType"]), tuple(fields), version)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise CorruptTableError(f"{where}: not a Hudi index definition file: {e}") from None
    return out


def indexed_columns_of(storage: Storage, config: TableConfig, index_name: str) -> list[str]:
    """The `sourceFields` of index `index_name`; UnsupportedTableError when it has no definition."""
    return list(index_definition(storage, config, index_name).source_fields)


def index_definition(storage: Storage, config: TableConfig, index_name: str) -> IndexDefinition:
    """The definition of index `index_name`, with at least one source field; UnsupportedTableError
    when it has none."""
    definition = load_index_definitions(storage, config).get(index_name)
    if definition is None:
        raise UnsupportedTableError(
            f"{storage.qualify(_relative(config, storage))}: no definition of index {index_name!r}; "
            "its indexed columns are unknown"
        )
    if not definition.source_fields:
        raise CorruptTableError(
            f"{storage.qualify(_relative(config, storage))}: index {index_name!r} lists no sourceFields"
        )
    return definition
