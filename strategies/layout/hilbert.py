"""n-dimensional Hilbert index, vectorised: Skilling's transpose algorithm over numpy uint64 arrays.

J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707 (2004). `axes_to_transpose` turns n
coordinates of b bits into the "transposed" Hilbert index: the index's bits, read level by level from
the top with dimension 0 first, are exactly the Z-order interleave of the transposed coordinates. So the
sortable Hilbert key is `interleave(axes_to_transpose(coords))`. Every step is a whole-array bit
operation; the loop runs over the b levels and n dimensions, never over rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from strategies.layout.bits import WORD_BITS, interleave_words

_ONE = np.uint64(1)


def axes_to_transpose(dims: Sequence[np.ndarray], bits_per_dim: int) -> list[np.ndarray]:
    """Skilling's AxestoTranspose on copies of `dims` (each coordinate < 2**bits_per_dim)."""
    n = len(dims)
    if not 1 <= bits_per_dim <= WORD_BITS:
        raise ValueError(f"bits_per_dim must be in [1, 64], got {bits_per_dim}")
    x = [np.array(d, dtype=np.uint64, copy=True) for d in dims]
    if n == 1:
        return x  # the 1-D Hilbert curve is the line itself
    # Inverse undo: from the top level down, reflect (invert) or transpose (swap) the lower bits.
    scratch = np.empty_like(x[0])
    swap = np.empty_like(x[0])
    for level in range(bits_per_dim - 1, 0, -1):
        low = np.uint64((1 << level) - 1)
        shift = np.uint64(level)
        for i in range(n):
            # set: all ones where bit `level` of x[i] is set, else zero
            np.right_shift(x[i], shift, out=scratch)
            np.bitwise_and(scratch, _ONE, out=scratch)
            np.negative(scratch, out=scratch)  # 0 -> 0, 1 -> all ones (uint64 wrap-around)
            if i == 0:
                np.bitwise_and(scratch, low, out=scratch)
                np.bitwise_xor(x[0], scratch, out=x[0])
                continue
            # where set: x0 ^= low; else swap the low bits of x0 and x[i]
            np.bitwise_xor(x[0], x[i], out=swap)
            np.bitwise_and(swap, low, out=swap)
            np.bitwise_and(swap, ~scratch, out=swap)
            np.bitwise_and(scratch, low, out=scratch)
            np.bitwise_or(scratch, swap, out=scratch)
            np.bitwise_xor(x[0], scratch, out=x[0])
            np.bitwise_xor(x[i], swap, out=x[i])
    # Gray encode.
    for i in range(1, n):
        np.bitwise_xor(x[i], x[i - 1], out=x[i])
    # t's bit j is the XOR of the last coordinate's bits above j (a prefix XOR, in log2(64) steps).
    t = x[n - 1] >> _ONE
    for step in (1, 2, 4, 8, 16, 32):
        t ^= t >> np.uint64(step)
    if bits_per_dim < WORD_BITS:
        t &= np.uint64((1 << bits_per_dim) - 1)
    for i in range(n):
        np.bitwise_xor(x[i], t, out=x[i])
    return x


def hilbert_words(dims: Sequence[np.ndarray], bits_per_dim: int) -> np.ndarray:
    """Hilbert index as (N, W) uint64 words, word 0 most significant."""
    return interleave_words(axes_to_transpose(dims, bits_per_dim), bits_per_dim)
