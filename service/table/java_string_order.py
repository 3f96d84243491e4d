"""Java `String.compareTo` order for record keys (`hoodie_min_record_key` / `hoodie_max_record_key`).

Java compares UTF-16 code units; Python and Arrow compare code points (equivalently, UTF-8 bytes).
The two orders differ only between a supplementary character (U+10000 and up: a surrogate pair,
code units 0xD800-0xDBFF) and a character in U+E000-U+FFFF: Java puts the supplementary one first.
In UTF-8 those are exactly the characters with lead bytes 0xF0-0xF4 and 0xEE-0xEF, and a byte
comparison only ever meets lead bytes at the same position in both strings. So remapping the lead
bytes 0xEE and 0xEF to 0xF5 and 0xF6 (above every 4-byte lead, and never present in valid UTF-8)
turns Arrow's byte order into Java's order, and lets min/max run vectorised.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.errors import HudiTableServiceError

_REMAP = np.arange(256, dtype=np.uint8)
_REMAP[0xEE], _REMAP[0xEF] = 0xF5, 0xF6
_UNMAP = np.arange(256, dtype=np.uint8)
_UNMAP[0xF5], _UNMAP[0xF6] = 0xEE, 0xEF


def java_sort_key(key: str) -> bytes:
    """A bytes key whose order is Java's `String.compareTo` order (UTF-16BE code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def java_compare(a: str, b: str) -> int:
    """Sign of Java's `a.compareTo(b)`."""
    ka, kb = java_sort_key(a), java_sort_key(b)
    return (ka > kb) - (ka < kb)


def java_min_max(keys: pa.Array | pa.ChunkedArray) -> tuple[str, str] | None:
    """Smallest and largest key by Java's `String.compareTo`; None for no keys. Nulls are refused."""
    if keys.null_count:
        raise HudiTableServiceError(f"record keys contain {keys.null_count} null value(s)")
    if len(keys) == 0:
        return None
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_string())
    _, offsets_buf, data_buf = keys.buffers()
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    lo = int(np.frombuffer(offsets_buf, dtype=np.int64)[keys.offset])
    hi = int(np.frombuffer(offsets_buf, dtype=np.int64)[keys.offset + len(keys)])
    used = data[lo:hi]
    if not (np.any(used >= 0xF0) and np.any((used == 0xEE) | (used == 0xEF))):
        result = pc.min_max(keys)  # no pair whose orders differ: byte order is Java's order
        return str(result["min"].as_py()), str(result["max"].as_py())
    remapped = _REMAP[data]
    as_binary = pa.Array.from_buffers(
        pa.large_binary(), len(keys), [None, offsets_buf, pa.py_buffer(remapped)], offset=keys.offset
    )
    result = pc.min_max(as_binary)
    return _unmap(result["min"].as_py()), _unmap(result["max"].as_py())


def _unmap(raw: bytes) -> str:
    return _UNMAP[np.frombuffer(raw, dtype=np.uint8)].tobytes().decode("utf-8")


def merge_min_max(a: tuple[str, str] | None, b: tuple[str, str] | None) -> tuple[str, str] | None:
    """Combine two (min, max) ranges in Java order."""
    if a is None or b is None:
        return a or b
    lo = a[0] if java_compare(a[0], b[0]) <= 0 else b[0]
    hi = a[1] if java_compare(a[1], b[1]) >= 0 else b[1]
    return lo, hi
