"""Test-side encoder of Hudi log blocks (`HoodieLogFormatWriter.appendBlocks` framing), for building
malformed and edge-case files the Java writer never produces. Real files come from real Hudi."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro

from service.table.log_format.blocks import MAGIC, HeaderKey, LogBlockType

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "t_record",
    "namespace": "hoodie.t",
    "fields": [
        *(
            {"name": n, "type": ["null", "string"], "default": None}
            for n in (
                "_hoodie_commit_time",
                "_hoodie_commit_seqno",
                "_hoodie_record_key",
                "_hoodie_partition_path",
                "_hoodie_file_name",
            )
        ),
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": "long"},
        {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None},
    ],
}


def metadata(entries: Mapping[int, str]) -> bytes:
    out = struct.pack(">i", len(entries))
    for key, value in entries.items():
        raw = value.encode()
        out += struct.pack(">ii", key, len(raw)) + raw
    return out


def block(block_type: int, header: Mapping[int, str], content: bytes, *, format_version: int = 1) -> bytes:
    body = (
        struct.pack(">ii", format_version, block_type)
        + metadata(header)
        + struct.pack(">q", len(content))
        + content
        + metadata({})
    )
    size = len(body) + 8
    return MAGIC + struct.pack(">q", size) + body + struct.pack(">q", size + len(MAGIC))


def row(
    key: str, ts: int, name: str | None = None, instant: str = "001", deleted: bool | None = None
) -> dict[str, Any]:
    return {
        "_hoodie_commit_time": instant,
        "_hoodie_commit_seqno": f"{instant}_0_{key}",
        "_hoodie_record_key": key,
        "_hoodie_partition_path": "",
        "_hoodie_file_name": "f1-0",
        "id": int(key),
        "name": name,
        "ts": ts,
        "_hoodie_is_deleted": deleted,
    }


def avro_block(
    instant: str,
    rows: Sequence[Mapping[str, Any]],
    schema: Mapping[str, Any] = SCHEMA,
    block_identifier: str | None = None,
    extra_header: Mapping[int, str] | None = None,
) -> bytes:
    parsed = fastavro.parse_schema(dict(schema))
    content = struct.pack(">ii", 3, len(rows))
    for r in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, dict(r))
        content += struct.pack(">i", len(buf.getvalue())) + buf.getvalue()
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: json.dumps(schema)}
    if block_identifier is not None:
        header[HeaderKey.BLOCK_IDENTIFIER] = block_identifier
    header.update(extra_header or {})
    return block(LogBlockType.AVRO_DATA_BLOCK, header, content)


def delete_block(
    instant: str, deletes: Sequence[tuple[str, tuple[str, Any] | None]], version: int = 3
) -> bytes:
    """`deletes`: (record key, (wrapper name, value) or None)."""
    from service.table.log_format.content import _delete_schema

    records = [
        {
            "recordKey": key,
            "partitionPath": "",
            "orderingVal": None
            if ordering is None
            else (f"org.apache.hudi.avro.model.{ordering[0]}", {"value": ordering[1]}),
        }
        for key, ordering in deletes
    ]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _delete_schema(), {"deleteRecordList": records})
    payload = buf.getvalue()
    content = struct.pack(">ii", version, len(payload)) + payload
    return block(LogBlockType.DELETE_BLOCK, {HeaderKey.INSTANT_TIME: instant}, content)


def rollback_block(instant: str, target: str) -> bytes:
    header = {
        HeaderKey.INSTANT_TIME: instant,
        HeaderKey.TARGET_INSTANT_TIME: target,
        HeaderKey.COMMAND_BLOCK_TYPE: "0",
    }
    return block(LogBlockType.COMMAND_BLOCK, header, b"")
