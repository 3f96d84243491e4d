"""Rows scanned from Parquet min/max statistics: row-group statistics, predicates, floors, a reader check.

A row group is scanned when its footer's min/max of every predicate column overlaps the predicate's
range, which is exactly what a statistics-pruning reader decides (Parquet row-group filtering in Spark,
pyarrow.dataset's `split_by_row_group(filter)`); `reader_rows_kept` asks pyarrow.dataset to prove it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

DOMAIN = 1_000_000  # a and b are uniform over [0, DOMAIN)
COLUMNS = ("a", "b")


@dataclass(frozen=True)
class RowGroupStats:
    """Row groups in file order: their rows, a/b min/max from the footers, and the file each sits in."""

    rows: np.ndarray
    a_min: np.ndarray
    a_max: np.ndarray
    b_min: np.ndarray
    b_max: np.ndarray
    file: np.ndarray

    @property
    def groups(self) -> int:
        return len(self.rows)

    @property
    def total_rows(self) -> int:
        return int(self.rows.sum())

    @property
    def mean_rows(self) -> float:
        return float(self.rows.mean()) if self.groups else 0.0

    def merged(self, k: int) -> RowGroupStats:
        """Each run of `k` consecutive row groups of one file as one group (the file's last run may be
        shorter). Exact: a group's min/max is the min of the mins and the max of the maxes of its parts,
        and its rows their sum, so this is the footer a writer cutting groups k times larger would write."""
        starts: list[int] = []
        for f in np.unique(self.file):
            first, last = np.flatnonzero(self.file == f)[[0, -1]]
            starts.extend(range(int(first), int(last) + 1, k))
        idx = np.asarray(starts, dtype=np.int64)
        return RowGroupStats(
            rows=np.add.reduceat(self.rows, idx),
            a_min=np.minimum.reduceat(self.a_min, idx),
            a_max=np.maximum.reduceat(self.a_max, idx),
            b_min=np.minimum.reduceat(self.b_min, idx),
            b_max=np.maximum.reduceat(self.b_max, idx),
            file=self.file[idx],
        )


def read_row_group_stats(paths: Sequence[Path]) -> RowGroupStats:
    """Footer statistics of `paths`, in the given order (every group must carry a/b min/max)."""
    rows, file_index = [], []
    bounds: dict[str, list[int]] = {f"{c}_{m}": [] for c in COLUMNS for m in ("min", "max")}
    for i, path in enumerate(paths):
        metadata = pq.ParquetFile(path).metadata
        names = [metadata.schema.column(j).path for j in range(metadata.num_columns)]
        positions = {c: names.index(c) for c in COLUMNS}
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            rows.append(group.num_rows)
            file_index.append(i)
            for c, j in positions.items():
                stats = group.column(j).statistics
                if stats is None or not stats.has_min_max:
                    raise ValueError(f"{path}: row group {g} has no min/max for column {c}")
                bounds[f"{c}_min"].append(int(stats.min))
                bounds[f"{c}_max"].append(int(stats.max))
    return RowGroupStats(
        rows=np.asarray(rows, dtype=np.int64),
        file=np.asarray(file_index, dtype=np.int64),
        **{k: np.asarray(v, dtype=np.int64) for k, v in bounds.items()},
    )


# ---------------------------------------------------------------- predicates


@dataclass(frozen=True)
class Predicate:
    """A range on `a` and/or `b` of `width` integer values each (None: that column is free)."""

    key: str
    label: str
    a_width: int | None
    b_width: int | None


PREDICATES = (
    Predicate("a_1pct", "a in 1% range", DOMAIN // 100, None),
    Predicate("b_1pct", "b in 1% range", None, DOMAIN // 100),
    Predicate("a_and_b_1pct", "a and b in 1% ranges", DOMAIN // 100, DOMAIN // 100),
    Predicate("a_0_1pct", "a in 0.1% range", DOMAIN // 1000, None),
    Predicate("a_eq", "a = value", 1, None),
)


@dataclass(frozen=True)
class Placement:
    """Inclusive bounds; None where the predicate leaves the column free."""

    a: tuple[int, int] | None
    b: tuple[int, int] | None

    def expression(self) -> ds.Expression:
        parts = []
        for column, bounds in (("a", self.a), ("b", self.b)):
            if bounds is not None:
                lo, hi = bounds
                field = ds.field(column)
                parts.append(field == lo if lo == hi else (field >= lo) & (field <= hi))
        expression = parts[0]
        for part in parts[1:]:
            expression = expression & part
        return expression


def placements(predicate: Predicate, count: int, rng: np.random.Generator) -> list[Placement]:
    def draw(width: int | None) -> tuple[int, int] | None:
        if width is None:
            return None
        lo = int(rng.integers(0, DOMAIN - width + 1))
        return lo, lo + width - 1

    return [Placement(draw(predicate.a_width), draw(predicate.b_width)) for _ in range(count)]


def rows_scanned(stats: RowGroupStats, chosen: Sequence[Placement]) -> np.ndarray:
    """Per placement: rows in the row groups whose min/max overlap every constrained column's range."""
    out = np.empty(len(chosen), dtype=np.int64)
    for i, p in enumerate(chosen):
        keep = np.ones(stats.groups, dtype=bool)
        if p.a is not None:
            keep &= (stats.a_max >= p.a[0]) & (stats.a_min <= p.a[1])
        if p.b is not None:
            keep &= (stats.b_max >= p.b[0]) & (stats.b_min <= p.b[1])
        out[i] = stats.rows[keep].sum()
    return out


@dataclass(frozen=True)
class Columns:
    """The table's a and b values (any order) with `a` sorted once, to count matching rows."""

    a: np.ndarray
    b: np.ndarray
    a_sorted: np.ndarray

    @classmethod
    def of(cls, a: np.ndarray, b: np.ndarray) -> Columns:
        return cls(a, b, np.sort(a))

    def matching(self, p: Placement) -> int:
        if p.b is None:
            assert p.a is not None
            lo = np.searchsorted(self.a_sorted, p.a[0], side="left")
            hi = np.searchsorted(self.a_sorted, p.a[1], side="right")
            return int(hi - lo)
        mask = (self.b >= p.b[0]) & (self.b <= p.b[1])
        if p.a is not None:
            mask &= (self.a >= p.a[0]) & (self.a <= p.a[1])
        return int(np.count_nonzero(mask))


def read_columns(paths: Sequence[Path]) -> Columns:
    table = pa.concat_tables(pq.read_table(p, columns=list(COLUMNS)) for p in paths)
    return Columns.of(
        table.column("a").to_numpy().astype(np.int32), table.column("b").to_numpy().astype(np.int32)
    )


# ---------------------------------------------------------------- floors


def perfect_floor(matching: int, group_rows: float) -> float:
    """The issue's "one row group per predicate": the fewest whole row groups that hold the matches
    (at least one), as if groups could be cut around each predicate."""
    return max(1, math.ceil(matching / group_rows)) * group_rows


def sorted_floor(matching: int, group_rows: float, total_rows: int) -> float:
    """Expected rows scanned when the table is sorted on the predicate's column and row groups of
    `group_rows` are fixed while the range lands anywhere: the `matching` consecutive rows span
    1 + (matching - 1) / group_rows groups on average (one group when nothing matches)."""
    return min(float(total_rows), group_rows + max(matching, 1) - 1)


def sorted_layout(a_sorted: np.ndarray, group_rows: np.ndarray) -> RowGroupStats:
    """Row groups of the given sizes (in order) over the table sorted on `a`: the floor for predicates
    on `a` at exactly those row-group sizes (b left free, so only `a` ranges may be asked of it)."""
    ends = np.cumsum(group_rows)
    if len(ends) and int(ends[-1]) != len(a_sorted):
        raise ValueError(f"row groups hold {int(ends[-1])} rows, the column {len(a_sorted)}")
    starts = ends - group_rows
    n = len(group_rows)
    return RowGroupStats(
        rows=np.asarray(group_rows, dtype=np.int64),
        a_min=a_sorted[starts].astype(np.int64),
        a_max=a_sorted[ends - 1].astype(np.int64),
        b_min=np.zeros(n, dtype=np.int64),
        b_max=np.full(n, DOMAIN, dtype=np.int64),
        file=np.zeros(n, dtype=np.int64),
    )


def square_tile_floor(predicate: Predicate, group_rows: float, total_rows: int) -> float:
    """Expected rows scanned when the (a, b) square is cut into equal square tiles of `group_rows` rows
    each (uniform data): a range of width w over tiles of side s hits w/s + 1 of them on average
    along its axis, every tile along a free axis."""
    per_side = math.sqrt(total_rows / group_rows)
    side = DOMAIN / per_side

    def hit(width: int | None) -> float:
        return per_side if width is None else min(per_side, width / side + 1)

    return min(float(total_rows), hit(predicate.a_width) * hit(predicate.b_width) * group_rows)


# ---------------------------------------------------------------- a real reader


def reader_rows_kept(paths: Sequence[Path], placement: Placement) -> tuple[int, int]:
    """(rows in the row groups pyarrow.dataset keeps after statistics pruning, rows it returns)."""
    dataset = ds.dataset([str(p) for p in paths], format="parquet")
    expression = placement.expression()
    kept = 0
    for fragment in dataset.get_fragments():
        for piece in fragment.split_by_row_group(expression):
            kept += sum(group.num_rows for group in piece.row_groups)
    matched = dataset.count_rows(filter=expression)
    return kept, matched


def write_groups_as_parquet(paths: Sequence[Path], stats: RowGroupStats, out: Path) -> Path:
    """a and b of `paths`, in file order, rewritten with one row group per group of `stats` (whose
    groups must cover the files in order): a file whose footers a reader can prune as `stats` say."""
    table = pa.concat_tables(pq.read_table(p, columns=list(COLUMNS)) for p in paths)
    if table.num_rows != stats.total_rows:
        raise ValueError(f"{out}: {table.num_rows} rows read, {stats.total_rows} in the row groups")
    with pq.ParquetWriter(out, table.schema, compression="snappy") as writer:
        start = 0
        for n in stats.rows.tolist():
            writer.write_table(table.slice(start, n), row_group_size=n)
            start += n
    return out


def _spread_bits(x: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros(len(x), dtype=np.uint64)
    for i in range(bits):
        out |= ((x >> np.uint64(i)) & np.uint64(1)) << np.uint64(2 * i)
    return out


def _textbook_hilbert(x: np.ndarray, y: np.ndarray, bits: int) -> np.ndarray:
    """Distance along the Hilbert curve over a 2^bits grid, by the classic quadrant-and-rotate walk
    from the top bit down (x's bit is the quadrant's high bit)."""
    x, y = x.astype(np.int64), y.astype(np.int64)
    side = 1 << bits
    d = np.zeros(len(x), dtype=np.int64)
    s = side >> 1
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        d += s * s * ((3 * rx.astype(np.int64)) ^ ry.astype(np.int64))
        turn = ~ry
        flip = turn & rx
        x[flip], y[flip] = side - 1 - x[flip], side - 1 - y[flip]
        x[turn], y[turn] = y[turn], x[turn]
        s >>= 1
    return d


def textbook_curve(a: np.ndarray, b: np.ndarray, groups: int, curve: str, bits: int = 16) -> RowGroupStats:
    """The rows in textbook curve order ("ZORDER": a's bit above b's at every level; "HILBERT": the
    classic curve) over 2^bits equal-width buckets of the uniform domain (i.e. exact quantiles), cut
    into `groups` equal row groups: what that curve can at best give at this group count, to judge a
    layout against (the project's curve code is not used, so a defect there would show)."""
    scale = np.uint64(1 << bits)
    ia = a.astype(np.uint64) * scale // np.uint64(DOMAIN)
    ib = b.astype(np.uint64) * scale // np.uint64(DOMAIN)
    if curve == "ZORDER":
        key = (_spread_bits(ia, bits) << np.uint64(1)) | _spread_bits(ib, bits)
    elif curve == "HILBERT":
        key = _textbook_hilbert(ia, ib, bits).astype(np.uint64)
    else:
        raise ValueError(f"unknown curve {curve!r}")
    order = np.argsort(key, kind="stable")
    sizes = np.full(groups, len(a) // groups, dtype=np.int64)
    sizes[: len(a) % groups] += 1
    ends = np.cumsum(sizes)
    starts = ends - sizes
    sa, sb = a[order], b[order]
    return RowGroupStats(
        rows=sizes,
        a_min=np.minimum.reduceat(sa, starts).astype(np.int64),
        a_max=np.maximum.reduceat(sa, starts).astype(np.int64),
        b_min=np.minimum.reduceat(sb, starts).astype(np.int64),
        b_max=np.maximum.reduceat(sb, starts).astype(np.int64),
        file=np.zeros(groups, dtype=np.int64),
    )
