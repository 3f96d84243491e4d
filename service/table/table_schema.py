"""The table's writer schema as Java resolves it from the timeline (`TableSchemaResolver`)."""

from __future__ import annotations

from service.table import codecs
from service.table.table import HudiTable
from service.table.timeline import Timeline

# Operations whose commits do not carry the writer's schema (Java's getLastCommitMetadataWithValidSchema).
SCHEMALESS_OPERATIONS = {
    codecs.WriteOperationType.CLUSTER,
    codecs.WriteOperationType.COMPACT,
    codecs.WriteOperationType.INDEX,
    codecs.WriteOperationType.LOG_COMPACT,
}


def latest_table_schema(table: HudiTable, timeline: Timeline) -> str | None:
    """The table's Avro schema from the newest completed write that carries one (as Java reads it)."""
    for instant in reversed(timeline.completed().commits().instants):
        meta = table.facts_reader.commit_metadata(instant)
        if meta.operation_type in SCHEMALESS_OPERATIONS:
            continue
        if meta.table_schema:
            return meta.table_schema
    return None
