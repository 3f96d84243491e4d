"""The table's writer schema as Java resolves it from the timeline (`TableSchemaResolver`)."""

from __future__ import annotations

from dataclasses import dataclass

from service.table import codecs
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
    with that write's instant."""
    for instant in reversed(timeline.completed().commits().instants):
        meta = table.facts_reader.commit_metadata(instant)
        if meta.operation_type in SCHEMALESS_OPERATIONS:
            continue
        if meta.table_schema:
            return TableSchema(meta.table_schema, instant)
    return None


def latest_table_schema(table: HudiTable, timeline: Timeline) -> str | None:
    """`latest_table_schema_of`'s text alone."""
    found = latest_table_schema_of(table, timeline)
    return None if found is None else found.text
