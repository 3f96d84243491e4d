"""The metadata table's per-file index records of a commit on tables Hudi 1.0.2 (version 8) and 1.1.1
(version 9) wrote: what we compute for the base files of Hudi's own compaction equals, record for
record and key for key, what Hudi wrote into its `column_stats` partition for them.

The table has a column of every type the V2 (1.1) encoding distinguishes: long, int, double, float,
boolean, string, binary, decimal, date and timestamp, with a zero as a double's and a float's lower
bound (parquet-java widens it to -0.0 on read) and nulls.
"""

from __future__ import annotations

import datetime
import re
from datetime import UTC
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from service.errors import UnsupportedTableError
from service.table import codecs
from service.table.mdt.commit import check_mdt
from service.table.mdt.index_definitions import indexed_columns_of
from service.table.mdt.index_keys import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION, file_group_index
from service.table.mdt.index_reader import MdtReader
from service.table.mdt.index_records import ColumnStats, IndexRecord
from service.table.mdt.index_sync import commit_index_records, file_index_records, record_index_records
from service.table.mdt.mdt_format import RECORD_INDEX_PARTITION
from service.table.mdt.partition_stats import partition_files, partition_stats_records
from service.table.properties import load_table_config
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.support.hudi1_histories import RLI_OPTIONS, writer_options
from tests.support.hudi_jvm import HudiJvm
from tests.support.mdt_records import mdt_index_records

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

SCHEMA = (
    "id long, region string, ts long, i int, d double, f float, b boolean, dec decimal(10,2), "
    "dt date, tsm timestamp, bin binary, value string"
)


def _rows(ids: range | list[int], batch: int) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "region": ("americas", "asia")[i % 2],
            "ts": batch,
            "i": i * batch - 3,
            "d": i / 3.0 if i % 4 else 0.0,  # a zero lower bound in the even ids' file
            "f": float(i % 3) / 7 - (0.0 if i % 2 else 0.5),
            "b": i % 3 == 0,
            "dec": Decimal(f"{i - 5}.{batch:02d}"),
            "dt": datetime.date(2024, 1, 1) + datetime.timedelta(days=i * 40 - 300),
            "tsm": datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i * 977),
            "bin": bytes([(i * 53) % 256, batch]),
            "value": None if i % 5 == 0 else f"v{batch}",
        }
        for i in ids
    ]


@pytest.fixture(scope="module")
def compacted(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A merge-on-read table (metadata table with Hudi's defaults) after Hudi's own compaction; its
    compaction instant."""
    base = tmp_path_factory.mktemp(f"index-records-{hudi1.version}") / "typed"
    options = writer_options("typed", "MERGE_ON_READ", True)
    hudi1.write(
        base, _rows(range(0, 16), 0), SCHEMA, {**options, "hoodie.datasource.write.operation": "insert"}
    )
    hudi1.write(
        base, _rows(range(0, 12), 1), SCHEMA, {**options, "hoodie.datasource.write.operation": "upsert"}
    )
    hudi1.sql(f"create table typed_{hudi1.table_version} using hudi location '{base}'")
    hudi1.sql(
        f"call run_compaction(op => 'scheduleAndExecute', table => 'typed_{hudi1.table_version}', "
        "options => 'hoodie.compact.inline.max.delta.commits=1')"
    )
    [commit] = [
        p.name
        for p in (base / ".hoodie" / "timeline").iterdir()
        if re.fullmatch(r"\d{17}_\d{17}\.commit", p.name)
    ]
    return base, commit[:17]


def test_column_stats_of_a_commits_base_files_equal_hudi_1xs(
    hudi1: HudiJvm, compacted: tuple[Path, str]
) -> None:
    base, instant = compacted
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    [completed] = [i for i in timeline.completed() if i.timestamp == instant]
    metadata = table.facts_reader.metadata(completed, codecs.CommitMetadata)
    assert metadata.compacted
    storage = Storage.for_base_uri(str(base))
    config = load_table_config(storage)
    ours = {
        r.key: r
        for r in file_index_records(storage, config, table.format.mdt, metadata, instant)[
            COLUMN_STATS_PARTITION
        ]
        if isinstance(r, IndexRecord)
    }
    theirs = {k: r for k, (r, _) in mdt_index_records(base, COLUMN_STATS_PARTITION, instant).items()}
    assert len(theirs) == 2 * 15  # two base files, fifteen indexed columns (three meta fields, the data)
    assert ours == theirs
    stats = [r.payload for r in ours.values() if isinstance(r.payload, ColumnStats)]
    by_column = {s.column_name: s for s in stats}
    if hudi1.table_version == 9:  # V2: typed values with their ValueType
        assert (
            by_column["dec"].value_type is not None and by_column["dec"].value_type.additional_info == "10,2"
        )
        assert {s.min_value.wrapper for s in stats if s.column_name == "dt" and s.min_value} == {"IntWrapper"}
    else:
        assert all(s.value_type is None for s in stats)
        assert {s.min_value.wrapper for s in stats if s.column_name == "dt" and s.min_value} == {
            "DateWrapper"
        }
    assert all(s.is_tight_bound is False for s in stats)
    # The lower bound 0.0 of a double column read as parquet-java reads it.
    zero_min = [s for s in stats if s.column_name == "d" and s.min_value and s.min_value.value == 0.0]
    assert zero_min and all(str(s.min_value.value) == "-0.0" for s in zero_min if s.min_value)
    # A commit that must recompute partition stats (Hudi's default on a partitioned table) without the
    # partitions' files is refused.
    assert PARTITION_STATS_PARTITION in config.metadata_partitions
    reader = _mdt_reader(table, instant)
    with pytest.raises(UnsupportedTableError, match="partition_stats"):
        commit_index_records(storage, config, table.format.mdt, reader, metadata, instant)


def _mdt_reader(table: HudiTable, instant: str) -> MdtReader:
    timeline = table.load_timeline()
    state = check_mdt(table.storage, table.config, table.format, timeline, instant)
    return state.reader(table.storage, timeline, table.layout)


def test_partition_stats_of_a_compaction_equal_hudi_1xs(hudi1: HudiJvm, compacted: tuple[Path, str]) -> None:
    """What we recompute for the partitions of Hudi's compaction equals what Hudi wrote at it, from
    the compacted files' footers plus the MDT, and from the MDT alone; and our reader of the MDT's
    `partition_stats` and `column_stats` serves what Hudi's own metadata reader does."""
    base, instant = compacted
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    [completed] = [i for i in timeline.completed() if i.timestamp == instant]
    metadata = table.facts_reader.metadata(completed, codecs.CommitMetadata)
    reader = _mdt_reader(table, instant)
    files = partition_files(table.load_view(timeline), metadata.partition_to_write_stats, instant)
    assert all(files.values())
    ours = commit_index_records(
        table.storage, table.config, table.format.mdt, reader, metadata, instant, partition_files=files
    )[PARTITION_STATS_PARTITION]
    theirs = {k: r for k, (r, _) in mdt_index_records(base, PARTITION_STATS_PARTITION, instant).items()}
    assert len(theirs) == 2 * 15  # two partitions, fifteen indexed columns
    assert {r.key: r for r in ours if isinstance(r, IndexRecord)} == theirs
    columns = indexed_columns_of(table.storage, table.config, COLUMN_STATS_PARTITION)
    from_mdt = partition_stats_records(reader, [], files, columns)
    assert {r.key: r for r in from_mdt} == theirs
    assert reader.records(PARTITION_STATS_PARTITION) == theirs
    # Hudi's reader (`show_metadata_table_column_stats`) serves the file ranges ours reads.
    name = f"typed_{hudi1.table_version}"
    for partition in sorted(files):
        rows = hudi1.sql(
            f"call show_metadata_table_column_stats(table => '{name}', partition => '{partition}', "
            "targetColumns => 'id,ts,value')"
        )
        theirs_files = {
            (r["file_name"], r["column_name"], r["min_value"], r["max_value"], r["null_number"]) for r in rows
        }
        ours_files = {
            (
                r.payload.file_name,
                r.payload.column_name,
                str(r.payload.min_value.value) if r.payload.min_value else None,
                str(r.payload.max_value.value) if r.payload.max_value else None,
                r.payload.null_count,
            )
            for r in reader.records(COLUMN_STATS_PARTITION).values()
            if isinstance(r.payload, ColumnStats)
            and r.payload.column_name in ("id", "ts", "value")
            and r.payload.file_name in files[partition]
        }
        assert theirs_files and theirs_files == ours_files


@pytest.fixture(scope="module")
def clustered(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A copy-on-write table with the record index after Hudi's own clustering; the clustering's
    instant. Hudi creates the record index on the writes after the first; a writer (the clustering
    procedure too) without the record-index options drops the partition, so it gets them as well."""
    base = tmp_path_factory.mktemp(f"rli-{hudi1.version}") / "located"
    options = {**writer_options("located", "COPY_ON_WRITE", True), **RLI_OPTIONS}
    for ids, batch, operation in (
        (range(0, 12), 0, "insert"),
        (range(4, 16), 1, "upsert"),
        (range(0, 16, 3), 2, "upsert"),
    ):
        hudi1.write(
            base, _rows(ids, batch), SCHEMA, {**options, "hoodie.datasource.write.operation": operation}
        )
    name = f"located_{hudi1.table_version}"
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    extra = ",".join(f"{k}={v}" for k, v in RLI_OPTIONS.items())
    hudi1.sql(
        f"call run_clustering(table => '{name}', "
        f"options => 'hoodie.clustering.plan.strategy.small.file.limit=100000000,{extra}')"
    )
    [done] = [
        p.name
        for p in (base / ".hoodie" / "timeline").iterdir()
        if re.fullmatch(r"\d{17}_\d{17}\.replacecommit", p.name)
    ]
    return base, done[:17]


def test_record_index_entries_of_a_clustering_equal_hudi_1xs(
    hudi1: HudiJvm, clustered: tuple[Path, str]
) -> None:
    base, instant = clustered
    table = HudiTable.open(str(base))
    [completed] = [i for i in table.load_timeline().completed() if i.timestamp == instant]
    metadata = table.facts_reader.metadata(completed, codecs.ReplaceCommitMetadata)
    storage = Storage.for_base_uri(str(base))
    config = load_table_config(storage)
    assert RECORD_INDEX_PARTITION in config.metadata_partitions
    # The child JVM runs in UTC, the zone of a LOCAL timeline here.
    ours = record_index_records(storage, config, metadata, instant, table.timeline_zone(UTC))
    theirs = mdt_index_records(base, RECORD_INDEX_PARTITION, instant)
    assert len(ours) == 16 and len(theirs) == 16  # every key the clustering rewrote
    assert {r.key: r for r in ours} == {k: r for k, (r, _) in theirs.items()}
    # Each entry went to the file group Hudi's hash picks among the partition's groups.
    groups = sorted({group for _, group in theirs.values()})
    assert all(group == groups[file_group_index(key, len(groups))] for key, (_, group) in theirs.items())
