"""Bit interleaving (Z-order / Morton) of n unsigned coordinates into one fixed-width big-endian key.

Level by level from the most significant bit, dimension 0 first: for 2 dims of 2 bits, (x1 x0, y1 y0)
becomes `x1 y1 x0 y0`, as Hudi's `BinaryUtil.interleaving` orders bits. The key is the n*b-bit
integer, right-aligned in ceil(n*b/8) big-endian bytes, so unsigned byte order is key order.

Vectorised by chunks of c bits per lookup: a 2^c-entry table spreads a chunk's bits n apart, and the
spread is OR-ed into place; about 8n/c table look-ups per 8 bits instead of one op per bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

WORD_BITS = 64


def key_bytes(num_dims: int, bits_per_dim: int) -> int:
    return (num_dims * bits_per_dim + 7) // 8


@lru_cache(maxsize=64)
def _spread_table(chunk_bits: int, stride: int) -> np.ndarray:
    """Entry v: v's bit j moved to bit j*stride."""
    values = np.arange(1 << chunk_bits, dtype=np.uint64)
    table = np.zeros(1 << chunk_bits, dtype=np.uint64)
    for j in range(chunk_bits):
        table |= ((values >> np.uint64(j)) & np.uint64(1)) << np.uint64(j * stride)
    table.setflags(write=False)
    return table


def interleave_words(dims: Sequence[np.ndarray], bits_per_dim: int) -> np.ndarray:
    """The interleaved key as (N, W) uint64 words, word 0 most significant; W = ceil(n*b/64).

    Each coordinate must be < 2**bits_per_dim (uint64).
    """
    n = len(dims)
    if n == 0:
        raise ValueError("interleaving needs at least one dimension")
    if not 1 <= bits_per_dim <= WORD_BITS:
        raise ValueError(f"bits_per_dim must be in [1, 64], got {bits_per_dim}")
    rows = len(dims[0])
    total_bits = n * bits_per_dim
    num_words = (total_bits + WORD_BITS - 1) // WORD_BITS
    words = np.zeros((num_words, rows), dtype=np.uint64)  # row-major per word: contiguous OR targets
    chunk_bits = min(8, (WORD_BITS - 1) // n + 1)  # a spread chunk spans (c-1)*n+1 <= 64 bits
    span = (chunk_bits - 1) * n + 1
    table = _spread_table(chunk_bits, n)
    chunk_mask = np.uint64((1 << chunk_bits) - 1)
    for d, coords in enumerate(dims):
        x = np.asarray(coords, dtype=np.uint64)
        for k in range((bits_per_dim + chunk_bits - 1) // chunk_bits):
            chunk = ((x >> np.uint64(k * chunk_bits)) & chunk_mask).astype(np.intp)
            spread = table[chunk]
            pos = k * chunk_bits * n + (n - 1 - d)  # bit position counted from the key's least bit
            word, offset = divmod(pos, WORD_BITS)
            if word >= num_words:
                continue
            words[num_words - 1 - word] |= spread << np.uint64(offset)
            if offset + span > WORD_BITS and word + 1 < num_words:
                words[num_words - 2 - word] |= spread >> np.uint64(WORD_BITS - offset)
    return np.ascontiguousarray(words.T)


def words_to_bytes(words: np.ndarray, num_bytes: int) -> np.ndarray:
    """(N, W) uint64 words (word 0 most significant) to (N, num_bytes) big-endian bytes, right-aligned."""
    rows, num_words = words.shape
    raw = np.ascontiguousarray(words.astype(">u8")).view(np.uint8).reshape(rows, num_words * 8)
    return np.ascontiguousarray(raw[:, num_words * 8 - num_bytes :])


def interleave_bytes(dims: Sequence[np.ndarray], bits_per_dim: int) -> np.ndarray:
    """The interleaved key as (N, ceil(n*b/8)) big-endian bytes."""
    return words_to_bytes(interleave_words(dims, bits_per_dim), key_bytes(len(dims), bits_per_dim))
