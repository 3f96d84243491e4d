"""The order in which Hudi's Java file-system view yields the file groups of one partition.

`AbstractTableFileSystemView.buildFileGroups` collects the listed base files with
`Collectors.groupingBy(fileId)` (a `HashMap`) and iterates `new HashSet<>(map.keySet())`, so file
groups come out in `java.util.HashMap` bucket order. The size-based planner sorts slices by size
with a stable sort, so this order decides which of two equally sized slices goes first, and with it
where a group is cut. Reproducing it makes our groups equal Hudi's even on ties.

HashMap facts used: `hash(key) = h ^ (h >>> 16)` of `String.hashCode`, bucket = hash & (capacity-1),
iteration by bucket. `groupingBy` adds keys with `computeIfAbsent`, which links a new key at the
*head* of its bucket (resizes keep the order), so a bucket of the first map iterates in reverse
listing order. `new HashSet<>(c)` is sized `tableSizeFor(max((int) (n / .75f) + 1, 16))`, never
smaller than the first map, and appends in that map's order: keys sharing one of its buckets come
out in reverse listing order. Listing order is name order on HDFS and object stores (directory
order on a local disk). A bucket of nine or more colliding ids (treeified, or forcing a resize) is
not modelled: with UUID file ids that does not happen in practice.
"""

from __future__ import annotations

from collections.abc import Iterable

_INT_MASK = 0xFFFFFFFF
_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def java_string_hash(value: str) -> int:
    """`String.hashCode()` as an unsigned 32-bit value (UTF-16 code units, `31 * h + c`)."""
    units = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & _INT_MASK
    return h


def _spread(h: int) -> int:
    return (h ^ (h >> 16)) & _INT_MASK


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


def hash_set_capacity(size: int) -> int:
    """Bucket count of `new HashSet<>(collection)` for a collection of `size` elements."""
    return _table_size_for(max(int(size / _LOAD_FACTOR) + 1, _DEFAULT_CAPACITY))


def java_hash_set_order(keys_in_listing_order: Iterable[str]) -> list[str]:
    """Distinct keys in the order Java iterates `new HashSet<>(groupingBy(keys).keySet())`."""
    distinct = list(dict.fromkeys(keys_in_listing_order))
    mask = hash_set_capacity(len(distinct)) - 1
    ranked = sorted(
        enumerate(distinct), key=lambda item: (_spread(java_string_hash(item[1])) & mask, -item[0])
    )
    return [key for _, key in ranked]
