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


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def _load_range(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}-{high:.1f}"


def provenance(document: Mapping[str, Any], during: Sequence[float], rounds: int) -> str:
    """Which run, on what, under what load: one paragraph every generated block opens with."""
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
        f"{document['load_before']:.1f} before the run, {_load_range(during)} before and after each of "
        f"{rounds} timed rounds (2 means the benchmark's own two busy cores)."
    )


# ---------------------------------------------------------------- compaction


def render_compaction(document: Mapping[str, Any]) -> str:
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


# ---------------------------------------------------------------- clustering


def render_clustering(document: Mapping[str, Any]) -> str:
    hudi = f"Hudi {HUDI_BUNDLES[document['hudi']]}"
    runs = {(r["contender"], r["layout"], r["method"]): r for r in document["runs"]}
    comparisons = document["comparisons"]
    rounds = [r for c in comparisons for r in c["rounds"]]
    during = [r[k] for r in rounds for k in ("load_before", "load_after")]
    target = document["options"]["target_file_mb"]
    floor = document["floor"]

    def files(r: Mapping[str, Any]) -> str:
        return f"{r['output_files']} ({r['min_to_target']:.2f}-{r['max_to_target']:.2f})"

    def spread(r: Mapping[str, Any]) -> str:
        s = r["seconds_spread"]
        return f"{_s(s['median'])} ({_s(s['min'])}-{_s(s['max'])})"

    main = []
    for c in comparisons:
        h, o = runs[("hudi", c["layout"], c["method"])], runs[("ours", c["layout"], c["method"])]
        main.append(
            [
                c["layout"], c["method"], spread(h), spread(o),
                f"**{_ratio(c['ours_over_hudi_throughput'])}**",
                _ratio(c["ours_over_floor_seconds"]), _ratio(c["hudi_over_floor_seconds"]),
                f"{h['peak_rss_mb']:,.0f}", f"{o['peak_rss_mb']:,.0f}", files(h), files(o),
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
            "process tree (driver, JVM, Python workers) while it clustered, highest of its rounds. Files: "
            "output files (smallest and largest / target).",
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


# ---------------------------------------------------------------- cleaning


def render_cleaning(document: Mapping[str, Any]) -> str:
    hudi = f"Hudi {document['hudi_version']}"
    runs = document["runs"]
    during = [x for r in runs for pair in r["load"] for x in pair]
    shape = document["shape"]

    def spread(r: Mapping[str, Any], name: str) -> str:
        s = r["seconds"][name]
        return f"{_s(s['median'])} ({_s(s['min'])}-{_s(s['max'])})"

    rows = [
        [
            r["policy"], r["retained"], f"{r['hudi_deleted']:,}", f"{r['ours_deleted']:,}",
            "yes" if r["same_files_left"] else "**no**", spread(r, "hudi"), spread(r, "ours"),
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


RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "hudi-compaction": render_compaction,
    "hudi-clustering": render_clustering,
    "hudi-cleaning": render_cleaning,
}


def renderer_for(benchmark: str) -> Callable[[Mapping[str, Any]], str]:
    """The renderer of a result file's `benchmark`; a version-9 run's carries a suffix
    (`hudi-compaction-v9`) and is rendered alike."""
    name = re.sub(r"-v\d+$", "", benchmark)
    if name not in RENDERERS:
        raise KeyError(f"no renderer for benchmark {benchmark!r} (known: {sorted(RENDERERS)})")
    return RENDERERS[name]


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
