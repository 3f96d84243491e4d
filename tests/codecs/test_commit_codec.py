"""JSON commit metadata: Jackson layout, lenient reading, helpers."""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from hypothesis import given, settings

from service.errors import CorruptTableError
from service.table import codecs
from service.table.codecs import CommitMetadata, ReplaceCommitMetadata, WriteOperationType, WriteStat
from tests.codecs.strategies import models, write_stats

TABLE_SCHEMA = (
    '{"type":"record","name":"trips_record","namespace":"hoodie.trips","fields":[{"name":"id","type":"int"}]}'
)

# A clustering replacecommit laid out as Jackson's default pretty printer writes it.
CLUSTERING_COMMIT = """{
  "partitionToWriteStats" : {
    "30" : [ {
      "fileId" : "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0",
      "path" : "30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet",
      "cdcStats" : null,
      "prevCommit" : "null",
      "numWrites" : 1,
      "numDeletes" : 0,
      "numUpdateWrites" : 0,
      "numInserts" : 1,
      "totalWriteBytes" : 441392,
      "totalWriteErrors" : 0,
      "tempPath" : null,
      "partitionPath" : "30",
      "totalLogRecords" : 0,
      "totalLogFilesCompacted" : 0,
      "totalLogSizeCompacted" : 0,
      "totalUpdatedRecordsCompacted" : 0,
      "totalLogBlocks" : 0,
      "totalCorruptLogBlock" : 0,
      "totalRollbackBlocks" : 0,
      "fileSizeInBytes" : 441392,
      "minEventTime" : null,
      "maxEventTime" : null,
      "runtimeStats" : {
        "totalScanTime" : 0,
        "totalUpsertTime" : 0,
        "totalCreateTime" : 83
      }
    } ]
  },
  "compacted" : false,
  "extraMetadata" : {
    "schema" : SCHEMA_STRING
  },
  "operationType" : "CLUSTER",
  "partitionToReplaceFileIds" : {
    "30" : [ "d398fae1-0000-0000-0000-000000000000-0", "88163884-0000-0000-0000-000000000000-0" ],
    "20" : [ ]
  }
}""".replace("SCHEMA_STRING", json.dumps(TABLE_SCHEMA))  # a JSON string: quotes escaped, as Jackson does

# A MOR delta write stat: HoodieDeltaWriteStat's fields follow the base ones.
DELTA_COMMIT = """{
  "partitionToWriteStats" : {
    "" : [ {
      "fileId" : "f1-0",
      "path" : ".f1-0_20240101000000000.log.1_0-10-20",
      "prevCommit" : "20240101000000000",
      "numWrites" : 3,
      "numUpdateWrites" : 3,
      "partitionPath" : "",
      "runtimeStats" : { "totalUpsertTime" : 12 },
      "logVersion" : 1,
      "logOffset" : 0,
      "baseFile" : "f1-0_0-1-2_20240101000000000.parquet",
      "logFiles" : [ ".f1-0_20240101000000000.log.1_0-10-20" ],
      "recordsStats" : { "val" : null }
    } ]
  },
  "compacted" : false,
  "extraMetadata" : { },
  "operationType" : "UPSERT",
  "someFutureField" : { "x" : 1 }
}"""


def _clustering_commit() -> ReplaceCommitMetadata:
    stat = WriteStat(
        file_id="ebcb261d-62d3-4895-90ec-5b3c9622dff4-0",
        path="30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet",
        num_writes=1,
        num_inserts=1,
        total_write_bytes=441392,
        partition_path="30",
        file_size_in_bytes=441392,
        runtime_stats=codecs.RuntimeStats(total_create_time=83),
    )
    return ReplaceCommitMetadata(
        partition_to_write_stats={"30": (stat,)},
        extra_metadata={"schema": TABLE_SCHEMA},
        operation_type=WriteOperationType.CLUSTER,
        partition_to_replace_file_ids={
            "30": ("d398fae1-0000-0000-0000-000000000000-0", "88163884-0000-0000-0000-000000000000-0"),
            "20": (),
        },
    )


def test_commit_codec_writes_jackson_layout() -> None:
    assert codecs.encode(_clustering_commit()).decode("utf-8") == CLUSTERING_COMMIT


def test_commit_codec_reads_jackson_layout() -> None:
    assert (
        codecs.decode(ReplaceCommitMetadata, CLUSTERING_COMMIT.encode(), "t.replacecommit")
        == _clustering_commit()
    )


def test_commit_codec_round_trips_replace_commit_metadata_as_avro() -> None:
    """Layout 2's replacecommit: `HoodieReplaceCommitMetadata` with its file groups replaced."""
    data = codecs.encode_commit(_clustering_commit(), avro=True)
    [record] = fastavro.reader(io.BytesIO(data))
    assert record["partitionToReplaceFileIds"] == {
        "30": ["d398fae1-0000-0000-0000-000000000000-0", "88163884-0000-0000-0000-000000000000-0"],
        "20": [],
    }
    decoded = codecs.decode(ReplaceCommitMetadata, data, "t_u.replacecommit", avro_commit=True)
    # Avro gives every field of its schema (the stat fields the JSON leaves out come back as nulls).
    assert decoded.partition_to_replace_file_ids == _clustering_commit().partition_to_replace_file_ids
    assert decoded.operation_type is WriteOperationType.CLUSTER
    [again] = fastavro.reader(io.BytesIO(codecs.encode_commit(decoded, avro=True)))
    assert again == record


def test_commit_codec_new_file_group_has_null_string_prev_commit() -> None:
    assert WriteStat().prev_commit == "null" == codecs.NULL_COMMIT


def test_commit_codec_plain_commit_has_no_replace_field() -> None:
    text = codecs.encode(CommitMetadata(operation_type=WriteOperationType.UPSERT)).decode()
    assert (
        text == '{\n  "partitionToWriteStats" : { },\n  "compacted" : false,\n  "extraMetadata" : { },\n'
        '  "operationType" : "UPSERT"\n}'
    )


@settings(max_examples=150, deadline=None)
@given(models(CommitMetadata))
def test_commit_codec_round_trips_commit_metadata(metadata: CommitMetadata) -> None:
    assert codecs.decode(CommitMetadata, codecs.encode(metadata), "t.commit") == metadata


@settings(max_examples=150, deadline=None)
@given(models(ReplaceCommitMetadata))
def test_commit_codec_round_trips_replace_commit_metadata(metadata: ReplaceCommitMetadata) -> None:
    data = codecs.encode(metadata)
    assert codecs.decode(ReplaceCommitMetadata, data, "t.replacecommit") == metadata
    json.loads(data)  # always valid JSON


@settings(max_examples=100, deadline=None)
@given(write_stats(with_other_fields=True))
def test_commit_codec_round_trips_delta_stat_fields(stat: WriteStat) -> None:
    metadata = CommitMetadata(partition_to_write_stats={"p": (stat,)})
    assert codecs.decode(CommitMetadata, codecs.encode(metadata), "t.deltacommit") == metadata


def test_commit_codec_keeps_delta_stat_fields_after_base_fields() -> None:
    metadata = codecs.decode(CommitMetadata, DELTA_COMMIT.encode(), "t.deltacommit")
    (stat,) = metadata.partition_to_write_stats[""]
    assert list(stat.other_fields) == ["logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"]
    assert stat.other_fields["logFiles"] == [".f1-0_20240101000000000.log.1_0-10-20"]
    keys = list(json.loads(codecs.encode(metadata))["partitionToWriteStats"][""][0])
    assert keys[-6:] == ["runtimeStats", "logVersion", "logOffset", "baseFile", "logFiles", "recordsStats"]


def test_commit_codec_reads_missing_longs_as_zero_and_missing_strings_as_null() -> None:
    metadata = codecs.decode(CommitMetadata, DELTA_COMMIT.encode(), "t.deltacommit")
    (stat,) = metadata.partition_to_write_stats[""]
    assert (stat.num_writes, stat.num_update_writes, stat.num_inserts, stat.total_write_bytes) == (3, 3, 0, 0)
    assert stat.temp_path is None and stat.cdc_stats is None and stat.min_event_time is None
    assert stat.runtime_stats == codecs.RuntimeStats(total_upsert_time=12)
    assert metadata.operation_type is WriteOperationType.UPSERT


def test_commit_codec_reads_null_longs_as_zero() -> None:
    text = (
        '{"partitionToWriteStats": {"p": [{"fileId": "f", "numWrites": null, "prevCommit": null,'
        ' "minEventTime": null, "totalWriteBytes": "12"}]}}'
    )
    (stat,) = codecs.decode(CommitMetadata, text.encode(), "t.commit").partition_to_write_stats["p"]
    assert stat.num_writes == 0 and stat.prev_commit is None and stat.min_event_time is None
    assert stat.total_write_bytes == 12


def test_commit_codec_reads_inflight_workload_profile() -> None:
    text = """{
  "partitionToWriteStats" : { "2024/01/01" : [ { "fileId" : "", "path" : null, "prevCommit" : "null",
    "numInserts" : 10, "numUpdateWrites" : 0, "partitionPath" : null, "runtimeStats" : null } ] },
  "compacted" : false, "extraMetadata" : { }, "operationType" : "INSERT" }"""
    metadata = codecs.decode(CommitMetadata, text.encode(), "t.inflight")
    (stat,) = metadata.partition_to_write_stats["2024/01/01"]
    assert stat.path is None and stat.runtime_stats is None and stat.num_inserts == 10
    assert metadata.written_file_groups() == {("2024/01/01", "")}


def test_commit_codec_empty_file_is_empty_metadata() -> None:
    assert codecs.decode(CommitMetadata, b"", "t.commit") == CommitMetadata()
    replace = codecs.decode(ReplaceCommitMetadata, b"", "t.replacecommit.inflight")
    assert replace == ReplaceCommitMetadata()
    assert replace.operation_type is WriteOperationType.UNKNOWN
    assert replace.touched_file_groups() == frozenset()


def test_commit_codec_ignores_unknown_top_level_fields() -> None:
    metadata = codecs.decode(CommitMetadata, DELTA_COMMIT.encode(), "t.deltacommit")
    assert "someFutureField" not in codecs.encode(metadata).decode()


def test_commit_codec_plain_commit_reader_ignores_replace_field() -> None:
    metadata = codecs.decode(CommitMetadata, CLUSTERING_COMMIT.encode(), "t.replacecommit")
    assert type(metadata) is CommitMetadata
    assert metadata.touched_file_groups() == {("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0")}


def test_commit_codec_nulls_read_as_java_defaults() -> None:
    text = '{"partitionToWriteStats": null, "compacted": null, "extraMetadata": null, "operationType": null}'
    assert codecs.decode(CommitMetadata, text.encode(), "t.commit") == CommitMetadata()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"operationType": "CLUSTERING"}', "operationType"),
        ('{"operationType": "cluster"}', "operationType"),
        ('{"partitionToWriteStats": []}', "partitionToWriteStats"),
        ('{"partitionToWriteStats": {"p": [{"numWrites": "many"}]}}', "numWrites"),
        ('{"partitionToWriteStats": {"p": [{"numWrites": 9223372036854775808}]}}', "p"),
        ('{"compacted": "yes"}', "compacted"),
        ('{"partitionToReplaceFileIds": {"p": [1]}}', "partitionToReplaceFileIds"),
        ("[]", "root"),
        ("{", "not JSON"),
        ("   ", "not JSON"),
    ],
)
def test_commit_codec_rejects_what_jackson_rejects(text: str, field: str) -> None:
    with pytest.raises(CorruptTableError, match=r"\.hoodie/1\.replacecommit") as err:
        codecs.decode(ReplaceCommitMetadata, text.encode(), ".hoodie/1.replacecommit")
    assert field in str(err.value)


def test_commit_codec_rejects_non_utf8() -> None:
    with pytest.raises(CorruptTableError, match=r"t\.commit"):
        codecs.decode(CommitMetadata, b'{"extraMetadata": {"a": "\xff"}}', "t.commit")


def test_commit_metadata_touched_file_groups_include_replaced_groups() -> None:
    assert _clustering_commit().touched_file_groups() == {
        ("30", "ebcb261d-62d3-4895-90ec-5b3c9622dff4-0"),
        ("30", "d398fae1-0000-0000-0000-000000000000-0"),
        ("30", "88163884-0000-0000-0000-000000000000-0"),
    }
    assert _clustering_commit().replaced_file_groups() == {
        ("30", "d398fae1-0000-0000-0000-000000000000-0"),
        ("30", "88163884-0000-0000-0000-000000000000-0"),
    }


def test_commit_metadata_table_schema_from_extra_metadata() -> None:
    assert _clustering_commit().table_schema == TABLE_SCHEMA
    assert CommitMetadata(extra_metadata={"schema": ""}).table_schema is None
    assert CommitMetadata().table_schema is None


def test_commit_metadata_write_stats_flattens_partitions() -> None:
    a, b = WriteStat(file_id="a"), WriteStat(file_id="b")
    metadata = CommitMetadata(partition_to_write_stats={"p": (a,), "q": (b,)})
    assert metadata.write_stats == (a, b)
