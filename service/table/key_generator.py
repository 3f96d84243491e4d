"""Virtual record keys: the key generators Hudi allows on tables without meta fields.

With `hoodie.populate.meta.fields=false` the `_hoodie_record_key` column is null and Hudi derives
each record's key from its data columns with the table's key generator
(`hoodie.table.keygenerator.class`) whenever it needs one, e.g. its SIMPLE index reading keys
back from base files (`BaseFileUtils.fetchHoodieKeys` with a key generator). Hudi allows only
three generators on such tables (`HoodieTableMetaClient.validateTableProperties` refuses any other,
including `CustomKeyGenerator`), so those three are what this module knows.

Clustering rewrites rows without touching their data columns, and Hudi's base files for such
tables carry no record-key footers (see `service/table/base_file_writer.py`), so the write path
needs no keys: what it needs is that the generator is one Hudi supports and its fields are still
in the table schema, so Hudi can derive every key from the rewritten files (checked when a plan is
scheduled). `record_keys` computes the keys themselves, exactly as Hudi's Spark writer fills
`_hoodie_record_key` for the same generator, for integer, string and timestamp key fields (verified against
Hudi 0.15 in tests/clustering/test_virtual_keys_hudi.py; docs/format.md).

This module is pure (Arrow in, Arrow out) and has no Spark imports; it sits under `service/table`
beside `properties.py` because it interprets the table's own configuration, not a strategy choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa
import pyarrow.compute as pc

from service.errors import UnsupportedTableError
from service.table.properties import TableConfig

_KEYGEN_PACKAGE = "org.apache.hudi.keygen."
# KeyGenUtils: a complex key's null and empty field values are written as these placeholders.
NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"


class KeyGeneratorKind(StrEnum):
    SIMPLE = "SimpleKeyGenerator"
    COMPLEX = "ComplexKeyGenerator"
    NON_PARTITIONED = "NonpartitionedKeyGenerator"

    @property
    def class_name(self) -> str:
        return _KEYGEN_PACKAGE + self.value


# Hudi's default when `hoodie.table.keygenerator.class` is absent (validateTableProperties).
_DEFAULT_KIND = KeyGeneratorKind.SIMPLE


@dataclass(frozen=True)
class VirtualKeyGenerator:
    """The key generator of a table without meta fields, and its record key fields."""

    kind: KeyGeneratorKind
    record_key_fields: tuple[str, ...]

    @classmethod
    def for_table(cls, config: TableConfig, base_uri: str) -> VirtualKeyGenerator:
        """The table's generator; UnsupportedTableError names the class Hudi itself would refuse."""
        class_name = config.key_generator_class or _DEFAULT_KIND.class_name
        kind = next((k for k in KeyGeneratorKind if k.class_name == class_name), None)
        if kind is None:
            supported = ", ".join(k.class_name for k in KeyGeneratorKind)
            raise UnsupportedTableError(
                f"table {config.name!r} at {base_uri}: hoodie.populate.meta.fields=false with "
                f"hoodie.table.keygenerator.class={class_name}; record keys are then derived from the data "
                f"and only {supported} are supported (Hudi's own writers refuse the others too)"
            )
        fields = tuple(config.record_key_fields)
        if not fields:
            raise UnsupportedTableError(
                f"table {config.name!r} at {base_uri}: hoodie.populate.meta.fields=false without "
                "hoodie.table.recordkey.fields; record keys cannot be derived"
            )
        if kind is KeyGeneratorKind.SIMPLE and len(fields) != 1:
            raise UnsupportedTableError(
                f"table {config.name!r} at {base_uri}: {class_name} takes one record key field, "
                f"hoodie.table.recordkey.fields={','.join(fields)}"
            )
        return cls(kind, fields)

    def missing_fields(self, columns: Sequence[str]) -> list[str]:
        """Record key fields that are not top-level columns of `columns`."""
        present = set(columns)
        return [f for f in self.record_key_fields if f not in present]

    def record_keys(self, data: pa.Table | pa.RecordBatch) -> pa.Array:
        """Each row's record key as Hudi's key generator builds it (a string array, no nulls).

        Simple and NonPartitioned: the field's value (`KeyGenUtils.getRecordKey` with one field);
        Complex: `field1:value1,field2:value2`, a null value as `__null__` and an empty one as
        `__empty__`, refused only when every value is null or empty. A single-field Complex key is
        the bare value, as Simple writes it (Hudi 0.15, verified).
        Raises UnsupportedTableError for keys Hudi would refuse (null or empty simple keys) and for
        key types other than integers, strings and timestamps (epoch microseconds), whose Java
        string forms (e.g. `Double.toString`) are not reproduced here.
        """
        values = [self._as_strings(data, name) for name in self.record_key_fields]
        if self.kind is not KeyGeneratorKind.COMPLEX or len(values) == 1:
            keys = values[0]
            bad = pc.sum(pc.or_kleene(pc.is_null(keys), pc.equal(pc.utf8_length(keys), 0))).as_py() or 0
            if bad:
                raise UnsupportedTableError(
                    f"record key field {self.record_key_fields[0]!r} is null or empty in {bad} row(s); "
                    "Hudi's key generator refuses such records"
                )
            return keys
        parts = []
        blank = None
        for name, strings in zip(self.record_key_fields, values, strict=True):
            is_blank = pc.or_kleene(pc.is_null(strings), pc.equal(pc.utf8_length(strings), 0))
            blank = is_blank if blank is None else pc.and_kleene(blank, is_blank)
            shown = pc.if_else(
                pc.is_null(strings),
                NULL_RECORDKEY_PLACEHOLDER,
                pc.if_else(pc.equal(pc.utf8_length(strings), 0), EMPTY_RECORDKEY_PLACEHOLDER, strings),
            )
            parts.append(pc.binary_join_element_wise(f"{name}:", shown, ""))
        assert blank is not None
        if pc.any(blank).as_py():
            raise UnsupportedTableError(
                f"record key fields {list(self.record_key_fields)} are all null or empty in "
                f"{pc.sum(blank).as_py()} row(s); Hudi's key generator refuses such records"
            )
        return pc.binary_join_element_wise(*parts, ",")

    @staticmethod
    def _as_strings(data: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
        index = data.schema.get_field_index(name)
        if index < 0:
            raise UnsupportedTableError(f"record key field {name!r} is not a column of the data")
        column = data.column(index)
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        if pa.types.is_integer(array.type) or pa.types.is_large_string(array.type):
            return array.cast(pa.string())  # Java's Integer/Long.toString: plain decimal digits
        if pa.types.is_string(array.type):
            return array
        if pa.types.is_timestamp(array.type):
            # Hudi's writers see timestamps as epoch microseconds (a Long) when building keys.
            return array.cast(pa.timestamp("us", array.type.tz)).cast(pa.int64()).cast(pa.string())
        raise UnsupportedTableError(
            f"record key field {name!r} has type {array.type}; virtual keys are computed here only "
            "for integer, string and timestamp fields"
        )
