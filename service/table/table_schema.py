"""The table's writer schema as Java resolves it from the timeline (`TableSchemaResolver`)."""

from __future__ import annotations

from dataclasses import dataclass

from service.errors import CorruptTableError, HudiTableServiceError
from service.table import codecs
from service.table.avro_schema import parse_avro_schema, with_meta_fields
from service.table.instant import Instant
from service.table.table import HudiTable
from service.table.timeline import Timeline

# Operations whose commits do not carry the writer's schema (Java's getLastCommitMetadataWithValidSchema).
SCHEMALESS_OPERATIONS = {
    codecs.WriteOperationType.CLUSTER,
    codecs.WriteOperationType.COMPACT,
    codecs.WriteOperationType.INDEX,
    codecs.WriteOperationType.LOG_COMPACT,
}


@dataclass(frozen=True)
class TableSchema:
    """The writer schema's Avro text and the completed commit it was read from, for errors to name."""

    text: str
    commit: Instant


def latest_table_schema_of(table: HudiTable, timeline: Timeline) -> TableSchema | None:
    """The table's Avro schema from the newest completed write that carries one (as Java reads it),
    with that write's instant. Read from each commit's summary: the write stats are not needed (a commit
    that wrote a million files is hundreds of megabytes of them)."""
    for instant in reversed(timeline.completed().commits().instants):
        meta = table.facts_reader.commit_summary(instant)
        if meta.operation_type in SCHEMALESS_OPERATIONS:
            continue
        if meta.table_schema:
            return TableSchema(meta.table_schema, instant)
    return None


def schema_commit_path(table: HudiTable, schema: TableSchema) -> str:
    """The commit file `schema` was read from, for errors to name."""
    return table.storage.qualify(table.layout.instant_path(schema.commit))


def table_schema_fields(table: HudiTable, schema: TableSchema) -> list[str]:
    """The top-level field names of `schema` with Hudi's meta fields, as the writers of a table service
    read it (`with_meta_fields`); CorruptTableError naming the commit file if it cannot be read, so a
    service checks it before it writes anything rather than failing in a Spark task."""
    try:
        return [str(f["name"]) for f in parse_avro_schema(with_meta_fields(schema.text))["fields"]]
    except (ValueError, KeyError, TypeError, HudiTableServiceError) as exc:
        raise CorruptTableError(
            f"table {table.name!r} at {table.base_uri}: the table schema in the commit metadata "
            f"of {schema_commit_path(table, schema)} cannot be read: {exc}"
        ) from exc


def checked_table_schema(table: HudiTable, timeline: Timeline) -> str | None:
    """`latest_table_schema_of`'s text, checked readable (`table_schema_fields`) before a service
    writes anything: its writer tasks read it (`BaseFileSchema.create`), where an unreadable schema
    would fail a Spark task without naming the commit it came from."""
    found = latest_table_schema_of(table, timeline)
    if found is None:
        return None
    table_schema_fields(table, found)
    return found.text
