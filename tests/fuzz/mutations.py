"""Mutations of stored files, for the fuzz suite: every kind of file the service reads, broken the ways
storage, crashed writers and hostile hands break them. Pure: bytes in, (label, bytes) out, driven by a
seeded `random.Random`, so a failure reproduces from its seed.

Kinds (`kind_of`): `properties` (`hoodie.properties`), `json` (JSON timeline files: version-6 commit
metadata), `avro` (Avro container files: plans, clean and rollback metadata, version-8/9 commit
metadata), `log` (log files of data and metadata tables), `hfile` (the metadata table's base files),
`parquet` (base files), `marker` (timeline-server marker files) and `empty` (files whose presence or
name is what counts: direct markers, heartbeats, empty requested instants).
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from typing import Any

import fastavro

KINDS = ("properties", "json", "avro", "log", "hfile", "parquet", "marker", "empty")
AVRO_MAGIC = b"Obj\x01"
# Paths a stored file might carry to reach outside the table.
TRAVERSALS = (
    "../../../../etc/passwd",
    "/etc/passwd",
    "..",
    "americas/../../outside.parquet",
    "s3a://other-bucket/t/x.parquet",
    "file:///tmp/outside.parquet",
    "",
)
HUGE_NUMBERS = (2**31 - 1, 2**31, -1, -(2**31), 2**63 - 1, 2**64 + 7)


def kind_of(relative_path: str, data: bytes) -> str | None:
    """The kind of the stored file at `relative_path` (relative to the table's base path), or None for
    files the service never reads (checksums, Spark's `.crc`)."""
    name = relative_path.rsplit("/", 1)[-1]
    if name.endswith(".crc"):
        return None
    if name in ("hoodie.properties", "hoodie.properties.backup"):
        return "properties"
    if name == ".hoodie_partition_metadata" or name.startswith(".hoodie_partition_metadata"):
        return "properties"
    if ".log." in name:
        return "log"
    if name.endswith(".hfile"):
        return "hfile"
    if name.endswith(".parquet"):
        return "parquet"
    if "/.temp/" in f"/{relative_path}" or ".marker." in name:
        return "marker" if data else "empty"
    if not data:
        return "empty"
    if data.startswith(AVRO_MAGIC):
        return "avro"
    if data.lstrip()[:1] in (b"{", b"["):
        return "json"
    return None


def mutate(kind: str, data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of a file of `kind`: its label (what was done, for the failure report) and bytes."""
    structured = _STRUCTURED.get(kind)
    if structured is not None and rng.random() < 0.5:
        try:
            return structured(data, rng)
        except _NotApplicable:
            pass
    return _bytes_mutation(data, rng)


class _NotApplicable(Exception):
    """The structure-aware mutator found nothing to mutate in this file."""


# ---------------------------------------------------------------- byte level


def _bytes_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    choices: list[Callable[[bytes, random.Random], tuple[str, bytes]]] = [
        _truncate, _flip_bits, _random_window, _huge_length, _garbage,
    ]  # fmt: skip
    if not data:
        choices = [_garbage]
    return rng.choice(choices)(data, rng)


def _truncate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    at = rng.randrange(0, len(data))
    return f"truncated to {at} of {len(data)} bytes", data[:at]


def _flip_bits(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    out = bytearray(data)
    flips = [(rng.randrange(len(out)), rng.randrange(8)) for _ in range(rng.randint(1, 8))]
    for offset, bit in flips:
        out[offset] ^= 1 << bit
    return f"bits flipped at {sorted(o for o, _ in flips)}", bytes(out)


def _random_window(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    start = rng.randrange(len(data))
    size = rng.randint(1, min(64, len(data) - start))
    window = rng.randbytes(size)
    return f"{size} random bytes at {start}", data[:start] + window + data[start + size :]


def _huge_length(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A 4- or 8-byte big-endian integer field (block sizes, counts, lengths) set huge or negative."""
    width = rng.choice((4, 8))
    if len(data) < width:
        return _garbage(data, rng)
    at = rng.randrange(0, len(data) - width + 1)
    value = (
        rng.choice((0x7FFFFFFF, 0xFFFFFFFF, 0x80000000))
        if width == 4
        else rng.choice((0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x0000_7FFF_FFFF_FFFF))
    )
    mutated = data[:at] + value.to_bytes(width, "big") + data[at + width :]
    return f"{width}-byte field at {at} set to {value:#x}", mutated


def _garbage(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    size = rng.choice((0, 1, 7, 100, 5000))
    return f"replaced by {size} random bytes", rng.randbytes(size)


# ---------------------------------------------------------------- structure aware


def _json_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise _NotApplicable from None
    leaves = list(_leaves(document, ()))
    if not leaves:
        raise _NotApplicable
    path, value = rng.choice(leaves)
    replacement = _wrong_value(value, rng)
    _set(document, path, replacement)
    return f"JSON {'/'.join(map(str, path))}: {value!r:.60} -> {replacement!r:.60}", json.dumps(
        document
    ).encode()


def _avro_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Decode the container with its own writer schema, change one leaf to another value of the same
    Avro type (a traversal path for a string, a huge number for a number), or drop a record field from
    schema and data (a wrong schema), and write it back."""
    try:
        reader = fastavro.reader(io.BytesIO(data))
        schema = reader.writer_schema
        records = list(reader)
    except Exception:
        raise _NotApplicable from None
    if not records:
        raise _NotApplicable
    if rng.random() < 0.3 and isinstance(schema, dict) and len(schema.get("fields", ())) > 1:
        dropped = rng.choice(schema["fields"])["name"]
        schema = {**schema, "fields": [f for f in schema["fields"] if f["name"] != dropped]}
        records = [{k: v for k, v in r.items() if k != dropped} for r in records]
        label = f"Avro field {dropped!r} dropped from schema and data"
    else:
        leaves = [
            (p, v)
            for p, v in _leaves(records, ())
            if isinstance(v, (str, int, float)) and not isinstance(v, bool)
        ]
        if not leaves:
            raise _NotApplicable
        path, value = rng.choice(leaves)
        replacement: Any
        if isinstance(value, str):
            replacement = rng.choice(TRAVERSALS) if rng.random() < 0.7 else value * rng.randint(2, 50)
        elif isinstance(value, int):
            replacement = rng.choice((-1, 0, 2**31 - 1, -(2**31)))
        else:
            replacement = rng.choice((float("nan"), float("inf"), -1.0))
        _set(records, path, replacement)
        label = f"Avro {'/'.join(map(str, path))}: {value!r:.60} -> {replacement!r:.60}"
    out = io.BytesIO()
    try:
        fastavro.writer(out, fastavro.parse_schema(schema), records)
    except Exception:
        raise _NotApplicable from None
    return label, out.getvalue()


def _properties_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    lines = data.decode("utf-8", errors="replace").splitlines()
    entries = [i for i, line in enumerate(lines) if "=" in line and not line.startswith("#")]
    if not entries:
        raise _NotApplicable
    i = rng.choice(entries)
    key, _, value = lines[i].partition("=")
    action = rng.choice(("drop", "garbage", "traversal", "huge", "duplicate"))
    if action == "drop":
        del lines[i]
    elif action == "garbage":
        lines[i] = f"{key}={rng.randbytes(6).hex()}"
    elif action == "traversal":
        lines[i] = f"{key}={rng.choice(TRAVERSALS)}"
    elif action == "huge":
        lines[i] = f"{key}={rng.choice(HUGE_NUMBERS)}"
    else:
        lines.insert(i + 1, f"{key}={value}x")
    return f"properties {key}: {action}", ("\n".join(lines) + "\n").encode()


def _marker_mutation(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Timeline-server marker files hold marker paths, one per line: add one leaving the table."""
    lines = data.decode("utf-8", errors="replace").splitlines()
    traversal = rng.choice(TRAVERSALS)
    lines.insert(rng.randint(0, len(lines)), f"{traversal}.marker.CREATE")
    return f"marker line {traversal!r}", "\n".join(lines).encode()


_STRUCTURED: dict[str, Callable[[bytes, random.Random], tuple[str, bytes]]] = {
    "json": _json_mutation,
    "avro": _avro_mutation,
    "properties": _properties_mutation,
    "marker": _marker_mutation,
}


def _leaves(node: Any, path: tuple[Any, ...]) -> Any:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaves(value, (*path, index))
    else:
        yield path, node


def _set(node: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def _wrong_value(value: Any, rng: random.Random) -> Any:
    options: list[Any] = [
        None,
        [],
        {},
        rng.choice(HUGE_NUMBERS),
        "x" * rng.randint(0, 3),
        rng.choice(TRAVERSALS),
    ]
    if isinstance(value, str):
        options += [value[: len(value) // 2], int.from_bytes(rng.randbytes(2), "big")]
    return rng.choice(options)


def describe(data: bytes) -> str:
    """A short digest of mutated bytes for the failure report."""
    return f"{len(data)} bytes, head {data[:16]!r}"


__all__ = ["KINDS", "describe", "kind_of", "mutate"]
