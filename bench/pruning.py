"""Query pruning after clustering: rows a statistics-pruning reader scans, per layout and predicate.

One input table (the clustering benchmark's builder: a copy-on-write Hudi table of many small base
files, here snappy, rows in random order, columns a, b uniform over [0, 1e6) and independent, a
double, a 16-character string, an event time) is clustered once per layout by the project's own
`schedule_clustering` + `execute_clustering` (one clustering group, so the whole table is sorted
together): LINEAR(a, b), ZORDER(a, b) and HILBERT(a, b), each with DIRECT and SAMPLE curve building,
next to the table as written. The rewrites use snappy (pruning depends on min/max only, never on the
codec) and a `hoodie.parquet.block.size` chosen from the measured compressed bytes per row, so row
groups come out near the small granularity (50,000 rows); the large granularity (200,000 rows) merges
each run of 4 consecutive row groups of a file, which is exact (a group's min/max is the min/max of
its parts'). The input's own files are one row group of the small granularity each.

For each predicate (32 seeded random placements), rows scanned is the rows of every row group whose
footer min/max overlaps the predicate; a pyarrow.dataset reader's pruning is asked for the same
count on a few cases (the real files, and for the merged granularity a file rewritten with the merged
row groups) to prove the counting.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.clustering import InputTable, build_input_table, fresh_copy, run_clustering, start_session
from bench.common import RESULTS_DIR, bench_parser, command_line, print_table, stopwatch, write_results
from bench.contenders import load_average
from bench.pruning_count import (
    PREDICATES,
    Columns,
    Placement,
    Predicate,
    RowGroupStats,
    perfect_floor,
    placements,
    read_columns,
    read_row_group_stats,
    reader_rows_kept,
    rows_scanned,
    sorted_floor,
    sorted_layout,
    square_tile_floor,
    textbook_curve,
    write_groups_as_parquet,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NAME = "pruning"
DOCS_CHART = Path(__file__).resolve().parent.parent / "docs" / "results" / "pruning.png"
CODEC = "snappy"
FIRST_BYTES_PER_ROW = 75.0  # snappy, 50k-row groups of this table (measured); later runs use the last run's
TARGETS = {
    "hilbert_square_tile": 1.3,
    "zorder_sample_balance": 1.2,
    "linear_sorted": 1.0,
    "hilbert_50k": 180.0,
}


@dataclass(frozen=True)
class Layout:
    label: str
    strategy: str | None  # None: the table as written
    method: str = "DIRECT"


LAYOUTS = (
    Layout("as written", None),
    Layout("LINEAR", "LINEAR"),
    Layout("ZORDER DIRECT", "ZORDER", "DIRECT"),
    Layout("ZORDER SAMPLE", "ZORDER", "SAMPLE"),
    Layout("HILBERT DIRECT", "HILBERT", "DIRECT"),
    Layout("HILBERT SAMPLE", "HILBERT", "SAMPLE"),
)
# Layouts whose merged (large) granularity is also checked with a reader on a rewritten file.
MERGED_CHECKS = ("LINEAR", "ZORDER SAMPLE", "HILBERT SAMPLE")


@dataclass(frozen=True)
class Options:
    rows: int
    rows_per_group: int = 50_000  # the small granularity; the input's files hold this many rows each
    merge: int = 4  # the large granularity is this many small groups
    placements: int = 32
    seed: int = 7
    work_dir: Path | None = None
    results_dir: Path | None = None
    chart_path: Path | None = None  # None: docs/results/pruning.png

    @property
    def files(self) -> int:
        return math.ceil(self.rows / self.rows_per_group)

    @classmethod
    def quick(cls) -> Options:
        return cls(rows=400_000, rows_per_group=10_000)

    @classmethod
    def full(cls) -> Options:
        return cls(rows=20_000_000)


@dataclass(frozen=True)
class Granularity:
    key: str
    nominal_rows: int
    merge: int  # small groups per group


@dataclass
class LayoutResult:
    layout: Layout
    files: list[Path]
    stats: dict[str, RowGroupStats]  # granularity key -> row groups
    scanned: dict[tuple[str, str], np.ndarray]  # (granularity, predicate) -> per placement
    seconds: float = 0.0
    block_size_bytes: int | None = None
    groups: int | None = None
    output_bytes: int = 0


def _granularities(options: Options) -> tuple[Granularity, Granularity]:
    large = options.rows_per_group * options.merge
    return (
        Granularity(f"{large}", large, options.merge),
        Granularity(f"{options.rows_per_group}", options.rows_per_group, 1),
    )


def _new_base_files(table: InputTable) -> list[Path]:
    before = set(table.files)
    return sorted(
        p for p in table.base.glob("*.parquet") if p.name not in before and not p.name.startswith(".")
    )


def _cluster(
    session: SparkSession,
    source: InputTable,
    layout: Layout,
    work: Path,
    options: Options,
    bytes_per_row: float,
) -> tuple[InputTable, list[Path], float, int, int | None]:
    assert layout.strategy is not None
    copy = fresh_copy(source, work / _copy_name(layout))
    block = int(bytes_per_row * options.rows_per_group)
    estimate = int(options.rows * bytes_per_row * 1.5)
    settings = {
        "hoodie.parquet.block.size": str(block),
        # One group (the whole table sorted together) and one output file per writer task.
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(max(2 * source.bytes, 2**31)),
        "hoodie.clustering.plan.strategy.small.file.limit": str(max(2 * source.bytes, 2**31)),
    }
    with stopwatch() as sw:
        run = run_clustering(
            session, copy, layout.strategy, layout.method, CODEC, max(estimate, 64 * 2**20), 1, settings
        )
    return copy, _new_base_files(copy), sw.seconds, block, run.groups


def _next_bytes_per_row(stats: RowGroupStats, current: float, wanted_rows: int) -> float:
    """Scale the guess by how far the inner row groups (not a file's first, probing, or last) missed."""
    inner = np.ones(stats.groups, dtype=bool)
    for f in np.unique(stats.file):
        where = np.flatnonzero(stats.file == f)
        inner[where[[0, -1]]] = False
    if not inner.any():
        return current
    factor = wanted_rows / float(stats.rows[inner].mean())
    return current * min(2.0, max(0.5, factor))


def _copy_name(layout: Layout) -> str:
    return layout.label.replace(" ", "-")


def _measure(
    session: SparkSession,
    source: InputTable,
    layout: Layout,
    work: Path,
    options: Options,
    bytes_per_row: float,
    chosen: Mapping[str, list[Placement]],
) -> LayoutResult:
    """Cluster a copy of the input into `layout` (or take the input as written) and count rows scanned."""
    if layout.strategy is None:
        files, seconds, block, groups = [source.base / p for p in source.files], 0.0, None, None
    else:
        _, files, seconds, block, groups = _cluster(session, source, layout, work, options, bytes_per_row)
    small = read_row_group_stats(files)
    if small.total_rows != options.rows:
        raise RuntimeError(f"{layout.label}: {small.total_rows:,} rows in the output, not {options.rows:,}")
    # The input's files are one small row group each: its large groups merge consecutive files
    # (files k times larger, as a streaming writer with a larger target would leave them).
    mergeable = small if layout.strategy else replace(small, file=np.zeros_like(small.file))
    granularities = _granularities(options)
    stats = {g.key: mergeable.merged(g.merge) if g.merge > 1 else small for g in granularities}
    scanned = {
        (g.key, p.key): rows_scanned(stats[g.key], chosen[p.key]) for g in granularities for p in PREDICATES
    }
    print(
        f"  {layout.label}: {small.groups} row groups of {small.mean_rows:,.0f} rows on average"
        + (f", clustered in {seconds:.1f}s (block size {block:,} B)" if block else ""),
        flush=True,
    )
    output_bytes = sum(p.stat().st_size for p in files)
    return LayoutResult(layout, files, stats, scanned, seconds, block, groups, output_bytes)


def run(options: Options, spark: SparkSession | None = None, command: str | None = None) -> dict[str, Any]:
    """Build, cluster per layout, count, cross-check, print, write JSON and the chart; returns the payload."""
    work = Path(tempfile.mkdtemp(prefix="hts-bench-pruning-", dir=options.work_dir))
    session: SparkSession | None = spark
    started = time.perf_counter()
    granularities = _granularities(options)
    small = granularities[1]
    load_before = load_average()
    loads: list[dict[str, Any]] = []
    try:
        with stopwatch() as built:
            source = build_input_table(work / "input", options.files, options.rows, options.seed, CODEC)
        columns = read_columns([source.base / p for p in source.files])
        print(
            f"input: {len(source.files)} files, {source.rows:,} rows, {source.bytes / 2**20:.1f} MB "
            f"(built in {built.seconds:.1f}s)",
            flush=True,
        )
        rng = np.random.default_rng(options.seed)
        chosen = {p.key: placements(p, options.placements, rng) for p in PREDICATES}
        matching = {
            k: np.asarray([columns.matching(pl) for pl in v], dtype=np.int64) for k, v in chosen.items()
        }
        session = spark if spark is not None else start_session(work)
        bytes_per_row = FIRST_BYTES_PER_ROW
        results: list[LayoutResult] = []
        checks: list[dict[str, Any]] = []
        for layout in LAYOUTS:
            load = {"layout": layout.label, "load_before": load_average()}
            result = _measure(session, source, layout, work, options, bytes_per_row, chosen)
            loads.append(load | {"load_after": load_average()})
            if layout.strategy is not None:
                bytes_per_row = _next_bytes_per_row(
                    result.stats[small.key], bytes_per_row, small.nominal_rows
                )
            results.append(result)
            checks += _cross_check(result, granularities, chosen, matching, work)
            shutil.rmtree(work / _copy_name(layout), ignore_errors=True)
        payload = _payload(
            options, source, results, columns, chosen, matching, checks, granularities, command
        )
        payload["seconds_total"] = round(time.perf_counter() - started, 1)
        payload["load_before"], payload["rounds"] = load_before, loads
        _print(payload)
        path = write_results(NAME, payload, options.results_dir)
        from bench.pruning_chart import draw

        chart = draw(payload, options.chart_path or DOCS_CHART)
        print(f"\nwrote {path} and {chart} ({payload['seconds_total']:.0f}s in all)", flush=True)
        payload["results_path"] = str(path)
        payload["chart_path"] = str(chart)
        return payload
    finally:
        if spark is None and session is not None:
            session.stop()
        shutil.rmtree(work, ignore_errors=True)


def _cross_check(
    result: LayoutResult,
    granularities: Sequence[Granularity],
    chosen: Mapping[str, list[Placement]],
    matching: Mapping[str, np.ndarray],
    work: Path,
) -> list[dict[str, Any]]:
    """The first placement of every predicate through pyarrow.dataset: on the real files at the small
    granularity, and for MERGED_CHECKS on a file rewritten with the merged row groups."""
    cases: list[tuple[Granularity, Sequence[Path]]] = []
    for g in granularities:
        if g.merge == 1:
            cases.append((g, result.files))
        elif result.layout.label in MERGED_CHECKS:
            merged = write_groups_as_parquet(
                result.files, result.stats[g.key], work / "merged-groups.parquet"
            )
            cases.append((g, [merged]))
    out = []
    for g, paths in cases:
        for p in PREDICATES:
            kept, matched = reader_rows_kept(paths, chosen[p.key][0])
            ours = int(result.scanned[(g.key, p.key)][0])
            out.append(
                {
                    "layout": result.layout.label,
                    "granularity": g.key,
                    "predicate": p.key,
                    "files": "base files" if g.merge == 1 else "rewritten with merged row groups",
                    "rows_scanned_counted": ours,
                    "rows_kept_by_reader": kept,
                    "matching_counted": int(matching[p.key][0]),
                    "rows_returned_by_reader": matched,
                    "equal": ours == kept and int(matching[p.key][0]) == matched,
                }
            )
    (work / "merged-groups.parquet").unlink(missing_ok=True)
    return out


# ---------------------------------------------------------------- figures


def _figure(
    result: LayoutResult,
    unclustered: LayoutResult,
    g: Granularity,
    p: Predicate,
    matching: np.ndarray,
) -> dict[str, Any]:
    scanned = result.scanned[(g.key, p.key)]
    base = unclustered.scanned[(g.key, p.key)]
    mean, match = float(scanned.mean()), float(matching.mean())
    return {
        "layout": result.layout.label,
        "granularity": g.key,
        "predicate": p.key,
        "row_groups": result.stats[g.key].groups,
        "mean_rows_per_group": round(result.stats[g.key].mean_rows, 1),
        "rows_scanned_mean": round(mean, 1),
        "rows_scanned_worst": int(scanned.max()),
        "matching_mean": round(match, 2),
        "scanned_per_matching": round(mean / match, 2) if match else None,
        "reduction_vs_unclustered": round(float(base.mean()) / mean, 2) if mean else None,
    }


def _floors(
    options: Options, g: Granularity, p: Predicate, matching: np.ndarray, group_rows: float
) -> dict[str, Any]:
    return {
        "granularity": g.key,
        "predicate": p.key,
        "group_rows": round(group_rows, 1),
        "matching_mean": round(float(matching.mean()), 2),
        "perfect_floor_mean": round(float(np.mean([perfect_floor(int(m), group_rows) for m in matching])), 1),
        "sorted_floor_mean": round(
            float(np.mean([sorted_floor(int(m), group_rows, options.rows) for m in matching])), 1
        ),
        "square_tile_floor": round(square_tile_floor(p, group_rows, options.rows), 1),
    }


TEXTBOOK_SAMPLE_ROWS = 2_000_000


def _textbook(
    options: Options,
    results: Sequence[LayoutResult],
    granularities: Sequence[Granularity],
    columns: Columns,
    chosen: Mapping[str, list[Placement]],
) -> list[dict[str, Any]]:
    """Textbook Z-order and Hilbert of (a sample of) the same rows, cut into as many row groups as the
    SAMPLE layout has, on the same placements; rows scanned scaled to the whole table. Pruning depends
    on the group count, not on the rows per group, so a sample gives the figure at a fraction of the cost."""
    sample = min(len(columns.a), TEXTBOOK_SAMPLE_ROWS)  # rows are in random order: a prefix is a sample
    scale = options.rows / sample
    by_label = {r.layout.label: r for r in results}
    out = []
    for curve in ("ZORDER", "HILBERT"):
        for g in granularities:
            groups = by_label[f"{curve} SAMPLE"].stats[g.key].groups
            stats = textbook_curve(columns.a[:sample], columns.b[:sample], groups, curve)
            scanned = {p.key: float(rows_scanned(stats, chosen[p.key]).mean()) * scale for p in PREDICATES}
            out.append(
                {"curve": curve, "granularity": g.key, "groups": groups, "sample_rows": sample,
                 "rows_scanned_mean": {k: round(v, 1) for k, v in scanned.items()}}
            )  # fmt: skip
    return out


def _targets(
    options: Options,
    results: Sequence[LayoutResult],
    granularities: Sequence[Granularity],
    columns: Columns,
    chosen: Mapping[str, list[Placement]],
    textbook: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The issue's targets, each against floors at the layout's actual mean rows per group."""
    by_label = {r.layout.label: r for r in results}
    large, small = granularities
    predicates = {p.key: p for p in PREDICATES}
    out: list[dict[str, Any]] = []

    def mean(label: str, g: Granularity, key: str) -> float:
        return float(by_label[label].scanned[(g.key, key)].mean())

    def curve(name: str, g: Granularity) -> Mapping[str, float]:
        found: Mapping[str, float] = next(
            t["rows_scanned_mean"] for t in textbook if t["curve"] == name and t["granularity"] == g.key
        )
        return found

    def add(name: str, value: float, threshold: float, at_least: bool, detail: str) -> None:
        met = value >= threshold if at_least else value <= threshold
        out.append(
            {"target": name, "value": round(value, 3), "threshold": threshold,
             "comparison": ">=" if at_least else "<=", "met": met, "detail": detail}
        )  # fmt: skip

    for label in ("HILBERT DIRECT", "HILBERT SAMPLE"):
        rows = by_label[label].stats[large.key].mean_rows
        floor = square_tile_floor(predicates["a_and_b_1pct"], rows, options.rows)
        scanned = mean(label, large, "a_and_b_1pct")
        add(
            f"{label}: a AND b at {large.nominal_rows:,}-row groups / square-tile floor",
            scanned / floor, TARGETS["hilbert_square_tile"], False,
            f"{scanned:,.0f} rows scanned vs floor {floor:,.0f} (groups of {rows:,.0f} rows); textbook "
            f"Hilbert in as many groups: {curve('HILBERT', large)['a_and_b_1pct'] / floor:.2f}x the floor",
        )  # fmt: skip
    for g in granularities:
        a, b = mean("ZORDER SAMPLE", g, "a_1pct"), mean("ZORDER SAMPLE", g, "b_1pct")
        # A Z-order splits a one level more than b whenever the group count is not a power of 4.
        ia, ib = curve("ZORDER", g)["a_1pct"], curve("ZORDER", g)["b_1pct"]
        add(
            f"ZORDER SAMPLE: a 1% vs b 1% balance at {g.nominal_rows:,}-row groups (larger/smaller)",
            max(a, b) / min(a, b), TARGETS["zorder_sample_balance"], False,
            f"a {a:,.0f}, b {b:,.0f} rows scanned; textbook Z-order in as many groups: "
            f"a {ia:,.0f}, b {ib:,.0f}, {max(ia, ib) / min(ia, ib):.2f}x",
        )  # fmt: skip
    linear = by_label["LINEAR"]
    for g in granularities:
        # LINEAR's groups in a's order (its files' order on disk may differ when several tasks write).
        in_order = linear.stats[g.key].rows[np.argsort(linear.stats[g.key].a_min, kind="stable")]
        ideal = sorted_layout(columns.a_sorted, in_order)
        ratios = []
        for key in ("a_1pct", "a_0_1pct", "a_eq"):
            floor = float(rows_scanned(ideal, chosen[key]).mean())
            scanned = mean("LINEAR", g, key)
            ratios.append((scanned / floor, f"{key} {scanned:,.0f} vs {floor:,.0f}"))
        add(
            f"LINEAR: a at {g.nominal_rows:,}-row groups / table sorted on a, same group sizes (worst of 3)",
            max(r for r, _ in ratios), TARGETS["linear_sorted"], False, "; ".join(d for _, d in ratios),
        )  # fmt: skip
    for label in ("HILBERT DIRECT", "HILBERT SAMPLE"):
        scanned = mean(label, small, "a_and_b_1pct")
        base = mean("as written", small, "a_and_b_1pct")
        # The reachable reduction grows with the table (more tiles): say what the floor gives at this N.
        floor = square_tile_floor(predicates["a_and_b_1pct"], small.nominal_rows, options.rows)
        add(
            f"{label}: a AND b at {small.nominal_rows:,}-row groups, x fewer rows than as written",
            base / scanned, TARGETS["hilbert_50k"], True,
            f"{base:,.0f} vs {scanned:,.0f} rows scanned; the square-tile floor would give "
            f"{base / floor:,.0f}x at {options.rows:,} rows",
        )  # fmt: skip
    return out


def _payload(
    options: Options,
    source: InputTable,
    results: Sequence[LayoutResult],
    columns: Columns,
    chosen: Mapping[str, list[Placement]],
    matching: Mapping[str, np.ndarray],
    checks: list[dict[str, Any]],
    granularities: Sequence[Granularity],
    command: str | None,
) -> dict[str, Any]:
    unclustered = results[0]
    figures = [
        _figure(r, unclustered, g, p, matching[p.key])
        for g in granularities
        for r in results
        for p in PREDICATES
    ]
    floors = [
        _floors(options, g, p, matching[p.key], g.nominal_rows) for g in granularities for p in PREDICATES
    ]
    textbook = _textbook(options, results, granularities, columns, chosen)
    return {
        "command": command or f"bench.pruning.run({options})",
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items()},
        "input": {
            "files": len(source.files),
            "rows": source.rows,
            "mb": round(source.bytes / 2**20, 3),
            "codec": CODEC,
            "rows_per_file": options.rows_per_group,
            "columns": [
                "a int [0,1e6)",
                "b int [0,1e6)",
                "x double",
                "s string(16)",
                "ts timestamp",
                "id long",
            ],
        },
        "rewrite_codec": CODEC,
        "placements": options.placements,
        "seed": options.seed,
        "granularities": [
            {"key": g.key, "nominal_rows": g.nominal_rows, "merged_small_groups": g.merge}
            for g in granularities
        ],
        "predicates": [
            {"key": p.key, "label": p.label, "a_width": p.a_width, "b_width": p.b_width} for p in PREDICATES
        ],
        "layouts": [
            {
                "label": r.layout.label,
                "strategy": r.layout.strategy,
                "method": r.layout.method if r.layout.strategy not in (None, "LINEAR") else None,
                "clustering_seconds": round(r.seconds, 2),
                "clustering_groups": r.groups,
                "block_size_bytes": r.block_size_bytes,
                "files": len(r.files),
                "output_mb": round(r.output_bytes / 2**20, 2),
                "row_groups": {g.key: r.stats[g.key].groups for g in granularities},
                "mean_rows_per_group": {g.key: round(r.stats[g.key].mean_rows, 1) for g in granularities},
            }
            for r in results
        ],
        "placements_drawn": {k: [{"a": pl.a, "b": pl.b} for pl in v] for k, v in chosen.items()},
        "figures": figures,
        "floors": floors,
        "cross_check": checks,
        "cross_check_all_equal": all(c["equal"] for c in checks),
        "textbook_curves": textbook,
        "targets": _targets(options, results, granularities, columns, chosen, textbook),
    }


def _print(payload: Mapping[str, Any]) -> None:
    predicates = payload["predicates"]
    figures = {(f["layout"], f["granularity"], f["predicate"]): f for f in payload["figures"]}
    floors = {(f["granularity"], f["predicate"]): f for f in payload["floors"]}
    for g in payload["granularities"]:
        rows: list[list[Any]] = []
        for layout in payload["layouts"]:
            label = layout["label"]
            cells = [figures[(label, g["key"], p["key"])] for p in predicates]
            rows.append(
                [label, cells[0]["mean_rows_per_group"]]
                + [f"{c['rows_scanned_mean']:,.0f} ({c['reduction_vs_unclustered']:.1f}x)" for c in cells]
            )
        for name, key in (
            ("matching rows", "matching_mean"),
            ("floor: perfect", "perfect_floor_mean"),
            ("floor: sorted column", "sorted_floor_mean"),
            ("floor: square tiles", "square_tile_floor"),
        ):
            rows.append(
                [name, g["nominal_rows"]] + [f"{floors[(g['key'], p['key'])][key]:,.0f}" for p in predicates]
            )
        print_table(
            f"Rows scanned, mean of {payload['placements']} placements (x fewer than as written), "
            f"row groups of ~{g['nominal_rows']:,} rows, {payload['input']['rows']:,} rows",
            ["layout", "rows/group", *(p["label"] for p in predicates)],
            rows,
        )
    print_table(
        "Textbook curves of a sample of the same rows, as many row groups as the SAMPLE layouts, the same "
        "placements (rows scanned scaled to the table)",
        ["curve", "group rows", "groups", *(p["label"] for p in predicates)],
        [
            [
                t["curve"],
                int(t["granularity"]),
                t["groups"],
                *(t["rows_scanned_mean"][p["key"]] for p in predicates),
            ]
            for t in payload["textbook_curves"]
        ],
    )
    detail = [
        [f["layout"], int(f["granularity"]), f["predicate"], f["rows_scanned_mean"], f["rows_scanned_worst"],
         f["matching_mean"], f["scanned_per_matching"], f["reduction_vs_unclustered"]]
        for f in payload["figures"]
    ]  # fmt: skip
    print_table(
        "Every figure",
        ["layout", "group rows", "predicate", "scanned mean", "scanned worst", "matching mean",
         "scanned/matching", "x fewer"],
        detail,
    )  # fmt: skip
    print_table(
        f"Cross-check: pyarrow.dataset's statistics pruning (all equal: {payload['cross_check_all_equal']})",
        ["layout", "group rows", "predicate", "counted", "reader kept", "matching", "reader returned",
         "equal"],
        [
            [c["layout"], int(c["granularity"]), c["predicate"], c["rows_scanned_counted"],
             c["rows_kept_by_reader"], c["matching_counted"], c["rows_returned_by_reader"], str(c["equal"])]
            for c in payload["cross_check"]
        ],
    )  # fmt: skip
    print_table(
        "Targets (issue 6 §1)",
        ["target", "value", "threshold", "result", "figures"],
        [
            [t["target"], t["value"], f"{t['comparison']} {t['threshold']}", "met" if t["met"] else "MISSED",
             t["detail"]]
            for t in payload["targets"]
        ],
    )  # fmt: skip


def main(argv: Sequence[str]) -> int:
    parser = bench_parser(NAME, __doc__, "400,000 rows, row groups of 10,000 and 40,000")
    parser.add_argument("--rows", type=int, help="input rows (default 20,000,000)")
    parser.add_argument("--rows-per-group", type=int, help="small granularity, rows (default 50,000)")
    parser.add_argument("--merge", type=int, help="small groups per large group (default 4)")
    parser.add_argument("--placements", type=int, help="random placements per predicate (default 32)")
    parser.add_argument("--seed", type=int, help="seed of the data and the placements (default 7)")
    parser.add_argument("--results-dir", type=Path, help="where <name>.json goes (default bench/results)")
    parser.add_argument(
        "--chart", type=Path, help=f"PNG path (default {DOCS_CHART}; with --quick, beside the results)"
    )
    args = parser.parse_args(list(argv))
    base = Options.quick() if args.quick else Options.full()
    # The docs show the full run's chart: a quick run draws it beside its results instead.
    quick_chart = (args.results_dir or RESULTS_DIR) / "pruning-quick.png" if args.quick else None
    options = Options(
        rows=args.rows or base.rows,
        rows_per_group=args.rows_per_group or base.rows_per_group,
        merge=args.merge or base.merge,
        placements=args.placements or base.placements,
        seed=base.seed if args.seed is None else args.seed,
        work_dir=args.work_dir,
        results_dir=args.results_dir,
        chart_path=args.chart or quick_chart,
    )
    run(options, command=command_line(NAME, argv))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
