"""Our `column_stats` / `bloom_filters` keys, file-group mapping and records equal those Hudi 0.15 wrote.

The history (Hudi's Spark writer, MDT with both index partitions on, compacted every 3 deltacommits)
is read back with our HFile and log readers: every record of each file group's latest slice. For
every base file on disk we then build, from that file's own Parquet footer and the commit's schema,
the records Hudi should have written, and compare key, file group and every field.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from service.table.avro_schema import HOODIE_META_FIELDS
from service.table.codecs.avro_file import decode_avro
from service.table.codecs.clean import CleanMetadata
from service.table.hfile.reader import HFileReader
from service.table.mdt.column_ranges import column_ranges, columns_to_index
from service.table.mdt.files_listing import parse_log_file_name
from service.table.mdt.index_keys import (
    BLOOM_FILTERS_PARTITION,
    COLUMN_STATS_PARTITION,
    _b64,
    bloom_filter_key,
    column_stats_key,
    file_group_index,
    file_index_id,
    mdt_file_group_ids,
    partition_index_id,
    xxhash64,
)
from service.table.mdt.index_records import (
    RECORD_TYPE_BLOOM_FILTER,
    ColumnStats,
    IndexRecord,
    WrappedValue,
    bloom_filter_deletion,
    bloom_filter_record,
    column_stats_deletions,
    column_stats_record,
    decode_index_record,
    encode_index_record,
)
from service.table.mdt.log_blocks import BlockType, HeaderKey, read_log_blocks
from service.table.mdt.records import log_block_schema_text
from service.table.mdt.timeline import MDT_BASE, load_mdt_timeline
from service.table.storage import Storage
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.mdt_histories import MDT_INDEXES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

_BASE_FILE = re.compile(r"^(?P<file_id>[^_]+)_(?P<token>\d+-\d+-\d+)_(?P<instant>\d+)\.hfile$")
BLOOM_TYPE = "DYNAMIC_V0"  # hoodie.bloom.index.filter.type, Hudi's default, which the history keeps


class HudiRecords:
    """Hudi's records of one MDT partition: key -> (file group id, record, raw value if from a log block).

    Only log block values are kept raw: those are what we write. (Compaction's base HFiles set
    `_hoodie_file_name` in each value, log blocks leave every meta field null.)
    """

    def __init__(self, base_path: Path, mdt_partition: str, repeats: bool = False) -> None:
        self.repeats = repeats  # a later record of a key replaces the earlier (tombstones)
        storage = Storage.for_base_uri(str(base_path))
        completed = {i.timestamp for i in load_mdt_timeline(storage).completed()}
        directory = base_path / MDT_BASE / mdt_partition
        bases: dict[str, dict[str, str]] = {}
        logs: dict[str, dict[str, list[tuple[int, str, str]]]] = {}
        for path in directory.iterdir():
            if (m := _BASE_FILE.match(path.name)) is not None:
                bases.setdefault(m["file_id"], {})[m["instant"]] = path.name
            elif (log := parse_log_file_name(path.name)) is not None:
                logs.setdefault(log.file_id, {}).setdefault(log.base_instant, []).append(
                    (log.version, log.write_token, path.name)
                )
        self.file_ids = mdt_file_group_ids(storage, mdt_partition)
        assert set(self.file_ids) == set(bases) | set(logs)
        self.records: dict[str, tuple[str, IndexRecord, bytes | None]] = {}
        for fid in self.file_ids:
            candidates = {t for t in bases.get(fid, {}) if t in completed}
            candidates |= {t for t in logs.get(fid, {}) if t in completed}
            latest = max(candidates)
            if (base := bases.get(fid, {}).get(latest)) is not None:
                reader = HFileReader((directory / base).read_bytes(), base)
                schema = reader.schema_text
                assert schema is not None
                for key, value in reader.items():
                    self._add(fid, key, value, schema, base, from_log=False)
            for _, _, name in sorted(logs.get(fid, {}).get(latest, [])):
                for block in read_log_blocks((directory / name).read_bytes(), name):
                    if block.block_type is not BlockType.HFILE_DATA_BLOCK:
                        continue
                    assert block.instant_time in completed, f"{name}: block of pending {block.instant_time}"
                    schema = block.header[HeaderKey.SCHEMA]
                    assert schema == log_block_schema_text()
                    for key, value in HFileReader(block.content, name).items():
                        self._add(fid, key, value, schema, name, from_log=True)

    def _add(self, fid: str, key: str, value: bytes, schema: str, source: str, from_log: bool) -> None:
        record = decode_index_record(key, value, schema, source)
        # Without a clean, Hudi writes each base file's records once: a key never repeats.
        assert self.repeats or key not in self.records, f"{source}: {key} written twice"
        self.records[key] = (fid, record, value if from_log else None)


def base_files(base_path: Path) -> list[tuple[str, str]]:
    """(partition, file name) of every Parquet base file on disk."""
    return [
        (partition, path.name)
        for partition in ht.partition_paths(base_path)
        for path in sorted((base_path / partition).glob("*.parquet"))
    ]


def commit_columns(base_path: Path, file_name: str) -> list[str]:
    """The columns Hudi indexes for a file: its commit's `schema` fields, meta fields first."""
    instant = file_name.rsplit("_", 1)[1].removesuffix(".parquet")
    commit = json.loads((base_path / ".hoodie" / f"{instant}.commit").read_text())
    schema = json.loads(commit["extraMetadata"]["schema"])
    return columns_to_index([], [f["name"] for f in schema["fields"]], populate_meta_fields=True)


@pytest.fixture
def history(mdt_indexes_built: HudiHistory, tmp_path: Path) -> HudiHistory:
    return mdt_indexes_built.copy_to(tmp_path / "mdt_indexes")


def assert_column_stats_equal_hudis(base_path: Path) -> dict[str, IndexRecord]:
    """Our column stats records of every base file equal Hudi's, key, file group and fields (and
    bytes, for records still in log blocks); returns ours by key."""
    hudi = HudiRecords(base_path, COLUMN_STATS_PARTITION)
    assert len(hudi.file_ids) == 2  # hoodie.metadata.index.column.stats.file.group.count default
    ours: dict[str, IndexRecord] = {}
    for partition, name in base_files(base_path):
        footer = pq.read_metadata(base_path / partition / name)
        for stats in column_ranges(footer, name, commit_columns(base_path, name)):
            record = column_stats_record(partition, stats)
            ours[record.key] = record
    assert set(ours) == set(hudi.records)
    compared_bytes = 0
    for key, record in ours.items():
        fid, theirs, value = hudi.records[key]
        assert fid == hudi.file_ids[file_group_index(key, len(hudi.file_ids))], key
        assert record == theirs, key
        if value is not None:
            assert encode_index_record(record) == value, key
            compared_bytes += 1
    assert compared_bytes > 0  # the last commits are still in log blocks
    return ours


def wrappers_by_column(records: dict[str, IndexRecord]) -> dict[str, set[str | None]]:
    out: dict[str, set[str | None]] = {}
    for record in records.values():
        assert isinstance(record.payload, ColumnStats)
        for bound in (record.payload.min_value, record.payload.max_value):
            out.setdefault(record.payload.column_name, set()).add(bound.wrapper if bound else None)
    return out


def test_column_stats_keys_groups_and_records_equal_hudis(history: HudiHistory) -> None:
    ours = assert_column_stats_equal_hudis(history.base_path)
    assert len(ours) == len(base_files(history.base_path)) * (len(ht.DATA_COLUMNS) + 5)
    # Spark writes `event_time` as INT64 TIMESTAMP_MICROS: Hudi keeps the Long, not a TimestampMicrosWrapper.
    strings = ("region", "name", *HOODIE_META_FIELDS)
    assert wrappers_by_column(ours) == {
        **{c: {"StringWrapper"} for c in strings},
        "id": {"LongWrapper"},
        "ts": {"LongWrapper"},
        "event_time": {"LongWrapper"},
        "qty": {"IntWrapper"},
        "price": {"DoubleWrapper"},
    }


def test_column_stats_of_every_wrapped_type_and_all_null_columns_equal_hudis(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Dates, decimals (scaled to decimal(30, 15)), floats, booleans, bytes, a column that is null in
    every row and one null in some: Hudi's records for them equal ours."""
    from pyspark.sql import Row

    base_path = tmp_path / "mdt_index_types"
    schema = (
        "id long, region string, ts long, day date, amount decimal(10,2), big decimal(20,4), "
        "ratio float, flag boolean, raw binary, none_int int, none_str string, some_int int, "
        "zero_min double, zero_max float"
    )
    for batch in range(2):
        rows = [
            Row(
                id=i,
                region=ht.PARTITIONS[i % 2],
                ts=batch,
                day=datetime.date(2020, 1, 1) + datetime.timedelta(days=i * 37 - 400),
                amount=Decimal(i * 113 - 700) / 100,
                big=Decimal(i * 987654321 - 5_000_000_000) / 10_000,
                ratio=float(i) / 3 - 2,
                flag=i % 3 == 0,
                raw=bytes([(i * 53) % 256, i]),
                none_int=None,
                none_str=None,
                some_int=i if i % 4 else None,
                # Zero bounds: parquet-java reads a min of zero as -0.0 and a max of zero as +0.0.
                zero_min=float(i) if i % 4 else 0.0,
                zero_max=-float(i) if i % 4 else -0.0,
            )
            for i in range(batch * 20, batch * 20 + 20)
        ]
        ht.write(
            spark,
            base_path,
            spark.createDataFrame(rows, schema),
            "insert",
            "mdt_index_types",
            partition_fields=(ht.PARTITION_FIELD,),
            extra_opts=MDT_INDEXES,
        )
    ours = assert_column_stats_equal_hudis(base_path)
    wrappers = wrappers_by_column(ours)
    assert wrappers["day"] == {"DateWrapper"}
    assert wrappers["amount"] == wrappers["big"] == {"DecimalWrapper"}
    assert wrappers["ratio"] == {"FloatWrapper"}
    assert wrappers["flag"] == {"BooleanWrapper"}
    assert wrappers["raw"] == {"BytesWrapper"}
    assert wrappers["some_int"] == {"IntWrapper"}
    # Only nulls: parquet-mr's unset int statistics read as 0, an unset Binary as null.
    nulls = {r.payload.column_name: r.payload for r in ours.values() if isinstance(r.payload, ColumnStats)}
    assert nulls["none_int"].min_value == nulls["none_int"].max_value == WrappedValue("IntWrapper", 0)
    assert nulls["none_str"].min_value is None and nulls["none_str"].max_value is None
    zeros = [r.payload for r in ours.values() if isinstance(r.payload, ColumnStats)]
    assert {str(s.min_value.value) for s in zeros if s.column_name == "zero_min" and s.min_value} >= {"-0.0"}
    assert {str(s.max_value.value) for s in zeros if s.column_name == "zero_max" and s.max_value} >= {"0.0"}


def test_bloom_filter_keys_groups_and_records_equal_hudis(history: HudiHistory) -> None:
    hudi = HudiRecords(history.base_path, BLOOM_FILTERS_PARTITION)
    assert len(hudi.file_ids) == 4  # hoodie.metadata.index.bloom.filter.file.group.count default
    ours: dict[str, IndexRecord] = {}
    for partition, name in base_files(history.base_path):
        meta = pq.read_metadata(history.base_path / partition / name).metadata
        assert meta[b"hoodie_bloom_filter_type_code"].decode() == BLOOM_TYPE
        instant = name.rsplit("_", 1)[1].removesuffix(".parquet")
        record = bloom_filter_record(
            partition, name, instant, BLOOM_TYPE, meta[b"org.apache.hudi.bloomfilter"].decode("utf-8")
        )
        ours[record.key] = record
    assert set(ours) == set(hudi.records)
    compared_bytes = 0
    for key, record in ours.items():
        fid, theirs, value = hudi.records[key]
        assert fid == hudi.file_ids[file_group_index(key, len(hudi.file_ids))], key
        assert theirs.type == RECORD_TYPE_BLOOM_FILTER
        assert record == theirs, key
        if value is not None:
            assert encode_index_record(record) == value, key
            compared_bytes += 1
    assert compared_bytes > 0


def test_keys_fail_with_an_unsigned_seed_or_another_digest(history: HudiHistory) -> None:
    """Controls: the variants one could plausibly get wrong produce keys Hudi never wrote."""
    hudi = HudiRecords(history.base_path, BLOOM_FILTERS_PARTITION)
    partition, name = base_files(history.base_path)[0]
    assert bloom_filter_key(partition, name) in hudi.records
    unsigned_seed = _b64(xxhash64(partition.encode(), 0xDABADABA).to_bytes(8, "big")) + file_index_id(name)
    url_safe = base64.urlsafe_b64encode(base64.b64decode(partition_index_id(partition))).decode()
    assert unsigned_seed not in hudi.records
    if url_safe != partition_index_id(partition):
        assert url_safe + file_index_id(name) not in hudi.records


def test_clean_tombstones_equal_hudis(spark: SparkSession, tmp_path: Path) -> None:
    """Hudi's own clean of replaced file versions writes, per deleted base file, a bloom tombstone and
    a column stats stub per indexed column (under a clipped file name, see `column_stats_deletions`):
    ours equal them, key, file group and fields; the deleted files' own stats stay live."""
    base_path = tmp_path / "mdt_index_clean"
    ids = list(range(12))
    for batch in range(3):
        extra = (
            {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1"} if batch == 2 else {}
        )
        ht.write(
            spark,
            base_path,
            ht.generate(spark, ids, batch),
            "insert" if batch == 0 else "upsert",
            "mdt_index_clean",
            partition_fields=(ht.PARTITION_FIELD,),
            extra_opts={**MDT_INDEXES, **extra},
        )
    [clean_file] = sorted((base_path / ".hoodie").glob("*.clean"))
    clean = decode_avro(CleanMetadata, clean_file.read_bytes(), str(clean_file))
    clean_instant = clean_file.name.removesuffix(".clean")
    deleted = [
        (p, name) for p, meta in clean.partition_metadata.items() for name in meta.delete_path_patterns
    ]
    assert deleted
    latest_commit = sorted((base_path / ".hoodie").glob("*.commit"))[-1]
    schema = json.loads(json.loads(latest_commit.read_text())["extraMetadata"]["schema"])
    columns = columns_to_index([], [f["name"] for f in schema["fields"]], populate_meta_fields=True)

    blooms = HudiRecords(base_path, BLOOM_FILTERS_PARTITION, repeats=True)
    stats = HudiRecords(base_path, COLUMN_STATS_PARTITION, repeats=True)
    checked = 0
    for partition, name in deleted:
        tomb = bloom_filter_deletion(partition, name, clean_instant)
        assert tomb is not None
        expected = [tomb, *column_stats_deletions(partition, name, columns)]
        for ours, hudi in zip(expected, [blooms] + [stats] * len(columns), strict=True):
            fid, theirs, value = hudi.records[ours.key]
            assert fid == hudi.file_ids[file_group_index(ours.key, len(hudi.file_ids))]
            assert theirs == ours, ours.key
            if value is not None:
                assert encode_index_record(ours) == value
                checked += 1
    assert checked == len(deleted) * (1 + len(columns))  # the clean's records are in log blocks
    for partition, name in deleted:
        live = stats.records[column_stats_key(partition, name, "id")][1].payload
        assert isinstance(live, ColumnStats) and not live.is_deleted
