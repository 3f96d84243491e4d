"""The index definition file of Hudi 1.x tables (`hoodie.table.index.defs.path`) as untrusted input:
the columns a clean tombstones come from it, and anything not in Hudi's shape is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.mdt.index_definitions import indexed_columns_of, load_index_definitions
from service.table.properties import TableConfig
from service.table.storage import Storage

# As Hudi 1.1.1 wrote it for a table with the default column_stats index (tests/interop).
INDEX_JSON = {
    "indexDefinitions": {
        "column_stats": {
            "indexName": "column_stats",
            "indexType": "column_stats",
            "indexFunction": "column_stats",
            "sourceFields": [
                "_hoodie_commit_time",
                "_hoodie_partition_path",
                "_hoodie_record_key",
                "id",
                "ts",
            ],
            "indexOptions": {},
            "version": "V2",
        }
    }
}


def _table(
    tmp_path: Path, content: bytes | None, path: str = ".hoodie/.index_defs/index.json"
) -> tuple[Storage, TableConfig]:
    if content is not None:
        target = tmp_path / ".hoodie" / ".index_defs" / "index.json"
        target.parent.mkdir(parents=True)
        target.write_bytes(content)
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.index.defs.path": path})
    return Storage.for_base_uri(str(tmp_path)), config


def test_the_column_stats_definition_gives_the_indexed_columns(tmp_path: Path) -> None:
    storage, config = _table(tmp_path, json.dumps(INDEX_JSON).encode())
    assert indexed_columns_of(storage, config, "column_stats") == [
        "_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key", "id", "ts",
    ]  # fmt: skip
    assert load_index_definitions(storage, config)["column_stats"].version == "V2"


DEFS = ".hoodie/.index_defs/index.json"
GOOD = json.dumps(INDEX_JSON).encode()
BAD_FIELDS = {"indexDefinitions": {"column_stats": {"indexName": "c", "indexType": "c", "sourceFields": [1]}}}


@pytest.mark.parametrize(
    ("content", "path", "error", "message"),
    [
        (None, DEFS, UnsupportedTableError, r"index definition file missing"),
        (b"{not json", DEFS, CorruptTableError, r"index\.json: not a Hudi index"),
        (b'{"indexDefinitions": []}', DEFS, CorruptTableError, r"not an object"),
        (json.dumps(BAD_FIELDS).encode(), DEFS, CorruptTableError, r"sourceFields is not a list of names"),
        (b'{"indexDefinitions": {}}', DEFS, UnsupportedTableError, r"no definition of index 'column_stats'"),
        (GOOD, "../elsewhere/index.json", UnsupportedTableError, r"not a file under the table's \.hoodie"),
        (GOOD, "s3://other/.hoodie/index.json", UnsupportedTableError, r"not a file under"),
        (GOOD, "", UnsupportedTableError, r"names no hoodie\.table\.index\.defs\.path"),
    ],
)
def test_a_missing_or_malformed_definition_file_is_refused_by_name(
    tmp_path: Path, content: bytes | None, path: str, error: type[Exception], message: str
) -> None:
    storage, config = _table(tmp_path, content, path)
    with pytest.raises(error, match=message):
        indexed_columns_of(storage, config, "column_stats")
