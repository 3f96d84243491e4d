"""Avro schemas for base-file footers: derived from Arrow exactly as Hudi's Spark writer does."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from service.errors import HudiTableServiceError
from service.table.avro_schema import (
    HOODIE_META_FIELDS,
    arrow_to_avro_schema,
    avro_schema_to_json,
    decimal_fixed_size,
    normalize_arrow_schema,
    record_name_and_namespace,
    top_level_nullability,
    with_meta_fields,
)

# `parquet.avro.schema` of a base file Hudi 0.15 (Spark 3.5, operation=insert, table `tt`) wrote for a
# DataFrame with the Arrow-equivalent schema of `_spark_like_schema()` (`id` and `l` not nullable).
SPARK_HUDI_SCHEMA = (
    '{"type":"record","name":"tt_record","namespace":"hoodie.tt","fields":[{"name":"_hoodie_commit_ti'
    'me","type":["null","string"],"doc":"","default":null},{"name":"_hoodie_commit_seqno","type":["nu'
    'll","string"],"doc":"","default":null},{"name":"_hoodie_record_key","type":["null","string"],"do'
    'c":"","default":null},{"name":"_hoodie_partition_path","type":["null","string"],"doc":"","defaul'
    't":null},{"name":"_hoodie_file_name","type":["null","string"],"doc":"","default":null},{"name":"'
    'id","type":"string"},{"name":"part","type":["null","string"],"default":null},{"name":"ts","type"'
    ':["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},{"name":"dec","type":'
    '["null",{"type":"fixed","name":"fixed","namespace":"hoodie.tt.tt_record.dec","size":5,"logicalTy'
    'pe":"decimal","precision":10,"scale":2}],"default":null},{"name":"dec2","type":["null",{"type":"'
    'fixed","name":"fixed","namespace":"hoodie.tt.tt_record.dec2","size":9,"logicalType":"decimal","p'
    'recision":20,"scale":4}],"default":null},{"name":"d","type":["null",{"type":"int","logicalType":'
    '"date"}],"default":null},{"name":"arr","type":["null",{"type":"array","items":["null","int"]}],"'
    'default":null},{"name":"arrs","type":["null",{"type":"array","items":["null",{"type":"record","n'
    'ame":"arrs","namespace":"hoodie.tt.tt_record","fields":[{"name":"a","type":["null","int"],"defau'
    'lt":null},{"name":"b","type":["null","string"],"default":null}]}]}],"default":null},{"name":"m",'
    '"type":["null",{"type":"map","values":["null","int"]}],"default":null},{"name":"ms","type":["nul'
    'l",{"type":"map","values":["null",{"type":"record","name":"ms","namespace":"hoodie.tt.tt_record"'
    ',"fields":[{"name":"q","type":["null","long"],"default":null}]}]}],"default":null},{"name":"st",'
    '"type":["null",{"type":"record","name":"st","namespace":"hoodie.tt.tt_record","fields":[{"name":'
    '"x","type":"int"},{"name":"y","type":["null","string"],"default":null},{"name":"inner","type":["'
    'null",{"type":"record","name":"inner","namespace":"hoodie.tt.tt_record.st","fields":[{"name":"z"'
    ',"type":["null","double"],"default":null}]}],"default":null}]}],"default":null},{"name":"b","typ'
    'e":["null","int"],"default":null},{"name":"s","type":["null","int"],"default":null},{"name":"bin'
    '","type":["null","bytes"],"default":null},{"name":"f","type":["null","float"],"default":null},{"'
    'name":"dbl","type":["null","double"],"default":null},{"name":"bool","type":["null","boolean"],"d'
    'efault":null},{"name":"l","type":"long"}]}'
)


def _spark_like_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            ("part", pa.string()),
            ("ts", pa.timestamp("us", "UTC")),
            ("dec", pa.decimal128(10, 2)),
            ("dec2", pa.decimal128(20, 4)),
            ("d", pa.date32()),
            ("arr", pa.list_(pa.int32())),
            ("arrs", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("ms", pa.map_(pa.string(), pa.struct([("q", pa.int64())]))),
            (
                "st",
                pa.struct(
                    [
                        pa.field("x", pa.int32(), nullable=False),
                        ("y", pa.string()),
                        ("inner", pa.struct([("z", pa.float64())])),
                    ]
                ),
            ),
            ("b", pa.int8()),
            ("s", pa.int16()),
            ("bin", pa.binary()),
            ("f", pa.float32()),
            ("dbl", pa.float64()),
            ("bool", pa.bool_()),
            pa.field("l", pa.int64(), nullable=False),
        ]
    )


def test_avro_schema_derivation_equals_hudi_spark_writer_byte_for_byte() -> None:
    derived = arrow_to_avro_schema(_spark_like_schema(), "tt", all_nullable=False)
    assert avro_schema_to_json(derived) == SPARK_HUDI_SCHEMA


def test_avro_schema_all_nullable_by_default() -> None:
    derived = arrow_to_avro_schema(_spark_like_schema(), "tt")
    fields = {f["name"]: f for f in derived["fields"]}
    assert fields["id"] == {"name": "id", "type": ["null", "string"], "default": None}
    st = fields["st"]["type"][1]
    assert st["fields"][0] == {"name": "x", "type": ["null", "int"], "default": None}
    expected = json.loads(SPARK_HUDI_SCHEMA)
    expected_fields = {f["name"]: f for f in expected["fields"]}
    assert fields["arrs"] == expected_fields["arrs"]
    assert fields["ts"] == expected_fields["ts"]


def test_avro_schema_meta_fields_come_first_and_replace_arrow_ones() -> None:
    arrow = pa.schema([(name, pa.string()) for name in HOODIE_META_FIELDS] + [("v", pa.int64())])
    derived = arrow_to_avro_schema(arrow, "t")
    assert [f["name"] for f in derived["fields"]] == [*HOODIE_META_FIELDS, "v"]
    assert derived["fields"][0] == {
        "name": "_hoodie_commit_time",
        "type": ["null", "string"],
        "doc": "",
        "default": None,
    }


def test_avro_schema_with_meta_fields_prepends_only_when_missing() -> None:
    with_meta = with_meta_fields(SPARK_HUDI_SCHEMA)
    assert with_meta == SPARK_HUDI_SCHEMA  # already there: embedded verbatim
    table_schema = json.loads(SPARK_HUDI_SCHEMA)
    table_schema["fields"] = table_schema["fields"][5:]  # as commit metadata stores it
    assert with_meta_fields(json.dumps(table_schema)) == SPARK_HUDI_SCHEMA
    broken = json.loads(SPARK_HUDI_SCHEMA)
    broken["fields"] = broken["fields"][1:]
    with pytest.raises(HudiTableServiceError, match="out of place"):
        with_meta_fields(json.dumps(broken))


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("trips", ("trips_record", "hoodie.trips")),
        ("my-table.v2", ("my__table__v2_record", "hoodie.my__table__v2")),
        ("1st", ("__st_record", "hoodie.__st")),
    ],
)
def test_avro_schema_record_name_is_sanitised_like_hudi(table: str, expected: tuple[str, str]) -> None:
    assert record_name_and_namespace(table) == expected


def test_avro_schema_decimal_fixed_sizes_match_pyarrows_parquet_sizes() -> None:
    # Spark's minBytesForPrecision; pyarrow writes FIXED_LEN_BYTE_ARRAY of the same width.
    assert [decimal_fixed_size(p) for p in (1, 2, 3, 9, 10, 18, 19, 20, 38)] == [1, 1, 2, 4, 5, 8, 9, 9, 16]


def test_avro_schema_normalisation_maps_types_parquet_avro_lacks() -> None:
    arrow = pa.schema(
        [
            ("i8", pa.int8()),
            ("u16", pa.uint16()),
            ("u32", pa.uint32()),
            ("ns", pa.timestamp("ns", "UTC")),
            ("s", pa.timestamp("s")),
            ("fsb", pa.binary(4)),
            ("lst", pa.list_(pa.int16())),
            ("dict", pa.dictionary(pa.int32(), pa.string())),
        ]
    )
    normalized = normalize_arrow_schema(arrow)
    assert normalized.types == [
        pa.int32(),
        pa.int32(),
        pa.int64(),
        pa.timestamp("us", "UTC"),
        pa.timestamp("ms"),
        pa.binary(),
        pa.list_(pa.int32()),
        pa.string(),
    ]
    derived = {f["name"]: f["type"][1] for f in arrow_to_avro_schema(arrow, "t")["fields"][5:]}
    assert derived["ns"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert derived["s"] == {"type": "long", "logicalType": "local-timestamp-millis"}
    assert derived["dict"] == "string"


def test_avro_schema_refuses_types_without_avro_equivalent() -> None:
    for bad in (pa.uint64(), pa.null(), pa.duration("s"), pa.map_(pa.int32(), pa.int32())):
        with pytest.raises(HudiTableServiceError):
            arrow_to_avro_schema(pa.schema([("x", bad)]), "t")
    with pytest.raises(HudiTableServiceError, match="not a valid Avro name"):
        arrow_to_avro_schema(pa.schema([("bad name", pa.int32())]), "t")


def test_avro_schema_top_level_nullability() -> None:
    nullable = top_level_nullability(json.loads(SPARK_HUDI_SCHEMA))
    assert nullable["id"] is False and nullable["l"] is False
    assert nullable["part"] is True and nullable["_hoodie_record_key"] is True
