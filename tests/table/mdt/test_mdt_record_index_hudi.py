"""The record index (`record_index`) of a version-6 table Hudi 0.15 wrote, kept by our clustering.

A copy-on-write table with `hoodie.metadata.record.index.enable`:

- on a copy, Hudi's own clustering writes record-index entries for every key it moved; ours,
  computed for the files of that clustering, are the same records, in the same file groups;
- on the table, our clustering moves the keys; Hudi's record-index lookup then finds each key in
  our new file groups, and Hudi's writer with `hoodie.index.type=RECORD_INDEX` updates those keys
  exactly once (no duplicate) and inserts new ones.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table import codecs
from service.table.instant import Action
from service.table.mdt.index_keys import RECORD_INDEX_PARTITION, file_group_index
from service.table.mdt.index_records import RecordIndexInfo
from service.table.mdt.index_sync import record_index_records
from service.table.properties import load_table_config
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.mdt_records import hudi_metadata_reader, mdt_index_records

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

NAME = "rli_six"
RLI = {
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.parquet.small.file.limit": "0",
}


def _write(spark: SparkSession, base: Path, ids: Any, batch: int, operation: str, **extra: str) -> None:
    ht.write(
        spark, base, ht.generate(spark, ids, batch), operation, NAME,
        partition_fields=(ht.PARTITION_FIELD,), extra_opts={**RLI, **extra},
    )  # fmt: skip


@pytest.fixture(scope="module")
def rli_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("rli-six") / NAME
    _write(spark, base, range(0, 30), 0, "insert")
    _write(spark, base, range(10, 40), 1, "upsert")
    _write(spark, base, range(0, 40, 3), 2, "upsert")
    props = (base / ".hoodie" / "hoodie.properties").read_text("latin-1")
    assert RECORD_INDEX_PARTITION in re.findall(r"^hoodie.table.metadata.partitions=(.*)$", props, re.M)[0]
    return base


def test_our_record_index_entries_equal_those_of_hudis_clustering(
    spark: SparkSession, rli_table: Path, tmp_path: Path
) -> None:
    copy = tmp_path / NAME
    shutil.copytree(rli_table, copy)
    with ht.registered_table(spark, copy) as name:
        index = ",".join(f"{k}={v}" for k, v in RLI.items())  # without them Hudi drops the index
        options = f"hoodie.clustering.plan.strategy.small.file.limit=100000000,{index}"
        spark.sql(f"CALL run_clustering(table => '{name}', options => '{options}')").collect()
    [instant] = [i for i in ht.instants_with_action(copy, "replacecommit")]
    table = HudiTable.open(str(copy))
    [completed] = [i for i in table.load_timeline().by_actions([Action.REPLACE_COMMIT]).completed()]
    metadata = table.facts_reader.metadata(completed, codecs.ReplaceCommitMetadata)
    storage = Storage.for_base_uri(str(copy))
    ours = record_index_records(storage, load_table_config(storage), metadata, instant, UTC)
    theirs = mdt_index_records(copy, RECORD_INDEX_PARTITION, instant)
    assert len(theirs) == 40
    assert {r.key: r for r in ours} == {k: r for k, (r, _) in theirs.items()}
    groups = sorted({g for _, g in theirs.values()})
    assert all(group == groups[file_group_index(key, len(groups))] for key, (_, group) in theirs.items())


def test_hudi_finds_and_updates_keys_our_clustering_moved_exactly_once(
    spark: SparkSession, rli_table: Path, tmp_path: Path
) -> None:
    base = tmp_path / NAME
    shutil.copytree(rli_table, base)
    before = {r["id"]: r for r in ht.read_snapshot(spark, base)}
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping(
        {
            "hoodie.clustering.plan.strategy.sort.columns": "id",
            "hoodie.clustering.plan.strategy.small.file.limit": 100_000_000,
        },
        table.name,
    )
    outcome = schedule_clustering(
        table, config, InProcessTableLock(table.name), now=datetime.now(UTC), zone=UTC
    )
    assert outcome.instant_time is not None, outcome.reason
    result = execute_clustering(
        table, outcome.instant_time, config, SparkExecutor(session=spark).run_group,
        InProcessTableLock(table.name), zone=UTC,
    )  # fmt: skip
    assert result.committed
    instant = outcome.instant_time
    deltacommit = json.loads(
        (base / ".hoodie" / "metadata" / ".hoodie" / f"{instant}.deltacommit").read_text()
    )
    assert RECORD_INDEX_PARTITION in deltacommit["partitionToWriteStats"]
    # Hudi's own record-index lookup finds every moved key in the file group our clustering wrote.
    moved = {
        key: record.payload
        for key, (record, _) in mdt_index_records(base, RECORD_INDEX_PARTITION, instant).items()
        if isinstance(record.payload, RecordIndexInfo)
    }
    written = {r["_hoodie_record_key"]: r["_hoodie_file_name"] for r in ht.read_snapshot(spark, base)}
    assert set(moved) == set(written) == {str(i) for i in before}
    reader = hudi_metadata_reader(spark, base, withEnableRecordIndex=True)
    keys = spark._jvm.java.util.ArrayList()  # type: ignore[attr-defined]
    for key in sorted(moved):
        keys.add(key)
    located = reader.readRecordIndex(keys)
    for key in moved:
        location = located.get(key)
        assert location is not None, key
        assert written[key].startswith(location.getFileId() + "_"), (key, location.getFileId(), written[key])
    # Hudi's writer through the record index: updated once, inserted once.
    _write(spark, base, [0, 5, 100], 7, "upsert", **{"hoodie.index.type": "RECORD_INDEX"})
    after = ht.read_snapshot(spark, base)
    ids = [r["id"] for r in after]
    assert len(ids) == len(set(ids)) == len(before) + 1
    assert {r["id"]: r["ts"] for r in after if r["id"] in (0, 5, 100)} == {0: 7, 5: 7, 100: 7}
