"""Z-order interleaving against a naive bit-by-bit reference; Hilbert: bijective and continuous."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies.layout.bits import interleave_bytes, interleave_words, key_bytes, words_to_bytes
from strategies.layout.hilbert import hilbert_words


def _naive_interleave(coords: list[int], bits: int) -> int:
    """Bit by bit: from the top level down, dimension 0 first."""
    key = 0
    for level in reversed(range(bits)):
        for c in coords:
            key = (key << 1) | ((c >> level) & 1)
    return key


def _words_to_int(row: np.ndarray) -> int:
    value = 0
    for w in row.tolist():
        value = (value << 64) | w
    return value


@given(
    st.integers(1, 64).flatmap(
        lambda bits: st.tuples(
            st.just(bits),
            st.lists(st.tuples(st.integers(0, 2**bits - 1), st.integers(0, 2**bits - 1)), min_size=1),
        )
    )
)
def test_zorder_two_dims_matches_naive_interleave(case: tuple[int, list[tuple[int, int]]]) -> None:
    bits, points = case
    xs = np.array([p[0] for p in points], dtype=np.uint64)
    ys = np.array([p[1] for p in points], dtype=np.uint64)
    words = interleave_words([xs, ys], bits)
    keys = interleave_bytes([xs, ys], bits)
    assert keys.shape == (len(points), key_bytes(2, bits))
    for (x, y), row, raw in zip(points, words, keys, strict=True):
        expected = _naive_interleave([x, y], bits)
        assert _words_to_int(row) == expected
        assert int.from_bytes(raw.tobytes(), "big") == expected


@pytest.mark.parametrize("dims", [1, 3, 5, 9, 13])
@given(data=st.data())
def test_zorder_n_dims_matches_naive_interleave(dims: int, data: st.DataObject) -> None:
    bits = data.draw(st.integers(1, 64))
    point = st.tuples(*[st.integers(0, 2**bits - 1)] * dims)
    points = data.draw(st.lists(point, min_size=1, max_size=20))
    columns = [np.array([p[d] for p in points], dtype=np.uint64) for d in range(dims)]
    words = interleave_words(columns, bits)
    for p, row in zip(points, words, strict=True):
        assert _words_to_int(row) == _naive_interleave(list(p), bits)


def test_zorder_first_column_is_most_significant() -> None:
    keys = interleave_bytes([np.array([1, 0], dtype=np.uint64), np.array([0, 1], dtype=np.uint64)], 64)
    assert keys[0].tobytes() == bytes(15) + b"\x02"
    assert keys[1].tobytes() == bytes(15) + b"\x01"


def test_words_to_bytes_right_aligns_big_endian() -> None:
    words = np.array([[0x0102, 0x0304050607080910]], dtype=np.uint64)
    assert words_to_bytes(words, 10).tobytes() == bytes.fromhex("01020304050607080910")


def _grid(dims: int, bits: int) -> list[np.ndarray]:
    cells = np.array(list(itertools.product(range(2**bits), repeat=dims)), dtype=np.uint64)
    return [cells[:, d] for d in range(dims)]


def _walk(dims: int, bits: int, bits_per_dim: int) -> np.ndarray:
    """The grid [0, 2^bits)^dims ordered by Hilbert index computed with `bits_per_dim` bits."""
    coords = _grid(dims, bits)
    index = np.array([_words_to_int(row) for row in hilbert_words(coords, bits_per_dim)], dtype=object)
    order = np.argsort(index)
    assert sorted(index.tolist()) == list(range(2 ** (dims * bits))), "not a bijection onto the index range"
    return np.stack(coords, axis=1)[order].astype(np.int64)


@pytest.mark.parametrize(("dims", "bits"), [(2, 1), (2, 2), (2, 3), (2, 5), (3, 1), (3, 2), (3, 3), (4, 2)])
def test_hilbert_full_grid_is_a_bijective_unit_step_walk(dims: int, bits: int) -> None:
    path = _walk(dims, bits, bits)
    steps = np.abs(np.diff(path, axis=0)).sum(axis=1)
    assert (steps == 1).all()
    assert path[0].tolist() == [0] * dims  # starts at the origin


@pytest.mark.parametrize(("dims", "bits", "bits_per_dim"), [(2, 3, 64), (2, 4, 17), (3, 2, 64), (3, 2, 21)])
def test_hilbert_origin_subcube_of_a_wide_curve_is_walked_first_and_continuously(
    dims: int, bits: int, bits_per_dim: int
) -> None:
    path = _walk(dims, bits, bits_per_dim)
    assert (np.abs(np.diff(path, axis=0)).sum(axis=1) == 1).all()


def test_hilbert_two_dims_order_two_matches_the_textbook_curve() -> None:
    path = _walk(2, 1, 1)
    assert path.tolist() == [[0, 0], [0, 1], [1, 1], [1, 0]]


def test_hilbert_one_dim_is_the_identity() -> None:
    x = np.array([5, 0, 3], dtype=np.uint64)
    assert hilbert_words([x], 64)[:, 0].tolist() == [5, 0, 3]
