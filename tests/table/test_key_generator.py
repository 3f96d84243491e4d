"""Virtual record keys from the key generators Hudi allows on tables without meta fields (pure logic;
tests/clustering/test_virtual_keys_hudi.py compares them with the keys Hudi writes)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from service.errors import UnsupportedTableError
from service.table.key_generator import KeyGeneratorKind, VirtualKeyGenerator
from service.table.properties import TableConfig

KEYGEN = "org.apache.hudi.keygen."


def _config(**raw: str) -> TableConfig:
    return TableConfig({"hoodie.table.name": "t", "hoodie.populate.meta.fields": "false", **raw})


def _keygen(cls: str | None, fields: str) -> VirtualKeyGenerator:
    raw = {"hoodie.table.recordkey.fields": fields}
    if cls is not None:
        raw["hoodie.table.keygenerator.class"] = KEYGEN + cls
    return VirtualKeyGenerator.for_table(_config(**raw), "file:/t")


DATA = pa.table(
    {
        "id": pa.array([1, 22, 333], pa.int64()),
        "name": pa.array(["a", "", None]),
        "ts": pa.array([0, 1_500, 2_000_000], pa.timestamp("us", "UTC")),
    }
)


def test_simple_and_nonpartitioned_keys_are_the_value() -> None:
    assert _keygen("SimpleKeyGenerator", "id").record_keys(DATA).to_pylist() == ["1", "22", "333"]
    assert _keygen("NonpartitionedKeyGenerator", "id").record_keys(DATA).to_pylist() == ["1", "22", "333"]
    assert _keygen(None, "ts").record_keys(DATA).to_pylist() == ["0", "1500", "2000000"]  # default: Simple
    assert _keygen(None, "id").kind is KeyGeneratorKind.SIMPLE


def test_complex_keys_name_each_field_with_placeholders() -> None:
    keys = _keygen("ComplexKeyGenerator", "id,name").record_keys(DATA).to_pylist()
    assert keys == ["id:1,name:a", "id:22,name:__empty__", "id:333,name:__null__"]
    # One field: the bare value, as Hudi 0.15 writes it.
    assert _keygen("ComplexKeyGenerator", "id").record_keys(DATA).to_pylist() == ["1", "22", "333"]


def test_keys_hudi_refuses_are_refused() -> None:
    with pytest.raises(UnsupportedTableError, match="null or empty in 2 row"):
        _keygen("SimpleKeyGenerator", "name").record_keys(DATA)
    blank = pa.table({"a": pa.array([None, "x"]), "b": pa.array(["", None])})
    with pytest.raises(UnsupportedTableError, match="all null or empty in 1 row"):
        _keygen("ComplexKeyGenerator", "a,b").record_keys(blank)
    with pytest.raises(UnsupportedTableError, match="type double"):
        _keygen("SimpleKeyGenerator", "x").record_keys(pa.table({"x": [1.5]}))


@pytest.mark.parametrize("cls", ["CustomKeyGenerator", "TimestampBasedKeyGenerator", "my.Own"])
def test_generators_hudi_refuses_without_meta_fields(cls: str) -> None:
    with pytest.raises(UnsupportedTableError, match=r"only .*SimpleKeyGenerator.* are supported"):
        _keygen(cls, "id")


def test_simple_takes_one_field_and_fields_are_required() -> None:
    with pytest.raises(UnsupportedTableError, match="takes one record key field"):
        _keygen("SimpleKeyGenerator", "id,name")
    with pytest.raises(UnsupportedTableError, match=r"without hoodie\.table\.recordkey\.fields"):
        _keygen("ComplexKeyGenerator", "")
    assert _keygen("ComplexKeyGenerator", "id,name").missing_fields(["id"]) == ["name"]
