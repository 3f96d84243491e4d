"""The figures in `docs/benchmarks.md`, generated from the result files committed under `docs/results/`.

`python -m bench.report` rewrites every generated block of `docs/benchmarks.md` from its result file;
`--check` exits 1 when a block differs from what its file gives (a hand-edited figure, or a result
file committed without regenerating). A block is

    <!-- generated from docs/results/<name>.json by `python -m bench.report`; do not edit -->
    ...
    <!-- end generated -->

and what goes in it is the renderer registered for the benchmark the file names (`RENDERERS`). A
result file is what `python -m bench <name> --results-dir docs/results` wrote: the machine, the load,
the code's commit and every round, so a reader can re-derive each figure from it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from service.demo.hudi_writer import HUDI_BUNDLES

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC = REPO_ROOT / "docs" / "benchmarks.md"
RESULTS = REPO_ROOT / "docs" / "results"
BLOCK = re.compile(
    r"(<!-- generated from docs/results/(?P<file>[\w.-]+\.json) "
    r"by `python -m bench\.report`; do not edit -->\n)"
    r"(?P<body>.*?)"
    r"(<!-- end generated -->)",
    re.DOTALL,
)
MB = 1024 * 1024


# ---------------------------------------------------------------- shared pieces


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[bool]) -> str:
    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
    lines = ["| " + " | ".join(headers) + " |", rule]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _s(value: float) -> str:
    return f"{value:,.2f}"


def _spread(s: Mapping[str, float], cell: Callable[[float], str] = _s) -> str:
    """A median and its rounds' range, as every table here shows seconds: `median (min-max)`."""
    return f"{cell(s['median'])} ({cell(s['min'])}-{cell(s['max'])})"


def _spread_of(values: Sequence[float], cell: Callable[[float], str] = _s) -> str:
    return _spread({"median": statistics.median(values), "min": min(values), "max": max(values)}, cell)


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def _load_range(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def provenance(
    document: Mapping[str, Any], during: Sequence[float], rounds: int, unit: str | None = "timed rounds"
) -> str:
    """Which run, on what, under what load: one paragraph every generated block opens with (`unit`
    None: a run of counts, with the load after it instead of around each round)."""
    machine = document["machine"]
    code = document.get("code") or {}
    commit = (code.get("commit") or "unknown")[:10]
    modified = ", with uncommitted changes" if code.get("modified") else ""
    cores, memory = machine["cpu_count"], round((machine["memory_bytes"] or 0) / 1024**3)
    java = (machine.get("java") or "").replace('openjdk version "', "OpenJDK ").split('"')[0]
    finished = document["finished_at"].replace("T", " ").replace("+00:00", " UTC")
    cpu = machine.get("cpu_model") or "unknown CPU"
    return (
        f"`{document['command']}`, finished {finished}, "
        f"code at `{commit}`{modified}; {cores} cores ({cpu}), {memory} GB, "
        f"Python {machine['python']}, {java}, Spark {machine['spark']}. Load average (1 min) "
        f"{document['load_before']:.1f} before the run, "
        + (
            f"{_load_range(during)} after it."
            if unit is None
            else f"{_load_range(during)} before and after each of {rounds} {unit} "
            "(2 means the benchmark's own two busy cores)."
        )
    )


# ---------------------------------------------------------------- section 5: compaction


def render_hudi_compaction(document: Mapping[str, Any]) -> str:
    run, rounds = document["run"], document["rounds"]
    hudi = f"Hudi {HUDI_BUNDLES[document['hudi']]}"
    during = [r[k] for r in rounds for k in ("load_before", "load_after")]
    seconds, peaks = document["seconds"], document["peak_rss_mb"]
    ratio = seconds["ours"]["median"] / seconds["hudi"]["median"]
    summary = _table(
        ["contender", "seconds (median)", "min-max", "peak RSS MB", "files written", "MB written"],
        [
            [
                name, _s(seconds[key]["median"]), f"{_s(seconds[key]['min'])}-{_s(seconds[key]['max'])}",
                f"{peaks[key]:,.0f}", run[key]["output_files"], f"{run[key]['output_bytes'] / MB:.1f}",
            ]
            for name, key in ((hudi, "hudi"), ("ours", "ours"))
        ],
        [False, True, True, True, True, True],
    )  # fmt: skip
    per_round = _table(
        ["round", "first", f"{hudi} s", "ours s", f"{hudi} peak RSS MB", "ours peak RSS MB", "same rows"],
        [
            [
                number, "ours" if r["first"] == "ours" else hudi,
                _s(r["hudi_seconds"]), _s(r["ours_seconds"]),
                f"{r['hudi_peak_rss_mb']:,.0f}", f"{r['ours_peak_rss_mb']:,.0f}",
                "yes" if r["same_rows"] else "**no**",
            ]
            for number, r in enumerate(rounds, 1)
        ],
        [True, False, True, True, True, True, False],
    )  # fmt: skip
    rows = run["rows"]
    return "\n\n".join(
        [
            provenance(document, during, len(rounds)),
            f"Input: {rows:,} rows, {run['input_files']:,} files of which {run['log_files']:,} log files, "
            f"{run['input_bytes'] / MB:.1f} MB. Ours took **{ratio:.2f}x {hudi}'s time "
            f"({1 / ratio:.2f}x as fast)**, medians of {len(rounds)} rounds; scheduling was "
            f"{_s(run['ours']['schedule_seconds'])} s of ours. Peak RSS is the contender's whole process "
            "tree (driver, JVM, Python workers) while it compacted.",
            summary,
            "Every round, each on fresh copies (the digest of every row Hudi's reader returns, both "
            f"outputs: {rounds[-1]['hudi_rows']} in the last):",
            per_round,
        ]
    )


# ---------------------------------------------------------------- section 5: clustering


def render_hudi_clustering(document: Mapping[str, Any]) -> str:
    hudi = f"Hudi {HUDI_BUNDLES[document['hudi']]}"
    runs = {(r["contender"], r["layout"], r["method"]): r for r in document["runs"]}
    comparisons = document["comparisons"]
    rounds = [r for c in comparisons for r in c["rounds"]]
    during = [r[k] for r in rounds for k in ("load_before", "load_after")]
    target = document["options"]["target_file_mb"]
    floor = document["floor"]

    def files(r: Mapping[str, Any]) -> str:
        return f"{r['output_files']} ({r['min_to_target']:.2f}-{r['max_to_target']:.2f})"

    # Runs since the harness split the peak: its file-backed part in parentheses.
    split = all("peak_file_rss_mb" in r for r in document["runs"])

    def memory(r: Mapping[str, Any]) -> str:
        whole = f"{r['peak_rss_mb']:,.0f}"
        return f"{whole} ({r['peak_file_rss_mb']:,.0f})" if split else whole

    main = []
    for c in comparisons:
        h, o = runs[("hudi", c["layout"], c["method"])], runs[("ours", c["layout"], c["method"])]
        main.append(
            [
                c["layout"], c["method"], _spread(h["seconds_spread"]), _spread(o["seconds_spread"]),
                f"**{_ratio(c['ours_over_hudi_throughput'])}**",
                _ratio(c["ours_over_floor_seconds"]), _ratio(c["hudi_over_floor_seconds"]),
                memory(h), memory(o), files(h), files(o),
                "yes" if c["same_plan_groups"] else "**no**",
            ]
        )  # fmt: skip
    predicates = document["predicates"]
    pruning = [
        [c["layout"], c["method"], *(_ratio(c["rows_scanned_ours_over_hudi"][k]) for k in predicates)]
        for c in comparisons
    ]
    inputs = document["input"]
    headers = [
        "layout", "method", f"{hudi} s", "ours s", "ours/Hudi MB/s", "ours/floor s",
        "Hudi/floor s", f"{hudi} peak RSS MB", "ours peak RSS MB", f"{hudi} files", "ours files",
        "same groups",
    ]  # fmt: skip
    per_layout = len(comparisons[0]["rounds"]) if comparisons else 0
    return "\n\n".join(
        [
            provenance(document, during, len(rounds)),
            f"Input: {inputs['rows']:,} rows in {inputs['files']:,} files, {inputs['mb']:,.1f} MB; "
            f"target file size {target:,} MB. Seconds: median (min-max) of {per_layout} rounds per layout, "
            "each on a fresh copy, the rounds alternating who goes first. Peak RSS: the contender's whole "
            "process tree (driver, JVM, Python workers) while it clustered, highest of its rounds"
            + (
                ", in parentheses its file-backed part (mapped files such as a memory-mapped spill, "
                "which the kernel can write back and drop)"
                if split
                else ""
            )
            + ". Files: output files (smallest and largest / target).",
            _table(headers, main, [False, False, *([True] * 7), False, False, False]),
            f"Floor (pyarrow read + sort + {document['options']['codec']} encode of every row, one process "
            f"per core): {floor['seconds']:.1f} s, {floor['mb_per_s']:.1f} MB/s. In every round Hudi's "
            f"reader read back from both outputs the input's {inputs['rows']:,} rows (digest "
            f"`{inputs['rows_digest']}`).",
            "Rows scanned by footer min/max pruning, ours / Hudi's (mean over the placements; below 1: ours "
            "scans fewer):",
            _table(
                ["layout", "method", *predicates.values()],
                pruning,
                [False, False, *(True for _ in predicates)],
            ),
        ]
    )


# ---------------------------------------------------------------- section 5: cleaning


def render_hudi_cleaning(document: Mapping[str, Any]) -> str:
    hudi = f"Hudi {document['hudi_version']}"
    runs = document["runs"]
    during = [x for r in runs for pair in r["load"] for x in pair]
    shape = document["shape"]

    rows = [
        [
            r["policy"], r["retained"], f"{r['hudi_deleted']:,}", f"{r['ours_deleted']:,}",
            "yes" if r["same_files_left"] else "**no**",
            _spread(r["seconds"]["hudi"]), _spread(r["seconds"]["ours"]),
            f"**{_ratio(r['seconds']['ours']['median'] / r['seconds']['hudi']['median'])}**",
            f"{r['peak_rss_mb']['hudi']:,.0f}", f"{r['peak_rss_mb']['ours']:,.0f}",
        ]
        for r in runs
    ]  # fmt: skip
    headers = [
        "policy", "retained", f"{hudi} deleted", "ours deleted", "same files left", f"{hudi} s",
        "ours s", "ours/Hudi s", f"{hudi} peak RSS MB", "ours peak RSS MB",
    ]  # fmt: skip
    return "\n\n".join(
        [
            provenance(document, during, sum(len(r["load"]) for r in runs)),
            f"Input: {shape['data_files']:,} data files in {shape['partitions']:,} partitions, table version "
            f"{document['table_version']}. Seconds: median (min-max) of each policy's rounds, each on fresh "
            "copies, the rounds alternating who goes first. Peak RSS: the contender's whole process tree "
            "while it cleaned, highest of its rounds (Hudi's holds its driver JVM; ours is one Python "
            "process with no JVM).",
            _table(headers, rows, [False, True, True, True, False, True, True, True, True, True]),
        ]
    )


def render_hudi_archival(document: Mapping[str, Any]) -> str:
    hudi = f"Hudi {document['hudi_version']}"
    r = document["result"]
    during = [x for pair in r["load"] for x in pair]
    row = [
        f"{r['active_before']:,}", f"{r['hudi_archived']:,}", f"{r['ours_archived']:,}",
        "yes" if r["same_active_timeline"] else "**no**",
        _spread(r["seconds"]["hudi"]), _spread(r["seconds"]["ours"]),
        f"**{_ratio(r['seconds']['ours']['median'] / r['seconds']['hudi']['median'])}**",
        f"{r['peak_rss_mb']['hudi']:,.0f}", f"{r['peak_rss_mb']['ours']:,.0f}",
    ]  # fmt: skip
    headers = [
        "active timeline files", f"{hudi} archived", "ours archived", "same active timeline left",
        f"{hudi} s", "ours s", "ours/Hudi s", f"{hudi} peak RSS MB", "ours peak RSS MB",
    ]  # fmt: skip
    settings = document["settings"]
    return "\n\n".join(
        [
            provenance(document, during, len(r["load"])),
            f"Input: a backlog of {document['commits']:,} completed commits and a clean, table version "
            f"{document['table_version']}, archived with min {settings['min_commits']} / max "
            f"{settings['max_commits']} commits, {settings['retain_commits']} retained by the cleaner. "
            "Archived: instant files gone from the active timeline. Seconds: median (min-max) of the "
            "rounds, each on fresh copies, alternating who goes first. Peak RSS: the contender's whole "
            "process tree while it archived, highest of its rounds.",
            _table(headers, [row], [True, True, True, False, True, True, True, True, True]),
        ]
    )


# ---------------------------------------------------------------- section 1: pruning


def _count(value: float) -> str:
    return f"{value:,.0f}"


def render_pruning(document: Mapping[str, Any]) -> str:
    """Rows scanned per layout and predicate at both row-group sizes, the floors, the textbook curves,
    the cross-check and the targets. The counts are fixed by the seed and the row-group sizes, so one
    run gives them; clustering seconds are context, one round each."""
    predicates = document["predicates"]
    figures = {(f["layout"], f["granularity"], f["predicate"]): f for f in document["figures"]}
    floors = {(f["granularity"], f["predicate"]): f for f in document["floors"]}
    inputs, layouts = document["input"], document["layouts"]
    during = [r[k] for r in document["rounds"] for k in ("load_before", "load_after")]
    parts = [
        provenance(document, during, len(document["rounds"]), "layouts"),
        f"Input: {inputs['rows']:,} rows in {inputs['files']:,} files of {inputs['rows_per_file']:,} rows, "
        f"{inputs['mb']:,.1f} MB ({inputs['codec']}); {document['placements']} random placements per "
        f"predicate, seed {document['seed']}. Cells: mean rows scanned over the placements (worst "
        "placement), and how many times fewer rows than the table as written; rows/group is the "
        "layout's actual mean. The counts do not depend on the machine or the load.",
    ]
    headers = ["layout", "rows/group", *(p["label"] for p in predicates)]
    for g in document["granularities"]:
        rows: list[list[Any]] = []
        for layout in layouts:
            cells = [figures[(layout["label"], g["key"], p["key"])] for p in predicates]
            rows.append(
                [layout["label"], _count(cells[0]["mean_rows_per_group"])]
                + [
                    f"{_count(c['rows_scanned_mean'])} ({_count(c['rows_scanned_worst'])}) "
                    f"{c['reduction_vs_unclustered']:.1f}x"
                    for c in cells
                ]
            )
        for name, key in (
            ("*matching rows*", "matching_mean"),
            ("*floor: perfect*", "perfect_floor_mean"),
            ("*floor: sorted column*", "sorted_floor_mean"),
            ("*floor: square tiles*", "square_tile_floor"),
        ):
            rows.append(
                [name, _count(g["nominal_rows"])]
                + [_count(floors[(g["key"], p["key"])][key]) for p in predicates]
            )
        parts.append(f"Row groups of ~{g['nominal_rows']:,} rows:")
        parts.append(_table(headers, rows, [False, *([True] * (len(headers) - 1))]))
    parts.append(
        "Textbook curves of a sample of the same rows, cut into as many row groups as the SAMPLE layout, "
        "on the same placements (rows scanned scaled to the table):"
    )
    parts.append(
        _table(
            ["curve", "groups", *(p["label"] for p in predicates)],
            [
                [t["curve"], t["groups"], *(_count(t["rows_scanned_mean"][p["key"]]) for p in predicates)]
                for t in document["textbook_curves"]
            ],
            [False, True, *(True for _ in predicates)],
        )
    )
    checks = document["cross_check"]
    agreeing = sum(1 for c in checks if c["equal"])
    parts.append(
        f"**Cross-check**: in {agreeing} of {len(checks)} cases (each predicate's first placement on "
        "every layout's files, and on files rewritten with the merged row groups) the rows "
        "pyarrow.dataset keeps after statistics pruning equal the count above, and the rows it returns "
        "equal the matching count."
    )
    parts.append(
        _table(
            ["target", "value", "threshold", "result", "figures"],
            [
                [
                    t["target"],
                    f"{t['value']:,.2f}",
                    f"{t['comparison']} {t['threshold']}",
                    "met" if t["met"] else "**missed**",
                    t["detail"],
                ]
                for t in document["targets"]
            ],
            [False, True, False, False, False],
        )
    )
    timed = [f"{x['label']} {x['clustering_seconds']:.0f} s" for x in layouts if x["strategy"]]
    parts.append(
        f"Clustering each layout into one file took (one round each; context, not a comparison): "
        f"{', '.join(timed)}; the whole run {document['seconds_total']:,.0f} s."
    )
    return "\n\n".join(parts)


# ---------------------------------------------------------------- section 2: clustering cost


def render_clustering_cost(document: Mapping[str, Any]) -> str:
    runs, inputs = document["runs"], document["input"]
    rounds = [r for run in runs for r in run["rounds"]]
    during = [r[k] for r in rounds for k in ("load_before", "load_after")]

    def ratio(run: Mapping[str, Any]) -> str:
        low, high = run["file_size_ratio_min"], run["file_size_ratio_max"]
        return "-" if low is None else f"{low:.2f}-{high:.2f}"

    rows = [
        [
            r["label"], _spread(r["seconds_spread"]), f"{r['input_mb_per_s']:.2f}",
            f"**{_ratio(r['ratio_to_raw_spark'])}**",
            f"{r['peak_rss_mb']:,.0f}", r["writer_tasks"] or "-", r["output_files"],
            f"{r['output_mb']:,.1f}", ratio(r),
            "-" if r["files_within_0_8_to_1_1"] is None else r["files_within_0_8_to_1_1"],
            "yes" if all(x["same_rows"] for x in r["rounds"]) else "**no**",
        ]
        for r in runs
    ]  # fmt: skip
    headers = [
        "run", "seconds", "MB/s", "x raw Spark", "peak RSS MB", "tasks", "files", "out MB",
        "min-max / target", "files in 0.8-1.1x", "same rows",
    ]  # fmt: skip
    keys = ", ".join(f"{k['layout']} {k['method']} {k['ns_per_row']:.0f}" for k in document["curve_keys"])
    c = document["components"]
    per_run = len(runs[0]["rounds"]) if runs else 0
    return "\n\n".join(
        [
            provenance(document, during, len(rounds), "timed runs"),
            f"Input: {inputs['rows']:,} rows in {inputs['files']:,} {inputs['codec']} files, "
            f"{inputs['mb']:,.1f} MB. Raw Spark and ours each run in a process of their own with the same "
            f"session settings. Seconds: median (min-max) of {per_run} rounds, each on a fresh copy, the "
            'plan run forwards and backwards in turn; MB/s and "x raw Spark" (same codec) from the '
            "medians. Peak RSS: the contender's whole process tree (driver, JVM, Python workers) during "
            "the run, highest of its rounds (a JVM keeps the heap an earlier run grew). Same rows: in "
            "every round the output held the input's rows (digest "
            f"`{inputs['rows_digest']}`; raw Spark's read as Parquet, ours by Hudi's reader).",
            _table(headers, rows, [False, True, True, True, True, True, True, True, False, True, False]),
            _table(
                ["target (issue 6)", "measured", "result"],
                [[t["target"], t["value"], "met" if t["met"] else "**missed**"] for t in document["targets"]],
                [False, False, False],
            ),
            f"Order key cost, one thread, {document['curve_keys'][0]['rows']:,} rows (ns/row): {keys}. "
            f"Whole input, one thread: pyarrow read {c['pyarrow_read_1thread_s']:.1f} s, sort "
            f"{c['pyarrow_sort_s']:.1f} s, gzip write {c['pyarrow_write_gzip_1thread_s']:.1f} s "
            f"({c['pyarrow_write_gzip_output_mb']:.1f} MB), snappy write "
            f"{c['pyarrow_write_snappy_1thread_s']:.1f} s; Spark read {c['spark_read_noop_s']:.1f} s, "
            f"read and sort {c['spark_read_sort_noop_s']:.1f} s (no write).",
        ]
    )


# ---------------------------------------------------------------- section 3: cleaning planning


def render_cleaning_planning(document: Mapping[str, Any]) -> str:
    planning, shape = document["planning"], document["shape"]
    deletes = document["deletes"]
    during = [r[k] for r in planning["rounds"] for k in ("load_before", "load_after")]
    during += [r[k] for d in deletes for r in d["rounds"] for k in ("load_before", "load_after")]

    def ms(mode: str, key: str) -> str:
        # A round records its phases; a daemon's warm tick is its listing and plan together.
        values = [
            (r["warm_listing"] + r["warm_plan"] if key == "warm_total" else r[key]) * 1000
            for r in planning[mode]["runs"]
        ]
        return _spread_of(values, lambda v: f"{v:,.1f}")

    speedup = planning["speedup_full_over_incremental"]
    rows: list[list[Any]] = [
        [
            mode, f"{planning[mode]['partitions_listed']:,}", ms(mode, "timeline"), ms(mode, "listing"),
            ms(mode, "plan"), ms(mode, "warm_total"), ms(mode, "cold_total"),
        ]
        for mode in ("incremental", "full")
    ]  # fmt: skip
    rows.append(
        ["**full / incremental**", "", "",
         *(f"**{speedup[k]:.1f}x**" for k in ("listing", "plan", "warm_total", "cold_total"))]
    )  # fmt: skip
    delete_rows = []
    for d in deletes:
        delete_rows.append(
            [
                d["parallelism"], f"{d['files_deleted']:,}",
                _spread_of([r["delete_phase_s"] for r in d["rounds"]]), f"{d['files_per_s']:,.0f}",
                _spread_of([r["clean_run_s"] for r in d["rounds"]]),
            ]
        )  # fmt: skip
    memory = document["peak_rss_mb"]
    target = document["target"]
    met = "met" if target["met_warm"] else "**missed**"
    return "\n\n".join(
        [
            provenance(
                document, during, len(planning["rounds"]) + sum(len(d["rounds"]) for d in deletes), "rounds"
            ),
            f"Input: {shape['data_files']:,} base files in {shape['partitions']:,} partitions "
            f"(KEEP_LATEST_COMMITS, {document['policy']['commits_retained']} commits retained). Planning: "
            f"median (min-max) of {document['repeat']} cold rounds in ms, the modes alternating which goes "
            "first; warm total is a daemon's tick (decoded commits cached), cold total a one-shot run. "
            f"Plans equal in both modes: {'yes' if planning['plans_equal'] else '**no**'}.",
            _table(
                [
                    "mode",
                    "partitions listed",
                    "timeline ms",
                    "listing ms",
                    "plan ms",
                    "warm total ms",
                    "cold total ms",
                ],
                rows,
                [False, True, True, True, True, True, True],
            ),
            f"Target (incremental at least {target['speedup']:.0f}x faster than a full scan, for a daemon's "
            f"tick): {met}. Reading and `json.loads` of every completed commit alone takes "
            f"{planning['commit_json_parse_s'] * 1000:,.0f} ms of the cold timeline step. Peak RSS of the "
            f"benchmark's one Python process (the cleaner runs in it, no JVM): {memory['planning']:,.0f} MB "
            f"while planning, {memory['deleting']:,.0f} MB while deleting.",
            "A real clean deleting every file version one retained commit no longer needs, on a fresh "
            f"copy per round ({len(deletes[0]['rounds'])} rounds per `hoodie.cleaner.parallelism`), local "
            "disk; seconds median (min-max):",
            _table(
                ["parallelism", "files deleted", "delete phase s", "files/s (median)", "whole clean s"],
                delete_rows,
                [True, True, True, True, True],
            ),
        ]
    )


# ---------------------------------------------------------------- section 4: daemon


def render_daemon(document: Mapping[str, Any]) -> str:
    steady, cold, memory = document["steady"], document["cold"], document["memory"]
    idle, threshold, targets, shape = (
        document["idle"],
        document["threshold"],
        document["targets"],
        document["shape"],
    )
    during = [steady["load_before"], steady["load_after"]]
    cpu, wall = steady["per_table_cpu_ms"], steady["per_table_wall_ms"]
    services = steady["services"]

    def met(flag: bool) -> str:
        return "met" if flag else "**missed**"

    listings = " / ".join(f"{v['hoodie_listings_per_tick']:g}" for v in services.values())
    reads = " / ".join(f"{v['reads_per_tick']:g}" for v in services.values())
    delays = ", ".join(f"{c['delay_s']:.1f}" for c in threshold["tables"] if c.get("planned"))
    to_plan = [c["tick_start_to_plan_s"] for c in threshold["tables"] if "tick_start_to_plan_s" in c]
    rows = [
        ["table tick CPU (its three services), mean / p50 / p99 / max (ms)",
         f"{cpu['mean']:.2f} / {cpu['p50']:.2f} / {cpu['p99']:.2f} / {cpu['max']:.2f}",
         f"<= {targets['tick_ms']:g} ms: {met(targets['tick_met'])}"],
        ["table tick wall, mean / p99 (ms)", f"{wall['mean']:.2f} / {wall['p99']:.2f}", ""],
        [" / ".join(f"{name} tick" for name in services) + " CPU, mean (ms)",
         " / ".join(f"{v['cpu_ms']['mean']:.2f}" for v in services.values()), ""],
        ["daemon CPU per table per round, everything included (ms)",
         f"{steady['process_cpu_ms_per_table_round']:.2f}", ""],
        [f"daemon CPU share of one core ({shape['poll_seconds']:g} s poll)",
         f"{100 * steady['process_cpu_share_of_one_core']:.1f} %", ""],
        ["RSS at the end of the window / peak (MB)",
         f"{memory['rss_mb_end_of_steady_window']:,.0f} / {memory['peak_rss_mb']:,.0f}",
         f"<= {targets['rss_mb']:g} MB: {met(targets['rss_met'])}"],
        ["threads (peak)", memory["threads_peak"], ""],
        ["`.hoodie` listings per " + " / ".join(f"{name} tick" for name in services), listings, ""],
        ["file reads per " + " / ".join(f"{name} tick" for name in services), reads, ""],
        ["partition listings, metadata decodes in the window",
         f"{steady['partition_listings']}, {steady['decodes']}", ""],
        ["cold round: table tick CPU, mean / p99 (ms); metadata decodes",
         f"{cold['per_table_cpu_ms']['mean']:.2f} / {cold['per_table_cpu_ms']['p99']:.2f}; "
         f"{cold['decodes']:,}", ""],
        ["instant files written / Spark requests / failed ticks while idle",
         f"{idle['instant_files_written']} / {idle['spark_session_requests']} / {idle['failed_ticks']}",
         f"none: {met(targets['nothing_planned_while_idle'])}"],
        [f"crossing commit to `.replacecommit.requested`, {len(threshold['tables'])} tables (s)", delays,
         f"<= {targets['plan_delay_s']:g} s (one poll): {met(targets['plan_delay_met'])}"],
        ["scheduling tick: start to plan written (s)",
         ", ".join(f"{x:.2f}" for x in to_plan) or "-", ""],
    ]  # fmt: skip
    return "\n\n".join(
        [
            provenance(document, during, 1, f"steady windows of {shape['steady_rounds']} poll intervals"),
            f"{shape['tables']:,} tables, {shape['active_instants_per_table']} active instants each, "
            f"{shape['poll_seconds']:g} s poll interval; the window held {steady['rounds']:.1f} rounds "
            f"({steady['window_s']:.0f} s, {steady['table_ticks']:,} table ticks). "
            "Tick figures are over every table tick of the window (their spread is the p50, p99 and max); "
            "memory is the daemon process's resident set, sampled every 0.25 s.",
            _table(["figure (steady window unless noted)", "value", "target"], rows, [False, True, False]),
            *(_render_replicas(document["replicas"]) if "replicas" in document else []),
        ]
    )


def _render_replicas(replicas: Mapping[str, Any]) -> list[str]:
    """The daemon benchmark's replica phase (`bench.daemon_replicas`)."""
    killed, targets, takeover = replicas["killed"], replicas["targets"], replicas["killed"]["takeover_s"]
    within = "met" if targets["takeover_within_bound"] else "**missed**"

    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    rows = [
        [r["replica"], f"{r['tables']:,}", f"{r['peak_rss_mb']:,.0f}",
         seconds(None if r["cpu_share_of_one_core"] is None else 100 * r["cpu_share_of_one_core"]),
         "-" if r["cpu_ms_per_table_round"] is None else f"{r['cpu_ms_per_table_round']:.2f}"]
        for r in replicas["per_replica"]
    ]  # fmt: skip
    return [
        f"Then the same tables served by {replicas['replicas']} replicas through a real ZooKeeper "
        f"(`daemon.cluster`, session timeout {replicas['session_timeout_s']:g} s, settle "
        f"{replicas['settle_s']:g} s): every table was served by exactly one replica "
        f"{replicas['divided_after_s']:.1f} s after launch, and every replica had ticked its whole share "
        f"after {replicas['every_share_ticked_after_s']:.1f} s. Each serves a share: "
        f"{'yes' if targets['each_serves_a_share'] else '**no**'}; peak RSS per replica at most "
        f"{targets['rss_mb_per_replica']:g} MB: {'met' if targets['rss_met'] else '**missed**'}.",
        _table(
            ["replica", "tables", "peak RSS MB", "CPU % of a core", "CPU ms per table per round"],
            rows,
            [False, True, True, True, True],
        ),
        f"{killed['replica']} was SIGKILLed (nothing released): {killed['served_again']:,} of its "
        f"{killed['tables']:,} tables were ticked again by a survivor, {seconds(takeover['min'])} s "
        f"(first), {seconds(takeover['median'])} s (median) and {seconds(takeover['max'])} s (last) after "
        f"the kill; bound {killed['bound_s']:g} s (the session timeout, before which its locks live, plus "
        f"the settle time and one poll interval): {within}.",
    ]


# ---------------------------------------------------------------- section 5: object store


def render_hudi_s3(document: Mapping[str, Any]) -> str:
    kinds = document["request_kinds"]
    hudi = f"Hudi {HUDI_BUNDLES[document.get('hudi', '0.15')]}"
    clustering, cleaning, ticks = document["clustering"], document["cleaning"], document["idle_daemon_ticks"]

    def row(label: str, entry: Mapping[str, Any]) -> list[Any]:
        listed = entry.get("partitions_listed")
        return [
            label, *(entry["requests"][k] for k in kinds),
            "" if listed is None else f"{listed} of {cleaning['partitions']}",
        ]  # fmt: skip

    deleted = cleaning["ours"]["files_deleted"]
    rows = [
        row(f"clustering, {hudi} `run_clustering`", clustering["hudi"]),
        row("clustering, ours", clustering["ours"]),
        row(
            f"clean ({cleaning['hudi']['files_deleted']} files deleted), {hudi} `run_clean`", cleaning["hudi"]
        ),
        row(f"clean ({deleted} files deleted), ours", cleaning["ours"]),
        row("clean planning only, ours (dry run)", cleaning["ours_planning_only"]),
        *(row(f"idle tick, {key.replace('_', ', ')}", entry) for key, entry in ticks.items()),
    ]
    inputs = clustering["input"]
    rows_read = {name: clustering[name]["rows_read_by_hudi"] for name in ("hudi", "ours")}
    return "\n\n".join(
        [
            provenance(document, [document["load_after"]], 1, None),
            f"Clustering input: {inputs['rows']:,} rows in {inputs['files']} files; Hudi's reader read "
            f"back {rows_read['hudi']:,} rows from Hudi's output and {rows_read['ours']:,} from ours. "
            f"Cleaning input: {cleaning['data_files']:,} data files in {cleaning['partitions']} partitions, "
            f"{cleaning['partitions_in_incremental_window']} of them written since the last clean; files "
            f"left the same on both copies: {'yes' if cleaning['same_files_left'] else '**no**'}. Requests "
            'per run; "partitions listed" counts the partition directories a LIST named. Counts do not '
            "depend on the load; times on a loopback object store are not published.",
            _table(["run", *kinds, "partitions listed"], rows, [False, *(True for _ in kinds), True]),
        ]
    )


# ---------------------------------------------------------------- section: scale


OURS_OVER_HUDI = "our planning time over Hudi's, at every size"


def render_scale(document: Mapping[str, Any]) -> str:
    from bench.scale import OPERATIONS

    points = document["points"]
    during = [p["load_before"] for p in points] + [document["load_after"]]
    rows = [
        [
            f"{p['files']:,}", f"{p['partitions']:,}", p["table_version"], name,
            _spread(p["operations"][name]["seconds"]),
            _spread(p["operations"][name]["peak_rss_mb"], lambda v: f"{v:,.0f}"),
        ]
        for p in points
        for name in OPERATIONS
        if name in p["operations"]  # `check` joined later: absent from older results
    ]  # fmt: skip
    goals = document["goals"]
    ratio = goals.get("ours_over_hudi_seconds")  # absent from results of runs before `--hudi`
    with_hudi = [p for p in points if "hudi" in p]
    hudi_rows = [
        [
            f"{p['files']:,}", p["table_version"], p["hudi"]["hudi_version"], name,
            _spread(op["seconds"]), _spread(op["peak_rss_mb"], lambda v: f"{v:,.0f}"),
            f"{op['compared_with']}: " + _spread(p["operations"][op["compared_with"]]["seconds"]),
            f"{p['hudi']['ours_over_hudi'][name]:.2f}", "yes" if op["plans_equal"] else "**no**",
        ]
        for p in with_hudi
        for name, op in p["hudi"]["operations"].items()
    ]  # fmt: skip
    hudi_part: list[str] = []
    if with_hudi:
        headers = ["files", "version", "Hudi", "operation", "Hudi seconds", "Hudi peak RSS MB",
                   "ours seconds", "ours/Hudi", "same plan"]  # fmt: skip
        hudi_part = [
            "Hudi's own planning, schedule-only, on the same tables (`--hudi`, `bench.scale_hudi`): a clean "
            "through its write client's `scheduleTableService`, a clustering through `run_clustering(op => "
            "'schedule')`, in a warmed-up JVM of its own per table (the JVM's start not timed; ours is a "
            "whole `hudi-table-service` process, interpreter start included). Peak RSS is that JVM's process "
            "tree while it planned. Plans compared with ours: the clean's files, the clustering's groups.",
            _table(headers, hudi_rows, [True, True, False, False, True, True, False, True, False]),
        ]

    def goal(entry: Mapping[str, Any], what: str, unit: str, digits: int = 1) -> str:
        if entry["met"] is None:
            return f"{what} at most {entry['goal']:,} {unit}: not measured in this run"
        state = "met" if entry["met"] else "**missed**"
        return f"{what} at most {entry['goal']:,} {unit}: {state} ({entry['measured']:,.{digits}f} {unit})"

    return "\n\n".join(
        [
            provenance(document, during, len(points), "tables"),
            f"Median (min-max) of {document['rounds']} rounds per operation, each `hudi-table-service` "
            "run in a child process of its own after an untimed warm-up; peak RSS is that child's. Both "
            "cleans planned the same files at every size: "
            f"{'yes' if all(p['plans_equal'] for p in points) else '**no**'}.",
            _table(
                ["files", "partitions", "version", "operation", "seconds", "peak RSS MB"],
                rows,
                [True, True, True, False, True, True],
            ),
            *hudi_part,
            "Goals (issue 49): "
            + goal(goals["peak_mb_at_10m"], "peak memory at 10^7 files", "MB")
            + "; "
            + goal(goals["full_clean_dry_run_s_at_1m"], "a full clean's dry run at 10^6 files", "s")
            + (f"; {goal(ratio, OURS_OVER_HUDI, 'x', 2)}" if ratio else "")
            + f". Chart: `docs/results/{document['benchmark']}.png`.",
        ]
    )


RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "pruning": render_pruning,
    "clustering": render_clustering_cost,
    "cleaning": render_cleaning_planning,
    "daemon": render_daemon,
    "hudi-compaction": render_hudi_compaction,
    "hudi-clustering": render_hudi_clustering,
    "hudi-cleaning": render_hudi_cleaning,
    "hudi-archival": render_hudi_archival,
    "hudi-s3": render_hudi_s3,
    "scale": render_scale,
}


def renderer_for(benchmark: str) -> Callable[[Mapping[str, Any]], str]:
    """The renderer of a result file's `benchmark`: the longest registered name it is or starts with
    before a `-` (a version-9 run's `hudi-compaction-v9`, `hudi-clustering-default-sizes`)."""
    known = [name for name in RENDERERS if benchmark == name or benchmark.startswith(f"{name}-")]
    if not known:
        raise KeyError(f"no renderer for benchmark {benchmark!r} (known: {sorted(RENDERERS)})")
    return RENDERERS[max(known, key=len)]


def render(document: Mapping[str, Any]) -> str:
    return renderer_for(str(document["benchmark"]))(document)


def regenerate(text: str, results: Path = RESULTS) -> str:
    """`text` with every generated block rewritten from its result file."""

    def block(match: re.Match[str]) -> str:
        path = results / match["file"]
        if not path.exists():
            raise FileNotFoundError(f"{DOC.name} has a block generated from {path}, which does not exist")
        body = render(json.loads(path.read_text(encoding="utf-8")))
        return f"{match[1]}{body}\n{match[4]}"

    return BLOCK.sub(block, text)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated block is out of date")
    args = parser.parse_args(list(argv))
    text = DOC.read_text(encoding="utf-8")
    fresh = regenerate(text)
    if args.check:
        if fresh != text:
            print(f"{DOC}: generated blocks differ from docs/results; run `python -m bench.report`")
            return 1
        return 0
    DOC.write_text(fresh, encoding="utf-8")
    print(f"regenerated {len(BLOCK.findall(text))} blocks of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
