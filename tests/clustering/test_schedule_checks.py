"""Schedule-time checks: a plan execution could not run is refused, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.clustering.attempts import SCHEDULER_KEY
from service.config.hoodie import HoodieConfig
from service.errors import CorruptTableError, PlanRefusedError, TableServicesRefusedError
from service.lock.in_process import InProcessTableLock
from service.table.properties import load_table_config, store_table_config
from service.table.table import HudiTable
from tests.clean.helpers import fid
from tests.support import hudi_tables as ht
from tests.support.fixtures import SCHEMA, FileSpec, FixtureTable, ts

NOW = datetime(2024, 1, 2, tzinfo=UTC)
VIRTUAL = {"hoodie.populate.meta.fields": "false"}
SIMPLE = "org.apache.hudi.keygen.SimpleKeyGenerator"


def _table(
    tmp_path: Path, properties: Mapping[str, str | None] | None = None, schema: Any = SCHEMA
) -> FixtureTable:
    """Three small files in partition `a`; the commits carry `schema` (None: no schema at all)."""
    t = FixtureTable(tmp_path / "t", name="t")
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec("a", fid(i))])
    if properties:
        store_table_config(t.storage, load_table_config(t.storage).with_updates(properties))
    for i in range(1, 4):
        path = t.base / ".hoodie" / f"{ts(i)}.commit"
        meta = json.loads(path.read_text())
        if schema is None:
            meta["extraMetadata"].pop("schema")
        else:
            meta["extraMetadata"]["schema"] = schema if isinstance(schema, str) else json.dumps(schema)
        path.write_text(json.dumps(meta))
    return t


def _schedule(t: FixtureTable, **hoodie: str) -> str | None:
    table = HudiTable.open(str(t.base))
    config = HoodieConfig.from_mapping(hoodie, table.name)
    outcome = schedule_clustering(table, config, InProcessTableLock(table.name), now=NOW, zone=UTC)
    return outcome.instant_time


def _timeline_files(t: FixtureTable) -> list[str]:
    return sorted(p.name for p in (t.base / ".hoodie").iterdir() if p.is_file())


def _refused(t: FixtureTable, match: str, error: type[Exception] = PlanRefusedError, **hoodie: str) -> None:
    before = _timeline_files(t)
    with pytest.raises(error, match=match):
        _schedule(t, **hoodie)
    assert _timeline_files(t) == before  # no `.replacecommit.requested`


SORT = "hoodie.clustering.plan.strategy.sort.columns"


def _with_field(name: str, avro_type: Any) -> dict[str, Any]:
    return {**SCHEMA, "fields": [*SCHEMA["fields"], {"name": name, "type": avro_type, "default": None}]}


def test_a_plan_passing_every_check_is_written_and_marked_ours(tmp_path: Path) -> None:
    t = _table(tmp_path, VIRTUAL | {"hoodie.table.keygenerator.class": SIMPLE})
    instant = _schedule(t, **{SORT: "v,id"})
    assert instant is not None
    assert (t.base / ".hoodie" / f"{instant}.replacecommit.requested").exists()
    assert SCHEDULER_KEY.encode() in (t.base / ".hoodie" / f"{instant}.replacecommit.requested").read_bytes()


def test_sort_column_missing_from_the_table_schema(tmp_path: Path) -> None:
    _refused(_table(tmp_path), r"sort\.columns=v,nope: 'nope' is not a top-level column", **{SORT: "v,nope"})


def _add_column(t: FixtureTable, name: str, values: pa.Array, avro_type: Any) -> None:
    """Every data file gets column `name` (3 rows each), and the committed schema its Avro type."""
    for path in (t.base / "a").glob("*.parquet"):
        pq.write_table(pq.read_table(path).append_column(name, values), path)
    for path in (t.base / ".hoodie").glob("*.commit"):
        meta = json.loads(path.read_text())
        meta["extraMetadata"]["schema"] = json.dumps(_with_field(name, avro_type))
        path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "values",
    [
        pa.array([[1], [2], []], pa.list_(pa.int64())),
        pa.array([{"x": 1}, {"x": 2}, None], pa.struct([("x", pa.int64())])),
        pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
    ],
)
def test_sort_column_of_a_type_layout_cannot_order(tmp_path: Path, values: pa.Array) -> None:
    t = _table(tmp_path)
    _add_column(t, "nested", values, ["null", "string"])  # the Avro type is not what is checked
    _refused(t, "column 'nested' has type .*, which layout optimization cannot order", **{SORT: "nested"})


@pytest.mark.parametrize(
    "values",
    [
        pa.array([0, 1, None], pa.timestamp("us", "UTC")),
        pa.array([Decimal("1.25"), None, Decimal("2.50")], pa.decimal128(10, 2)),
        pa.array(["A", "B", None]),
        pa.array([1.5, None, 2.5]),
    ],
)
def test_sort_column_types_layout_orders_pass(tmp_path: Path, values: pa.Array) -> None:
    t = _table(tmp_path)
    _add_column(t, "c", values, ["null", "string"])
    assert _schedule(t, **{SORT: "c"}) is not None


def test_table_schema_column_the_input_files_lack(tmp_path: Path) -> None:
    t = _table(tmp_path, schema=_with_field("added", ["null", "long"]))
    _refused(t, r"lacks column\(s\) \['added'\] of the table schema")


def test_unreadable_table_schema(tmp_path: Path) -> None:
    _refused(
        _table(tmp_path, schema="{not json"),
        rf"table schema in the commit metadata of \S*/\.hoodie/{ts(3)}\.commit cannot be read",
    )


def test_a_schema_unreadable_at_execution_fails_before_an_attempt_naming_its_commit(tmp_path: Path) -> None:
    """The writer tasks read the table schema: one that became unreadable after the plan fails the
    execution in the driver, naming its commit file, before an inflight attempt exists."""
    t = _table(tmp_path)
    instant = _schedule(t)
    assert instant is not None
    garbled = ht.garble_table_schemas(t.base, "commit")
    table = HudiTable.open(str(t.base))

    def runner(job: object) -> object:
        raise AssertionError("a group ran")

    with pytest.raises(CorruptTableError, match=rf"metadata of \S*/\.hoodie/{garbled[-1].name} cannot"):
        execute_clustering(
            table, instant, HoodieConfig.from_mapping({}, table.name), runner,
            InProcessTableLock(table.name), zone=UTC,
        )  # fmt: skip
    assert not (t.base / ".hoodie" / f"{instant}.replacecommit.inflight").exists()


def test_without_a_committed_schema_the_newest_input_file_schema_is_checked(tmp_path: Path) -> None:
    t = _table(tmp_path, schema=None)
    _refused(t, "'nope' is not a top-level column", **{SORT: "nope"})
    assert _schedule(t, **{SORT: "v"}) is not None


@pytest.mark.parametrize(
    "keygen",
    ["org.apache.hudi.keygen.CustomKeyGenerator", "org.apache.hudi.keygen.TimestampBasedKeyGenerator"],
)
def test_key_generator_hudi_refuses_without_meta_fields(tmp_path: Path, keygen: str) -> None:
    t = _table(tmp_path, VIRTUAL | {"hoodie.table.keygenerator.class": keygen})
    _refused(t, f"hoodie.table.keygenerator.class={keygen}; record keys are then derived")


def test_record_key_fields_missing_from_the_schema(tmp_path: Path) -> None:
    t = _table(tmp_path, VIRTUAL | {"hoodie.table.recordkey.fields": "gone"})
    _refused(t, r"hoodie.table.recordkey.fields=gone: \['gone'\] not in the table's columns")


def test_any_key_generator_is_fine_with_meta_fields(tmp_path: Path) -> None:
    t = _table(tmp_path, {"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator"})
    assert _schedule(t) is not None


def test_parquet_codec_the_writer_cannot_produce(tmp_path: Path) -> None:
    _refused(_table(tmp_path), "lz4 is not supported", **{"hoodie.parquet.compression.codec": "lz4"})


@pytest.mark.parametrize("index", ["HBASE", "INMEMORY", "BUCKET", "bucket"])
def test_an_index_clustering_must_update_is_refused(tmp_path: Path, index: str) -> None:
    """The writers' index keeps record locations (HBase, in memory) or encodes buckets in file ids:
    after a clustering that does not update it, updates would go to replaced file groups."""
    # A refusal with its fix (a state, not a failure to retry): nothing of ours can update the index.
    refused = f"hoodie.index.type={index.upper()}"
    _refused(_table(tmp_path), refused, TableServicesRefusedError, **{"hoodie.index.type": index})


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_indexes_that_read_the_table_are_fine(tmp_path: Path, index: str) -> None:
    assert _schedule(_table(tmp_path), **{"hoodie.index.type": index}) is not None


def test_dry_run_is_refused_too(tmp_path: Path) -> None:
    t = _table(tmp_path)
    table = HudiTable.open(str(t.base))
    config = HoodieConfig.from_mapping({SORT: "nope"}, table.name)
    with pytest.raises(PlanRefusedError):
        schedule_clustering(table, config, InProcessTableLock(table.name), now=NOW, zone=UTC, dry_run=True)
