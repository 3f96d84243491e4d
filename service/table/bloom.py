"""Hudi's record-key bloom filters (SIMPLE and DYNAMIC_V0), byte-compatible with Hudi's Java code.

Java's BLOOM index reads the filter from every base file's footer (`org.apache.hudi.bloomfilter`), so
files the product writes must carry a filter Java can deserialise and that answers `mightContain`
exactly as a Java-built one would. The layout is Hudi's `SimpleBloomFilter` /
`HoodieDynamicBoundedBloomFilter` (docs/format.md, "Base files"): Hadoop's bloom filter with
`nbHash` chained MurmurHash 2 rounds over the key's UTF-8 bytes, serialised big-endian and Base64'd.

Hashing is vectorised with numpy over whole arrays of keys (a clustering output file can hold
millions): per key, the seed-independent parts (mixed 4-byte blocks, tail) are computed once, then
each of the `nbHash` rounds runs over all keys at once, with keys sorted by block count so that
block `j` is a prefix slice. All arithmetic is on uint32 arrays, which wrap like Java's `int`.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from service.config.parquet import BloomFilterType, ParquetWriteConfig
from service.errors import ConfigError, CorruptTableError, HudiTableServiceError

_VERSION = -1  # InternalFilter's serialisation version marker
_MURMUR_HASH = 1  # Hash.MURMUR_HASH; the only hash Hudi's factory uses
_M = np.uint32(0x5BD1E995)
_M_INT = 0x5BD1E995
_S13, _S15, _S24 = np.uint32(13), np.uint32(15), np.uint32(24)
_MASK32 = 0xFFFFFFFF
# Keys hashed per numpy pass: large enough to amortise Python overhead, small enough for the
# working set (a few uint32 arrays per block) to stay in cache.
_CHUNK_KEYS = 1 << 16


@dataclass(frozen=True)
class BloomFilterConfig:
    """Bloom filter parameters, with Hudi's defaults (`HoodieIndexConfig`)."""

    num_entries: int = 60000
    """`hoodie.index.bloom.num_entries`: keys per filter (per row, for DYNAMIC_V0)."""
    fpp: float = 1e-9
    """`hoodie.index.bloom.fpp`: target false-positive probability at `num_entries` keys."""
    dynamic_max_entries: int = 100000
    """`hoodie.bloom.index.filter.dynamic.max.entries`: DYNAMIC_V0 stops adding rows past this."""
    filter_type: BloomFilterType = BloomFilterType.DYNAMIC_V0
    """`hoodie.bloom.index.filter.type`."""

    def __post_init__(self) -> None:
        if self.num_entries <= 0:
            raise ConfigError(f"hoodie.index.bloom.num_entries must be > 0, got {self.num_entries}")
        if not 0.0 < self.fpp < 1.0:
            raise ConfigError(f"hoodie.index.bloom.fpp must be in (0, 1), got {self.fpp}")
        if self.dynamic_max_entries <= 0:
            raise ConfigError(
                f"hoodie.bloom.index.filter.dynamic.max.entries must be > 0, got {self.dynamic_max_entries}"
            )
        if self.vector_size > np.iinfo(np.int32).max:
            raise ConfigError(f"bloom filter of {self.num_entries} keys at fpp {self.fpp} overflows an int")

    @classmethod
    def from_parquet_config(cls, config: ParquetWriteConfig) -> BloomFilterConfig:
        return cls(
            num_entries=config.bloom_num_entries,
            fpp=config.bloom_fpp,
            dynamic_max_entries=config.bloom_dynamic_max_entries,
            filter_type=config.bloom_filter_type,
        )

    @property
    def vector_size(self) -> int:
        """Bits per filter row: `ceil(n * -ln(fpp) / ln(2)^2)` (BloomFilterUtils.getBitSize)."""
        return math.ceil(self.num_entries * (-math.log(self.fpp) / (math.log(2) * math.log(2))))

    @property
    def num_hashes(self) -> int:
        """`ceil(ln(2) * vectorSize / n)` (BloomFilterUtils.getNumHashes)."""
        return math.ceil(math.log(2) * self.vector_size / self.num_entries)

    @property
    def max_rows(self) -> int:
        """DYNAMIC_V0 rows stop growing once `rows * num_entries >= dynamic_max_entries`."""
        return max(1, -(-self.dynamic_max_entries // self.num_entries))


# --------------------------------------------------------------------------- hashing
def murmur2(data: bytes, seed: int) -> int:
    """Hadoop's MurmurHash 2 of `data` with `seed`, as a Java `int` (scalar reference for tests)."""
    m = _M_INT
    h = (seed ^ len(data)) & _MASK32
    n_blocks = len(data) >> 2
    for i in range(n_blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    tail = data[4 * n_blocks :]
    if tail:
        # Java XORs the tail bytes in sign-extended: `(int) data[i] << s`.
        for byte, shift in zip(tail, (16, 8, 0)[3 - len(tail) :], strict=True):
            h ^= ((byte - 256 if byte >= 128 else byte) << shift) & _MASK32
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


@dataclass(frozen=True)
class _KeyBytes:
    """UTF-8 bytes of many keys, flat, with int64 offsets (Arrow's string layout)."""

    data: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.offsets) - 1


def _key_bytes(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> _KeyBytes:
    if not isinstance(keys, pa.Array | pa.ChunkedArray):
        keys = pa.array(keys, type=pa.large_string())
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks != 1 else keys.chunk(0)
    if not (pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type)):
        keys = keys.cast(pa.large_binary() if pa.types.is_binary(keys.type) else pa.large_string())
    if keys.null_count:
        raise HudiTableServiceError(f"record keys contain {keys.null_count} null value(s)")
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[keys.offset : keys.offset + len(keys) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    if len(keys) and np.any(offsets[1:] == offsets[:-1]):
        raise HudiTableServiceError("record keys contain an empty key (Hudi's bloom filter rejects them)")
    return _KeyBytes(data, offsets)


def _hash_sorted(
    kb: _KeyBytes, vector_size: int, num_hashes: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.intp]]:
    """Bit positions of all keys in `kb`, as Hadoop's HashFunction computes them.

    Returns `(positions, order)`: `positions[i, r]` is hash `i` of key `order[r]` (keys are processed
    sorted by block count, descending, so that the keys that still have block `j` are a prefix).
    """
    lengths = np.diff(kb.offsets)
    n = len(lengths)
    n_blocks = lengths >> 2
    order = np.argsort(-n_blocks, kind="stable")
    starts = kb.offsets[:-1][order]
    lengths_s = lengths[order]
    n_blocks_s = n_blocks[order]
    data = kb.data

    # Seed-independent parts, computed once: the mixed 4-byte blocks ...
    max_blocks = int(n_blocks_s[0]) if n else 0
    counts = np.searchsorted(-n_blocks_s, -np.arange(max_blocks), side="left").tolist()
    mixed_blocks: list[npt.NDArray[np.uint32]] = []
    for j in range(max_blocks):
        at = starts[: counts[j]] + 4 * j
        k = data[at].astype(np.uint32)
        k |= data[at + 1].astype(np.uint32) << 8
        k |= data[at + 2].astype(np.uint32) << 16
        k |= data[at + 3].astype(np.uint32) << 24
        k *= _M
        k ^= k >> _S24
        k *= _M
        mixed_blocks.append(k)
    # ... and the 1-3 tail bytes, XORed in sign-extended (`(int) data[i] << s` in Java). Keys without
    # a tail XOR 0 and multiply by 1, so every round treats all keys alike.
    left = lengths_s & 3
    tail_end = starts + lengths_s
    tail = np.zeros(n, dtype=np.uint32)
    for back, shift in ((3, 16), (2, 8), (1, 0)):
        has = left >= back
        signed = data[tail_end[has] - back].view(np.int8).astype(np.int32) << shift
        tail[has] ^= signed.view(np.uint32)
    tail_multiplier = np.where(left != 0, _M, np.uint32(1)).astype(np.uint32)
    len_u32 = lengths_s.astype(np.uint32)

    positions = np.empty((num_hashes, n), dtype=np.int32)
    h = np.empty(n, dtype=np.uint32)
    seed = np.zeros(n, dtype=np.uint32)
    modulus = np.int32(vector_size)
    for i in range(num_hashes):
        np.bitwise_xor(seed, len_u32, out=h)
        for j, k in enumerate(mixed_blocks):
            hj = h[: counts[j]]
            hj *= _M
            hj ^= k
        h ^= tail
        h *= tail_multiplier
        h ^= h >> _S13
        h *= _M
        h ^= h >> _S15
        seed, h = h, seed
        # Java: Math.abs(initval % vectorSize), with `%` truncating toward zero.
        np.abs(np.fmod(seed.view(np.int32), modulus), out=positions[i])
    return positions, order


def hash_positions(
    keys: pa.Array | pa.ChunkedArray | Sequence[str], vector_size: int, num_hashes: int
) -> npt.NDArray[np.int32]:
    """Bit positions of every key, shape `(num_hashes, len(keys))`, in input order."""
    kb = _key_bytes(keys)
    positions, order = _hash_sorted(kb, vector_size, num_hashes)
    out = np.empty_like(positions)
    out[:, order] = positions
    return out


# --------------------------------------------------------------------------- the filter
def _packed_size(vector_size: int) -> int:
    return (vector_size + 7) // 8


def serialized_length(config: BloomFilterConfig, num_keys: int) -> int:
    """Length of the Base64 footer value of a filter holding `num_keys` keys (for size planning)."""
    row = 13 + _packed_size(config.vector_size)
    if config.filter_type is BloomFilterType.SIMPLE:
        raw = row
    else:
        rows = min(config.max_rows, max(1, -(-num_keys // config.num_entries)))
        raw = 13 + 12 + rows * row
    return 4 * -(-raw // 3)


class HoodieBloomFilter:
    """A bloom filter over record keys, in Hudi's SIMPLE or DYNAMIC_V0 format.

    Keys are added in file order (DYNAMIC_V0 assigns keys to rows by their position in the
    sequence, exactly as `InternalDynamicBloomFilter.add` does), in batches of any size.
    """

    def __init__(self, config: BloomFilterConfig | None = None) -> None:
        config = config or BloomFilterConfig()
        self._type = config.filter_type
        self._vector_size = config.vector_size
        self._num_hashes = config.num_hashes
        self._num_entries = config.num_entries
        self._max_rows = config.max_rows
        self._rows: list[npt.NDArray[np.bool_]] = [np.zeros(self._vector_size, dtype=np.bool_)]
        self._num_keys = 0
        self._current_row_keys = 0  # DYNAMIC_V0's `currentNbRecord`
        self._frozen = False  # a deserialised DYNAMIC_V0 lost the state `add` needs (as in Java)

    # ----------------------------------------------------------------- properties
    @property
    def type_code(self) -> BloomFilterType:
        return self._type

    @property
    def num_keys(self) -> int:
        """Keys added through this object (0 for a deserialised filter)."""
        return self._num_keys

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    @property
    def vector_size(self) -> int:
        return self._vector_size

    @property
    def num_hashes(self) -> int:
        return self._num_hashes

    # ----------------------------------------------------------------- adding
    def add(self, key: str) -> None:
        self.add_keys([key])

    def add_keys(self, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> None:
        """Add keys in order. Raises on null or empty keys, as Hudi's writer would fail on them."""
        if self._frozen:
            raise HudiTableServiceError("cannot add keys to a deserialised DYNAMIC_V0 bloom filter")
        kb = _key_bytes(keys)
        for start in range(0, len(kb), _CHUNK_KEYS):
            stop = min(start + _CHUNK_KEYS, len(kb))
            chunk = _KeyBytes(kb.data, kb.offsets[start : stop + 1])
            positions, order = _hash_sorted(chunk, self._vector_size, self._num_hashes)
            if self._type is BloomFilterType.SIMPLE:
                self._rows[0][positions.ravel()] = True
            else:
                self._add_dynamic(positions, self._num_keys + order)
            self._num_keys += stop - start
        if self._type is BloomFilterType.DYNAMIC_V0:
            if self._num_keys >= 1 << 31:
                raise HudiTableServiceError(f"{self._num_keys} keys overflow Hudi's bloom filter counters")
            self._current_row_keys = self._num_keys - (len(self._rows) - 1) * self._num_entries

    def _add_dynamic(self, positions: npt.NDArray[np.int32], key_index: npt.NDArray[np.intp]) -> None:
        # Keys 0..nr-1 go to row 0, the next nr to row 1, ... while rows * nr < maxEntries. After
        # that Java sets `reachedMax`: the next key goes to row 0, then keys go round-robin over
        # the rows starting again at row 0 (`matrix[curMatrixIndex++ % rows]`).
        nr, max_rows = self._num_entries, self._max_rows
        cap = nr * max_rows
        g = key_index.astype(np.int64)
        row_of_key = np.where(g < cap, g // nr, np.where(g == cap, 0, (g - cap - 1) % max_rows))
        needed = min(max_rows, int(g.max()) // nr + 1)
        while len(self._rows) < needed:
            self._rows.append(np.zeros(self._vector_size, dtype=np.bool_))
        for r in np.unique(row_of_key).tolist():
            self._rows[r][positions[:, row_of_key == r].ravel()] = True

    # ----------------------------------------------------------------- membership
    def might_contain_keys(self, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> npt.NDArray[np.bool_]:
        """For each key: True if some row has all its bits set (maybe present), else False."""
        kb = _key_bytes(keys)
        out = np.empty(len(kb), dtype=np.bool_)
        for start in range(0, len(kb), _CHUNK_KEYS):
            stop = min(start + _CHUNK_KEYS, len(kb))
            chunk = _KeyBytes(kb.data, kb.offsets[start : stop + 1])
            positions, order = _hash_sorted(chunk, self._vector_size, self._num_hashes)
            hit_sorted = np.zeros(stop - start, dtype=np.bool_)
            for row in self._rows:
                hit_sorted |= row[positions].all(axis=0)
            out[start + order] = hit_sorted
        return out

    def might_contain(self, key: str) -> bool:
        return bool(self.might_contain_keys([key])[0])

    # ----------------------------------------------------------------- serialisation
    def to_bytes(self) -> bytes:
        """The Java `DataOutput` bytes (before Base64)."""
        header = struct.pack(">iibi", _VERSION, self._num_hashes, _MURMUR_HASH, self._vector_size)
        rows = [header + np.packbits(row, bitorder="little").tobytes() for row in self._rows]
        if self._type is BloomFilterType.SIMPLE:
            return rows[0]
        counters = struct.pack(">iii", self._num_entries, self._current_row_keys, len(self._rows))
        return b"".join([header, counters, *rows])

    def serialize_to_string(self) -> str:
        """The footer value `org.apache.hudi.bloomfilter` (Java's `serializeToString()`)."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    @classmethod
    def from_string(cls, serialized: str, type_code: BloomFilterType | str | None) -> HoodieBloomFilter:
        """Inverse of `serialize_to_string`; `type_code` None means SIMPLE (as Java's reader does)."""
        filter_type = BloomFilterType(type_code or BloomFilterType.SIMPLE)
        try:
            raw = base64.b64decode(serialized, validate=True)
            return cls._from_bytes(raw, filter_type)
        except (ValueError, struct.error) as exc:
            raise CorruptTableError(f"cannot parse {filter_type} bloom filter: {exc}") from exc

    @classmethod
    def _from_bytes(cls, raw: bytes, filter_type: BloomFilterType) -> HoodieBloomFilter:
        view = memoryview(raw)
        num_hashes, vector_size, pos = _read_filter_header(view, 0)
        bloom = cls.__new__(cls)
        bloom._type = filter_type
        bloom._vector_size = vector_size
        bloom._num_hashes = num_hashes
        bloom._num_keys = 0
        if filter_type is BloomFilterType.SIMPLE:
            bloom._rows = [_read_bits(view, pos, vector_size)]
            bloom._num_entries, bloom._max_rows, bloom._current_row_keys = 0, 1, 0
            bloom._frozen = False
            pos += _packed_size(vector_size)
        else:
            bloom._num_entries, bloom._current_row_keys, n_rows = struct.unpack_from(">iii", view, pos)
            pos += 12
            bloom._rows = []
            for _ in range(n_rows):
                row_hashes, row_size, pos = _read_filter_header(view, pos)
                if (row_hashes, row_size) != (num_hashes, vector_size):
                    raise ValueError(f"row shape ({row_hashes}, {row_size}) != ({num_hashes}, {vector_size})")
                bloom._rows.append(_read_bits(view, pos, vector_size))
                pos += _packed_size(vector_size)
            bloom._max_rows = max(1, n_rows)
            bloom._frozen = True
        if pos != len(raw):
            raise ValueError(f"{len(raw) - pos} trailing bytes")
        if filter_type is BloomFilterType.SIMPLE:
            # A SIMPLE filter may keep growing after deserialisation, as in Java.
            bloom._frozen = False
        return bloom


def _read_filter_header(view: memoryview, pos: int) -> tuple[int, int, int]:
    version, num_hashes, hash_type, vector_size = struct.unpack_from(">iibi", view, pos)
    if version != _VERSION:
        raise ValueError(f"unsupported filter version {version}")
    if hash_type != _MURMUR_HASH:
        raise ValueError(f"unsupported hash type {hash_type} (only MurmurHash, 1)")
    if num_hashes <= 0 or vector_size <= 0:
        raise ValueError(f"invalid nbHash {num_hashes} / vectorSize {vector_size}")
    return num_hashes, vector_size, pos + 13


def _read_bits(view: memoryview, pos: int, vector_size: int) -> npt.NDArray[np.bool_]:
    size = _packed_size(vector_size)
    if pos + size > len(view):
        raise ValueError("bit vector truncated")
    packed = np.frombuffer(view[pos : pos + size], dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[:vector_size].astype(np.bool_)
