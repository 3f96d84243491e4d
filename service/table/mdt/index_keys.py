"""Record keys of the MDT `column_stats` and `bloom_filters` partitions, and the file group each lands in.

Hudi 0.15 builds the keys from fixed-size hashes, each Base64'd with `java.util.Base64`'s standard
alphabet and padding (`Base64CodecUtil.encode`), then concatenated (`HoodieMetadataPayload`):

- bloom filter of a base file: `PartitionIndexID` + `FileIndexID` (`getBloomFilterRecordKey`);
- column stats of one column of a file: `ColumnIndexID` + `PartitionIndexID` + `FileIndexID`
  (`getColumnStatsIndexKey`).

`ColumnIndexID` and `PartitionIndexID` hash with `HashID.Size.BITS_64`: XXHash64 seeded with
`HashID.HASH_SEED = 0xdabadaba`, an `int` widened (sign-extended) to the `long` seed, the result
written big-endian (HBase `Bytes.toBytes(long)`). `FileIndexID` uses `BITS_128`: the MD5 digest. All
hash the UTF-8 bytes of the name. The partition is the data table's relative partition path, with
the non-partitioned `""` written as `"."` (`HoodieTableMetadataUtil.getColumnStatsIndexPartitionIdentifier`
/ `getBloomFilterIndexPartitionIdentifier`); the file is the bare file name.

A key goes to file group `mapRecordKeyToFileGroupIndex(key, n)` of its MDT partition, where n is the
partition's file group count, fixed when Hudi initialised the partition (its `.file.group.count`
config then); writers learn it from the partition's existing file groups
(`HoodieTableMetadataUtil.getPartitionLatestFileSlices`), and so do we.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from service.errors import CorruptTableError
from service.table.mdt.files_listing import parse_log_file_name
from service.table.mdt.timeline import MDT_BASE
from service.table.storage import Storage

COLUMN_STATS_PARTITION = "column_stats"  # MetadataPartitionType.COLUMN_STATS
BLOOM_FILTERS_PARTITION = "bloom_filters"  # MetadataPartitionType.BLOOM_FILTERS
RECORD_INDEX_PARTITION = "record_index"  # MetadataPartitionType.RECORD_INDEX
PARTITION_STATS_PARTITION = "partition_stats"  # MetadataPartitionType.PARTITION_STATS (Hudi 1.x)
# MetadataPartitionType.getFileIdPrefix: file group i of a partition is `<prefix>%04d-0`.
FILE_ID_PREFIXES = {
    COLUMN_STATS_PARTITION: "col-stats-",
    BLOOM_FILTERS_PARTITION: "bloom-filters-",
    RECORD_INDEX_PARTITION: "record-index-",
    PARTITION_STATS_PARTITION: "partition-stats-",
}
NON_PARTITIONED_ID = "."  # HoodieTableMetadataUtil.getPartitionIdentifier("")

_HASH_SEED = 0xDABADABA - (1 << 32)  # HashID.HASH_SEED: the int 0xdabadaba, negative in Java
_MASK64 = (1 << 64) - 1
_P1 = 0x9E3779B185EBCA87
_P2 = 0xC2B2AE3D27D4EB4F
_P3 = 0x165667B19E3779F9
_P4 = 0x85EBCA77C2B2AE63
_P5 = 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _round(acc: int, lane: int) -> int:
    acc = (acc + lane * _P2) & _MASK64
    return (_rotl(acc, 31) * _P1) & _MASK64


def _merge_round(acc: int, val: int) -> int:
    acc ^= _round(0, val)
    return (acc * _P1 + _P4) & _MASK64


def xxhash64(data: bytes, seed: int) -> int:
    """XXH64 of `data` (the algorithm of lz4-java's `XXHash64`, which Hudi's `HashID` calls), as an
    unsigned 64-bit value; `seed` is taken modulo 2^64 as Java's `long` bits."""
    seed &= _MASK64
    n = len(data)
    pos = 0
    if n >= 32:
        v1 = (seed + _P1 + _P2) & _MASK64
        v2 = (seed + _P2) & _MASK64
        v3 = seed
        v4 = (seed - _P1) & _MASK64
        while pos + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[pos : pos + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[pos + 8 : pos + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[pos + 16 : pos + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[pos + 24 : pos + 32], "little"))
            pos += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _MASK64
        for v in (v1, v2, v3, v4):
            h = _merge_round(h, v)
    else:
        h = (seed + _P5) & _MASK64
    h = (h + n) & _MASK64
    while pos + 8 <= n:
        h ^= _round(0, int.from_bytes(data[pos : pos + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _MASK64
        pos += 8
    if pos + 4 <= n:
        h ^= (int.from_bytes(data[pos : pos + 4], "little") * _P1) & _MASK64
        h = (_rotl(h, 23) * _P2 + _P3) & _MASK64
        pos += 4
    while pos < n:
        h ^= (data[pos] * _P5) & _MASK64
        h = (_rotl(h, 11) * _P1) & _MASK64
        pos += 1
    h ^= h >> 33
    h = (h * _P2) & _MASK64
    h ^= h >> 29
    h = (h * _P3) & _MASK64
    h ^= h >> 32
    return h


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _hash_id_64(name: str) -> str:
    """`HashID.hash(name, BITS_64)`, Base64'd: the id of a column or a partition."""
    return _b64(xxhash64(name.encode("utf-8"), _HASH_SEED).to_bytes(8, "big"))


def partition_identifier(partition_path: str) -> str:
    """`HoodieTableMetadataUtil.getPartitionIdentifier`: the name a partition is hashed (or keyed) by."""
    return NON_PARTITIONED_ID if partition_path == "" else partition_path


def column_index_id(column: str) -> str:
    """`new ColumnIndexID(column).asBase64EncodedString()`."""
    return _hash_id_64(column)


def partition_index_id(partition_path: str) -> str:
    """`new PartitionIndexID(getPartitionIdentifier(partition)).asBase64EncodedString()`."""
    return _hash_id_64(partition_identifier(partition_path))


def file_index_id(file_name: str) -> str:
    """`new FileIndexID(fileName).asBase64EncodedString()`: MD5 of the bare file name."""
    return _b64(hashlib.md5(file_name.encode("utf-8"), usedforsecurity=False).digest())


def _bare_name(file_name: str) -> str:
    if "/" in file_name or not file_name:
        raise ValueError(f"MDT index keys take a bare file name, not {file_name!r}")
    return file_name


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    """`HoodieMetadataPayload.getBloomFilterRecordKey(partition, baseFileName)`."""
    return partition_index_id(partition_path) + file_index_id(_bare_name(file_name))


def partition_stats_key(partition_path: str, column: str) -> str:
    """`HoodieMetadataPayload.getPartitionStatsIndexKey(partition, column)`: a partition's stats of one
    column; also the prefix of that column's `column_stats` keys in the partition."""
    return column_index_id(column) + partition_index_id(partition_path)


def column_stats_key(partition_path: str, file_name: str, column: str) -> str:
    """`HoodieMetadataPayload.getColumnStatsIndexKey(partition, columnRangeMetadata)`."""
    return column_index_id(column) + partition_index_id(partition_path) + file_index_id(_bare_name(file_name))


def _java_string_hash(text: str) -> int:
    """Java's `31 * h + charAt(i)` over UTF-16 code units, with `int` overflow."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def file_group_index(key: str, file_group_count: int) -> int:
    """`HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex`: `Math.abs(hash) % count` in Java ints.

    `Math.abs(Integer.MIN_VALUE)` stays negative, and Java's `%` keeps the dividend's sign; Hudi then
    takes `Math.abs` of the remainder.
    """
    if file_group_count <= 0:
        raise ValueError(f"file group count must be positive, not {file_group_count}")
    # Math.abs(MIN_VALUE) % n is negative or zero, and the outer abs gives |MIN_VALUE| mod n; for every
    # other hash both abs calls are plain. So the result is |hash| mod n throughout.
    return abs(_java_string_hash(key)) % file_group_count


def file_group_indexes(keys: Sequence[str], file_group_count: int) -> list[int]:
    """`file_group_index` of every key, ASCII keys computed column-wise (a clustering's record-index
    entries hash millions of them): Java's hash, one column of code units at a time, in uint32
    arithmetic that wraps as Java's int does."""
    if file_group_count <= 0:
        raise ValueError(f"file group count must be positive, not {file_group_count}")
    array = pa.array(keys, pa.string())
    if len(array) == 0 or not pc.all(pc.string_is_ascii(array)).as_py():
        return [file_group_index(k, file_group_count) for k in keys]
    lengths = pc.binary_length(array).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array)]
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8) if array.buffers()[2] is not None else None
    hashes = np.zeros(len(array), dtype=np.uint32)
    for length in np.unique(lengths):
        rows = np.nonzero(lengths == length)[0]
        h = np.zeros(len(rows), dtype=np.uint32)
        for j in range(int(length)):
            assert data is not None
            h = h * np.uint32(31) + data[offsets[rows] + j].astype(np.uint32)
        hashes[rows] = h
    signed = hashes.view(np.int32).astype(np.int64)
    return (np.abs(signed) % file_group_count).tolist()


def file_id(mdt_partition: str, index: int) -> str:
    """`HoodieTableMetadataUtil.getFileIDForFileGroup`: `<prefix>%04d-0`."""
    return f"{FILE_ID_PREFIXES[mdt_partition]}{index:04d}-0"


_HFILE = re.compile(r"^(?P<file_id>[^_]+)_\d+-\d+-\d+_\d+\.hfile\Z")
_FILE_ID = re.compile(r"^(?P<prefix>[a-z-]+-)(?P<index>\d{4,})(?:-(?P<suffix>\d+))?\Z")


def file_group_ids(mdt_partition: str, file_ids: Iterable[str], source: str) -> tuple[str, ...]:
    """The partition's file group ids in index order, from the ids of its files.

    The count Hudi hashes keys into is the number of these groups; they must be exactly
    `<prefix>0000-0 .. <prefix>(n-1)-0`, since a gap would send keys where Hudi's readers would not
    look for them (`HoodieTableMetadataUtil.getFileGroupIndexFromFileId` reads the index back).
    """
    prefix = FILE_ID_PREFIXES[mdt_partition]
    indexes: dict[int, str] = {}
    for fid in set(file_ids):
        m = _FILE_ID.match(fid)
        if m is None or m["prefix"] != prefix:
            raise CorruptTableError(
                f"{source}: file group {fid!r} does not belong in MDT partition {mdt_partition}"
            )
        indexes[int(m["index"])] = fid
    if not indexes:
        raise CorruptTableError(f"{source}: MDT partition {mdt_partition} has no file groups")
    if sorted(indexes) != list(range(len(indexes))):
        raise CorruptTableError(
            f"{source}: MDT partition {mdt_partition} has file groups {sorted(indexes)}, "
            f"not 0..{len(indexes) - 1}"
        )
    return tuple(indexes[i] for i in range(len(indexes)))


def mdt_file_group_ids(storage: Storage, mdt_partition: str) -> tuple[str, ...]:
    """The file groups of an MDT index partition as its files on storage name them (base HFiles
    `<fileId>_<token>_<instant>.hfile` and log files `.<fileId>_<instant>.log.<v>_<token>`)."""
    directory = f"{MDT_BASE}/{mdt_partition}"
    ids = set()
    for name in storage.list_file_names(directory):
        if (m := _HFILE.match(name)) is not None:
            ids.add(m["file_id"])
        elif (log := parse_log_file_name(name)) is not None:
            ids.add(log.file_id)
    return file_group_ids(mdt_partition, ids, storage.qualify(directory))
