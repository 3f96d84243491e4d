"""Our codecs against Hudi 0.15's own Java code: compiled schemas, deserializers and serializers.

Each direction runs one JVM over a directory of files (tests/support/java/HudiTimelineDecode.java).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from service.table import codecs
from service.table.codecs.avro_file import AvroRootModel, schema_json
from tests.codecs.strategies import collect, lists_to_plain, models, write_stats
from tests.support.jvm import run_java

pytestmark = pytest.mark.hudi

EXAMPLES_PER_KIND = 25
SCHEMA_DIR = Path(codecs.__file__).parent / "schemas"

AVRO_KINDS: dict[str, type[AvroRootModel]] = {
    m.AVRO_NAME: m
    for m in (
        codecs.RequestedReplaceMetadata,
        codecs.CleanerPlan,
        codecs.CleanMetadata,
        codecs.RollbackPlan,
        codecs.RollbackMetadata,
        codecs.SavepointMetadata,
        codecs.CompactionPlan,
    )
}
JSON_KINDS: dict[str, type[codecs.CommitMetadata]] = {
    "HoodieCommitMetadata": codecs.CommitMetadata,
    "HoodieReplaceCommitMetadata": codecs.ReplaceCommitMetadata,
}
# Optional fields Hudi 0.15 has beyond 0.14.1 (HUDI-7104); our schemas follow 0.14.1.
ADDED_IN_0_15 = {
    "org.apache.hudi.avro.model.HoodieCleanerPlan": ["extraMetadata"],
    "org.apache.hudi.avro.model.HoodieCleanMetadata": ["extraMetadata"],
}
# Our schema files are Hudi 1.x's where 1.x added fields; the version-6 writes use 0.15's beside them.
V6_SCHEMA_FILES = {
    "HoodieCompactionPlan": codecs.COMPACTION_PLAN_SCHEMA_0_15,
    "HoodieRequestedReplaceMetadata": codecs.REQUESTED_REPLACE_SCHEMA_0_15,
}


def v6_schema(avro_name: str) -> dict[str, Any]:
    """The schema version-6 tables get their `avro_name` files written in (and Hudi 0.15 reads)."""
    return schema_json(V6_SCHEMA_FILES.get(avro_name, avro_name))


SCHEMA_RECORDS = {
    "HoodieRequestedReplaceMetadata": [
        "HoodieClusteringPlan",
        "HoodieClusteringGroup",
        "HoodieSliceInfo",
        "HoodieClusteringStrategy",
    ],
    "HoodieCleanerPlan": ["HoodieActionInstant", "HoodieCleanFileInfo"],
    "HoodieCleanMetadata": ["HoodieCleanPartitionMetadata"],
    "HoodieRollbackPlan": ["HoodieRollbackRequest", "HoodieInstantInfo"],
    "HoodieRollbackMetadata": ["HoodieRollbackPartitionMetadata", "HoodieInstantInfo"],
    "HoodieSavepointMetadata": ["HoodieSavepointPartitionMetadata"],
    "HoodieCompactionPlan": ["HoodieCompactionOperation", "HoodieCompactionStrategy"],
}


# -- schema comparison


def normalize(schema: Any, namespace: str | None = None, named: dict[str, Any] | None = None) -> Any:
    """Only what Avro resolution looks at: types, full names, field names/order/defaults.

    Named references are expanded, so definition placement does not matter; docs and properties such as
    "avro.java.string" are dropped.
    """
    named = {} if named is None else named
    if isinstance(schema, list):
        return [normalize(branch, namespace, named) for branch in schema]
    if isinstance(schema, str):
        if schema in {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}:
            return schema
        full = schema if "." in schema else f"{namespace}.{schema}"
        return named[full]
    kind = schema["type"]
    if kind in ("record", "enum", "fixed"):
        space = schema.get("namespace", namespace)
        full = schema["name"] if "." in schema["name"] else f"{space}.{schema['name']}"
        space = full.rsplit(".", 1)[0]
        result: dict[str, Any] = {"type": kind, "name": full}
        named[full] = result
        if kind == "record":
            result["fields"] = []
            for field in schema["fields"]:
                entry = {"name": field["name"], "type": normalize(field["type"], space, named)}
                if "default" in field:
                    entry["default"] = field["default"]
                result["fields"].append(entry)
        elif kind == "enum":
            result["symbols"] = schema["symbols"]
        else:
            result["size"] = schema["size"]
        return result
    if kind == "array":
        return {"type": "array", "items": normalize(schema["items"], namespace, named)}
    if kind == "map":
        return {"type": "map", "values": normalize(schema["values"], namespace, named)}
    return normalize(kind, namespace, named)  # {"type": "string", ...props}


def without_0_15_fields(schema: dict[str, Any]) -> dict[str, Any]:
    extra = ADDED_IN_0_15.get(schema["name"], [])
    fields = schema["fields"]
    if extra:
        tail = fields[-len(extra) :]
        assert [f["name"] for f in tail] == extra, "0.15 additions must be trailing fields"
        assert all("default" in f and f["default"] is None for f in tail), "0.15 additions must be optional"
        fields = fields[: -len(extra)]
    return {**schema, "fields": fields}


def find_record(schema: Any, full_name: str) -> Any:
    if isinstance(schema, dict):
        if schema.get("name") == full_name:
            return schema
        children = [f["type"] for f in schema.get("fields", [])] + [schema.get("items"), schema.get("values")]
        schema = children
    if isinstance(schema, list):
        for child in schema:
            found = find_record(child, full_name)
            if found is not None:
                return found
    return None


@pytest.fixture(scope="module")
def hudi_schemas() -> dict[str, Any]:
    names = [*SCHEMA_RECORDS, *{n for nested in SCHEMA_RECORDS.values() for n in nested}]
    lines = run_java("HudiAvroSchemas", *names).stdout.splitlines()
    return dict(zip(names, (json.loads(line) for line in lines), strict=True))


@pytest.mark.parametrize("avro_name", SCHEMA_RECORDS)
def test_hudi_schema_matches_ours_field_for_field(avro_name: str, hudi_schemas: dict[str, Any]) -> None:
    ours = normalize(v6_schema(avro_name))
    theirs = without_0_15_fields(normalize(hudi_schemas[avro_name]))
    assert ours == theirs


@pytest.mark.parametrize("avro_name", sorted({n for nested in SCHEMA_RECORDS.values() for n in nested}))
def test_hudi_schema_of_nested_record_matches_ours(avro_name: str, hudi_schemas: dict[str, Any]) -> None:
    full = f"org.apache.hudi.avro.model.{avro_name}"
    root = next(r for r, nested in SCHEMA_RECORDS.items() if avro_name in nested)
    assert find_record(normalize(v6_schema(root)), full) == normalize(hudi_schemas[avro_name])


def test_hudi_0_15_additions_are_the_only_differences(hudi_schemas: dict[str, Any]) -> None:
    for full, fields in ADDED_IN_0_15.items():
        name = full.rsplit(".", 1)[1]
        theirs = normalize(hudi_schemas[name])
        assert [f["name"] for f in theirs["fields"]][-len(fields) :] == fields
        assert normalize(schema_json(name)) != theirs


# -- Hudi's deserializers read our bytes


def _ours(model: Any) -> Any:
    return lists_to_plain(model.model_dump(by_alias=True))


def without_1x_fields(model: Any) -> Any:
    """`model` with the fields Hudi 1.x added (`missingSchedulePartitions`) unset: Hudi 0.15's classes,
    which these tests run, neither write nor keep them."""
    if isinstance(model, codecs.CompactionPlan):
        return model.model_copy(update={"missing_schedule_partitions": None})
    if isinstance(model, codecs.RequestedReplaceMetadata) and model.clustering_plan is not None:
        plan = model.clustering_plan.model_copy(update={"missing_schedule_partitions": None})
        return model.model_copy(update={"clustering_plan": plan})
    return model


def _realistic_examples() -> dict[str, list[Any]]:
    """Shapes Java itself writes, on top of the random ones."""
    slice_info = codecs.SliceInfo(
        data_file_path="file:/tmp/t/p1/f1-0_0-1-2_20240101000000000.parquet",
        delta_file_paths=(),
        file_id="f1-0",
        partition_path="p1",
        bootstrap_file_path="",
    )
    plan = codecs.ClusteringPlan(
        input_groups=(
            codecs.ClusteringGroup(
                slices=(slice_info,), metrics={"TOTAL_IO_MB": 2.5}, num_output_file_groups=1
            ),
        ),
        strategy=codecs.ClusteringStrategy(
            strategy_class_name="org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy",
            strategy_params={},
        ),
        extra_metadata={},
        preserve_hoodie_metadata=True,
    )
    return {
        "HoodieRequestedReplaceMetadata": [
            codecs.RequestedReplaceMetadata(
                operation_type="CLUSTER", clustering_plan=plan, extra_metadata={}
            ),
            codecs.RequestedReplaceMetadata(
                operation_type=None, clustering_plan=None, extra_metadata=None, version=None
            ),
        ],
        "HoodieCleanerPlan": [
            codecs.CleanerPlan(
                earliest_instant_to_retain=codecs.ActionInstant(
                    timestamp="20240101000000000", action="commit", state="COMPLETED"
                ),
                last_completed_commit_timestamp="20240102000000000",
                policy="KEEP_LATEST_COMMITS",
                files_to_be_deleted_per_partition={},
                file_paths_to_be_deleted_per_partition={
                    "p1": (
                        codecs.CleanFileInfo(
                            file_path="file:/tmp/t/p1/a.parquet", is_bootstrap_base_file=False
                        ),
                    )
                },
                partitions_to_be_deleted=(),
            )
        ],
    }


@pytest.fixture(scope="module")
def java_decoded(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any, bytes, Path]]:
    """(kind, model, our bytes, Java's output path without suffix) for every file Java decoded."""
    directory = tmp_path_factory.mktemp("java-decode")
    cases: list[tuple[str, Any, bytes, Path]] = []
    realistic = _realistic_examples()
    kinds: dict[str, type[Any]] = {**AVRO_KINDS, **JSON_KINDS}
    for kind, model_type in kinds.items():
        examples = realistic.get(kind, []) + collect(models(model_type), EXAMPLES_PER_KIND)
        for i, model in enumerate(without_1x_fields(m) for m in examples):
            data = codecs.encode(model, V6_SCHEMA_FILES.get(kind))
            stem = directory / f"{i:03d}.{kind}"
            stem.with_name(stem.name + ".bin").write_bytes(data)
            cases.append((kind, model, data, stem))
    # A delta commit whose stats carry HoodieDeltaWriteStat fields: Java must skip them.
    delta = codecs.CommitMetadata(partition_to_write_stats={"p": tuple(collect(write_stats(True), 5))})
    stem = directory / "900.HoodieCommitMetadata"
    stem.with_name(stem.name + ".bin").write_bytes(codecs.encode(delta))
    cases.append(("HoodieCommitMetadata", delta, codecs.encode(delta), stem))
    run_java("HudiTimelineDecode", "decode", str(directory))
    return cases


def _java_output(stem: Path) -> str:
    err = stem.with_name(stem.name + ".err")
    assert not err.exists(), err.read_text()
    return stem.with_name(stem.name + ".out").read_text("utf-8")


@pytest.mark.parametrize("kind", AVRO_KINDS)
def test_hudi_deserializers_read_our_avro_files(
    kind: str, java_decoded: list[tuple[str, Any, bytes, Path]]
) -> None:
    cases = [c for c in java_decoded if c[0] == kind]
    assert len(cases) >= EXAMPLES_PER_KIND
    for _, model, _, stem in cases:
        decoded = json.loads(_java_output(stem))
        for field in ADDED_IN_0_15.get(f"org.apache.hudi.avro.model.{kind}", []):
            assert decoded.pop(field) is None
        ours = _ours(model)
        # Hudi 0.15's classes have no `missingSchedulePartitions` (Hudi 1.x's; unset in these models).
        for record in (ours, ours.get("clusteringPlan") or {}):
            assert record.pop("missingSchedulePartitions", None) is None
        assert decoded == ours, stem.name


@pytest.mark.parametrize("kind", JSON_KINDS)
def test_hudi_reads_our_commit_json_and_writes_it_back_byte_for_byte(
    kind: str, java_decoded: list[tuple[str, Any, bytes, Path]]
) -> None:
    cases = [c for c in java_decoded if c[0] == kind and not any(s.other_fields for s in c[1].write_stats)]
    assert len(cases) >= EXAMPLES_PER_KIND
    for _, _, data, stem in cases:
        assert _java_output(stem) == data.decode("utf-8"), stem.name


def test_hudi_reads_commit_json_with_delta_stat_fields(
    java_decoded: list[tuple[str, Any, bytes, Path]],
) -> None:
    ((_, model, _, stem),) = [c for c in java_decoded if c[3].name.startswith("900.")]
    assert any(s.other_fields for s in model.write_stats)
    without_extras = model.model_copy(
        update={
            "partition_to_write_stats": {
                p: tuple(s.model_copy(update={"other_fields": {}}) for s in stats)
                for p, stats in model.partition_to_write_stats.items()
            }
        }
    )
    assert _java_output(stem) == codecs.encode(without_extras).decode("utf-8")


# -- our decoder reads what Hudi's serializers write


def to_avro_json(schema: Any, value: Any) -> Any:
    """Avro's JSON encoding (what Java's JsonDecoder reads) of `value`, for a normalized schema."""
    if isinstance(schema, list):  # our unions are all [null, X] or [X, null]
        if value is None:
            return None
        (branch,) = [b for b in schema if b != "null"]
        name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
        return {name: to_avro_json(branch, value)}
    if isinstance(schema, str):
        return value
    if schema["type"] == "record":
        return {f["name"]: to_avro_json(f["type"], value[f["name"]]) for f in schema["fields"]}
    if schema["type"] == "array":
        return [to_avro_json(schema["items"], v) for v in value]
    return {k: to_avro_json(schema["values"], v) for k, v in value.items()}


@pytest.fixture(scope="module")
def java_encoded(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Any, Path]]:
    directory = tmp_path_factory.mktemp("java-encode")
    cases: list[tuple[str, Any, Path]] = []
    realistic = _realistic_examples()
    for kind, model_type in AVRO_KINDS.items():
        examples = realistic.get(kind, []) + collect(models(model_type), EXAMPLES_PER_KIND)
        for i, model in enumerate(without_1x_fields(m) for m in examples):
            avro_json = to_avro_json(normalize(schema_json(kind)), _ours(model))
            (directory / f"{i:03d}.{kind}.json").write_text(json.dumps(avro_json), "utf-8")
            cases.append((kind, model, directory / f"{i:03d}.{kind}.avro"))
    run_java("HudiTimelineDecode", "encode", str(SCHEMA_DIR), str(directory))
    return cases


@pytest.mark.parametrize("kind", AVRO_KINDS)
def test_our_decoder_reads_files_hudi_serialized(
    kind: str, java_encoded: list[tuple[str, Any, Path]]
) -> None:
    cases = [c for c in java_encoded if c[0] == kind]
    assert len(cases) >= EXAMPLES_PER_KIND
    for _, model, path in cases:
        assert codecs.decode(AVRO_KINDS[kind], path.read_bytes(), path.name) == model, path.name


@pytest.mark.parametrize("kind", ["HoodieCleanerPlan", "HoodieCleanMetadata"])
def test_our_decoder_skips_0_15_fields_hudi_wrote(
    kind: str, java_encoded: list[tuple[str, Any, Path]]
) -> None:
    path = next(c[2] for c in java_encoded if c[0] == kind)
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    assert reader.metadata.get("avro.codec", "null") == "null"
    (record,) = list(reader)
    assert isinstance(record, dict)
    assert record["extraMetadata"] == {"hts.test": "written by Hudi"}
    assert codecs.decode(AVRO_KINDS[kind], path.read_bytes(), path.name) is not None
