"""The few protobuf messages an HFile holds (`HFileTrailerProto`, `FileInfoProto`), decoded by hand.

Only the wire format is needed (no protobuf dependency): varints, 64/32-bit fixed fields and
length-delimited bytes. Unknown fields are skipped, as protobuf readers do.
"""

from __future__ import annotations

from service.table.hfile.bytes_reader import ByteCursor

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_BYTES = 2
WIRE_FIXED32 = 5


def read_fields(cur: ByteCursor, what: str) -> dict[int, list[int | bytes]]:
    """Every field of one message occupying the rest of `cur`, by field number, in order."""
    fields: dict[int, list[int | bytes]] = {}
    while cur.remaining:
        tag = cur.proto_varint(f"{what} field tag")
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == WIRE_VARINT:
            value = cur.proto_varint(f"{what} field {number}")
        elif wire == WIRE_FIXED64:
            value = int.from_bytes(cur.read(8, f"{what} field {number}"), "little")
        elif wire == WIRE_BYTES:
            size = cur.length(
                cur.proto_varint(f"{what} field {number} length"), f"{what} field {number} length"
            )
            value = cur.read(size, f"{what} field {number}")
        elif wire == WIRE_FIXED32:
            value = int.from_bytes(cur.read(4, f"{what} field {number}"), "little")
        else:
            raise cur.fail(f"{what}: field {number} has unsupported wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def delimited(cur: ByteCursor, what: str) -> ByteCursor:
    """The message `writeDelimitedTo` wrote at the cursor (varint size, message); advances past it."""
    size = cur.length(cur.proto_varint(f"{what} size"), f"{what} size")
    return cur.sub(size, what)


def single_int(fields: dict[int, list[int | bytes]], number: int, default: int = 0) -> int:
    values = fields.get(number)
    if not values:
        return default
    value = values[-1]
    return value if isinstance(value, int) else default


def single_bytes(fields: dict[int, list[int | bytes]], number: int) -> bytes | None:
    values = fields.get(number)
    if not values:
        return None
    value = values[-1]
    return value if isinstance(value, bytes) else None
