"""Avro timeline files: round trips, schema resolution, empty and corrupt files."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from pydantic import BaseModel

from service.errors import CorruptTableError
from service.table import codecs
from service.table.codecs.avro_file import AvroRootModel, schema_json
from tests.codecs.strategies import lists_to_plain, models

ROOTS: list[type[AvroRootModel]] = [
    codecs.RequestedReplaceMetadata,
    codecs.CleanerPlan,
    codecs.CleanMetadata,
    codecs.RollbackPlan,
    codecs.RollbackMetadata,
    codecs.SavepointMetadata,
    codecs.CompactionPlan,
]

# Every named record of our schemas and the model that carries it.
RECORD_MODELS: dict[str, type[BaseModel]] = {
    "HoodieRequestedReplaceMetadata": codecs.RequestedReplaceMetadata,
    "HoodieClusteringPlan": codecs.ClusteringPlan,
    "HoodieClusteringGroup": codecs.ClusteringGroup,
    "HoodieSliceInfo": codecs.SliceInfo,
    "HoodieClusteringStrategy": codecs.ClusteringStrategy,
    "HoodieCleanerPlan": codecs.CleanerPlan,
    "HoodieActionInstant": codecs.ActionInstant,
    "HoodieCleanFileInfo": codecs.CleanFileInfo,
    "HoodieCleanMetadata": codecs.CleanMetadata,
    "HoodieCleanPartitionMetadata": codecs.CleanPartitionMetadata,
    "HoodieRollbackPlan": codecs.RollbackPlan,
    "HoodieRollbackRequest": codecs.RollbackRequest,
    "HoodieInstantInfo": codecs.InstantInfo,
    "HoodieRollbackMetadata": codecs.RollbackMetadata,
    "HoodieRollbackPartitionMetadata": codecs.RollbackPartitionMetadata,
    "HoodieSavepointMetadata": codecs.SavepointMetadata,
    "HoodieSavepointPartitionMetadata": codecs.SavepointPartitionMetadata,
    "HoodieCompactionPlan": codecs.CompactionPlan,
    "HoodieCompactionOperation": codecs.CompactionOperation,
    "HoodieCompactionStrategy": codecs.CompactionStrategy,
}


def _records(schema: Any) -> list[dict[str, Any]]:
    """Every record definition inside a schema (named references are not followed)."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, list):
        for branch in schema:
            found += _records(branch)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            found.append(schema)
            for field in schema["fields"]:
                found += _records(field["type"])
        else:
            found += _records(schema.get("items")) + _records(schema.get("values"))
    return found


def _plan_with_extra_field(schema: dict[str, Any]) -> dict[str, Any]:
    """Our schema plus a trailing optional field, as Hudi 0.15 adds extraMetadata."""
    newer = json.loads(json.dumps(schema))
    newer["fields"].append(
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None}
    )
    return newer


def _write(schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema, named_schemas={}), [record], codec="null")
    return buf.getvalue()


@pytest.mark.parametrize("model_type", ROOTS, ids=lambda m: m.AVRO_NAME)
def test_avro_codec_round_trips_every_structure(model_type: type[AvroRootModel]) -> None:
    @settings(max_examples=60, deadline=None)
    @given(models(model_type))
    def check(model: AvroRootModel) -> None:
        data = codecs.encode(model)
        assert data[:4] == b"Obj\x01"
        assert codecs.decode(model_type, data, "t.file") == model

    check()


@pytest.mark.parametrize("model_type", ROOTS, ids=lambda m: m.AVRO_NAME)
def test_avro_codec_writes_one_record_codec_null_with_full_schema(model_type: type[AvroRootModel]) -> None:
    model = _example(model_type)
    reader = fastavro.reader(io.BytesIO(codecs.encode(model)))
    records = list(reader)
    assert len(records) == 1
    assert reader.metadata.get("avro.codec", "null") == "null"
    embedded = json.loads(reader.metadata["avro.schema"])
    assert embedded["name"] == f"org.apache.hudi.avro.model.{model_type.AVRO_NAME}"
    assert [r["name"].split(".")[-1] for r in _records(embedded)] == [
        r["name"] for r in _records(schema_json(model_type.AVRO_NAME))
    ]
    assert records[0] == lists_to_plain(model.model_dump(by_alias=True))


@pytest.mark.parametrize("avro_name", RECORD_MODELS)
def test_avro_models_follow_schema_field_order_and_names(avro_name: str) -> None:
    definitions = {r["name"]: r for root in ROOTS for r in _records(schema_json(root.AVRO_NAME))}
    aliases = [info.serialization_alias for info in RECORD_MODELS[avro_name].model_fields.values()]
    assert aliases == [f["name"] for f in definitions[avro_name]["fields"]]


def test_avro_models_cover_every_record_of_our_schemas() -> None:
    names = {r["name"] for root in ROOTS for r in _records(schema_json(root.AVRO_NAME))}
    assert names == set(RECORD_MODELS)


def test_avro_schemas_use_hudi_namespace_and_version_unions() -> None:
    for root in ROOTS:
        schema = schema_json(root.AVRO_NAME)
        assert schema["namespace"] == "org.apache.hudi.avro.model"
        for record in _records(schema):
            for field in record["fields"]:
                if field["name"] == "version":
                    assert field["type"] == ["int", "null"] and field["default"] == 1


def test_rollback_plan_keeps_capital_r_on_disk() -> None:
    plan = codecs.RollbackPlan(
        instant_to_rollback=codecs.InstantInfo(commit_time="20240101000000000", action="commit"),
        rollback_requests=(
            codecs.RollbackRequest(partition_path="p", file_id="f-0", files_to_be_deleted=("a",)),
        ),
    )
    record = next(iter(fastavro.reader(io.BytesIO(codecs.encode(plan)))))
    assert isinstance(record, dict)
    assert record["RollbackRequests"] == [
        {
            "partitionPath": "p",
            "fileId": "f-0",
            "latestBaseInstant": None,
            "filesToBeDeleted": ["a"],
            "logBlocksToBeDeleted": None,
        }
    ]


def test_decode_reads_files_with_newer_optional_fields() -> None:
    schema = _plan_with_extra_field(schema_json("HoodieCleanerPlan"))
    record = {
        "earliestInstantToRetain": {
            "timestamp": "20240101000000000",
            "action": "commit",
            "state": "COMPLETED",
        },
        "lastCompletedCommitTimestamp": "20240102000000000",
        "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {},
        "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "p": [{"filePath": "file:/t/p/a.parquet", "isBootstrapBaseFile": False}]
        },
        "partitionsToBeDeleted": [],
        "extraMetadata": {"savepointed_timestamps": "20231231000000000"},
    }
    plan = codecs.decode(codecs.CleanerPlan, _write(schema, record), "t.clean.requested")
    assert plan.file_paths_to_be_deleted_per_partition == {
        "p": (codecs.CleanFileInfo(file_path="file:/t/p/a.parquet", is_bootstrap_base_file=False),)
    }
    assert plan.version == 2
    assert plan.earliest_instant_to_retain == codecs.ActionInstant(
        timestamp="20240101000000000", action="commit", state="COMPLETED"
    )


def test_decode_fills_avro_defaults_for_fields_an_older_writer_omitted() -> None:
    schema = json.loads(json.dumps(schema_json("HoodieSavepointMetadata")))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "version"]
    data = _write(
        schema, {"savepointedBy": "me", "savepointedAt": 5, "comments": "", "partitionMetadata": {}}
    )
    assert codecs.decode(codecs.SavepointMetadata, data, "t.savepoint").version == 1


def test_decode_rejects_file_missing_a_required_field() -> None:
    schema = json.loads(json.dumps(schema_json("HoodieSavepointMetadata")))
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "comments"]
    data = _write(schema, {"savepointedBy": "me", "savepointedAt": 5, "partitionMetadata": {}, "version": 1})
    with pytest.raises(CorruptTableError, match=r"t\.savepoint"):
        codecs.decode(codecs.SavepointMetadata, data, ".hoodie/t.savepoint")


def test_decode_empty_requested_replace_is_no_plan() -> None:
    metadata = codecs.decode(codecs.RequestedReplaceMetadata, b"", "1.replacecommit.requested")
    assert metadata.clustering_plan is None
    assert metadata.operation_type is None
    assert not metadata.is_clustering


def test_decode_all_null_requested_replace_as_insert_overwrite_writes_it() -> None:
    empty = codecs.RequestedReplaceMetadata(
        operation_type=None, clustering_plan=None, extra_metadata=None, version=None
    )
    decoded = codecs.decode(
        codecs.RequestedReplaceMetadata, codecs.encode(empty), "1.replacecommit.requested"
    )
    assert decoded == empty
    assert not decoded.is_clustering


def test_requested_replace_is_clustering_keys_on_operation_type() -> None:
    plan = codecs.ClusteringPlan(input_groups=(), preserve_hoodie_metadata=True)
    assert codecs.RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=plan).is_clustering
    assert not codecs.RequestedReplaceMetadata(
        operation_type="INSERT_OVERWRITE", clustering_plan=plan
    ).is_clustering


@pytest.mark.parametrize(
    "model_type", [m for m in ROOTS if m is not codecs.RequestedReplaceMetadata], ids=lambda m: m.AVRO_NAME
)
def test_decode_empty_file_is_corrupt_for_other_records(model_type: type[AvroRootModel]) -> None:
    with pytest.raises(CorruptTableError, match=r"\.hoodie/0001\.x"):
        codecs.decode(model_type, b"", ".hoodie/0001.x")


@pytest.mark.parametrize(
    "data",
    [b"garbage", b"Obj\x01", b'{"partitionToWriteStats": {}}'],
    ids=["text", "truncated-header", "json"],
)
def test_decode_undecodable_bytes_raise_corrupt_naming_file(data: bytes) -> None:
    with pytest.raises(CorruptTableError, match=r"\.hoodie/20240101000000000\.clean"):
        codecs.decode(codecs.CleanMetadata, data, ".hoodie/20240101000000000.clean")


def test_decode_truncated_container_raises_corrupt() -> None:
    data = codecs.encode(_example(codecs.CleanMetadata))
    with pytest.raises(CorruptTableError, match=r"t\.clean"):
        codecs.decode(codecs.CleanMetadata, data[: len(data) - 20], "t.clean")


def test_decode_other_record_type_raises_corrupt() -> None:
    data = codecs.encode(_example(codecs.SavepointMetadata))
    with pytest.raises(CorruptTableError, match=r"t\.clean"):
        codecs.decode(codecs.CleanMetadata, data, "t.clean")


def test_encode_rejects_out_of_range_int() -> None:
    with pytest.raises(ValueError):
        codecs.CleanMetadata(
            start_clean_time="1",
            time_taken_in_millis=1,
            total_files_deleted=2**31,
            earliest_commit_to_retain="",
            partition_metadata={},
        )


def test_clean_models_default_to_the_version_java_writes() -> None:
    assert codecs.CleanerPlan(policy="KEEP_LATEST_COMMITS").version == 2
    metadata = codecs.CleanMetadata(
        start_clean_time="1",
        time_taken_in_millis=1,
        total_files_deleted=0,
        earliest_commit_to_retain="",
        partition_metadata={},
    )
    assert metadata.version == 2


def _example(model_type: type[AvroRootModel]) -> Any:
    examples: dict[type[AvroRootModel], AvroRootModel] = {
        codecs.CleanMetadata: codecs.CleanMetadata(
            start_clean_time="20240101000000000",
            time_taken_in_millis=12,
            total_files_deleted=1,
            earliest_commit_to_retain="20231231000000000",
            last_completed_commit_timestamp="20231231100000000",
            partition_metadata={
                "p": codecs.CleanPartitionMetadata(
                    partition_path="p",
                    policy="KEEP_LATEST_COMMITS",
                    delete_path_patterns=("a.parquet",),
                    success_delete_files=("a.parquet",),
                    failed_delete_files=(),
                    is_partition_deleted=False,
                )
            },
            bootstrap_partition_metadata={},
        ),
        codecs.SavepointMetadata: codecs.SavepointMetadata(
            savepointed_by="me",
            savepointed_at=1,
            comments="c",
            partition_metadata={
                "p": codecs.SavepointPartitionMetadata(partition_path="p", savepoint_data_file=("a",))
            },
        ),
    }
    return examples.get(model_type) or _minimal(model_type)


def _minimal(model_type: type[AvroRootModel]) -> AvroRootModel:
    from tests.codecs.strategies import collect

    return collect(models(model_type), 1)[0]
