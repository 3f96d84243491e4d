"""The Hudi-clustering benchmark's chart: ours vs Hudi per layout (throughput, and rows scanned)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

with warnings.catch_warnings():
    # matplotlib 3.9 uses pyparsing 3.3's deprecated camelCase names on import (and when drawing).
    warnings.simplefilter("ignore", DeprecationWarning)
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a server
    import matplotlib.pyplot as plt

COLOURS = {"hudi": "#7f7f7f", "ours": "#1f77b4"}


def draw(payload: Mapping[str, Any], out: Path) -> Path:
    """Two panels written as PNG to `out`: input MB/s per layout for each contender with the machine's
    floor as a line, and mean rows scanned per pruning predicate (log scale) for each layout."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _draw(payload, out)


def _draw(payload: Mapping[str, Any], out: Path) -> Path:
    runs = {(r["contender"], r["layout"], r["method"]): r for r in payload["runs"]}
    layouts = [(c["layout"], c["method"]) for c in payload["comparisons"]]
    labels = [layout if layout == "LINEAR" else f"{layout}\n{method}" for layout, method in layouts]
    predicates = list(payload["predicates"])
    fig, (speed, scanned) = plt.subplots(2, 1, figsize=(11, 9))
    x = np.arange(len(layouts))
    for i, contender in enumerate(("hudi", "ours")):
        values = [runs[(contender, layout, method)]["input_mb_per_s"] for layout, method in layouts]
        speed.bar(x - 0.2 + 0.4 * i, values, 0.4, label=contender, color=COLOURS[contender])
    speed.axhline(
        payload["floor"]["mb_per_s"], color="red", linestyle="--", linewidth=1, label="pyarrow floor"
    )
    speed.set_xticks(x, labels)
    speed.set_ylabel("input MB/s (higher is better)")
    speed.set_title(
        f"Clustering {payload['input']['rows']:,} rows / {payload['input']['mb']:,.1f} MB: ours vs Hudi"
    )
    speed.legend(fontsize="small")
    speed.grid(axis="y", alpha=0.3)
    columns = [(c, layout, method) for layout, method in layouts for c in ("hudi", "ours")]
    width = 0.8 / len(columns)
    px = np.arange(len(predicates))
    for j, (contender, layout, method) in enumerate(columns):
        means = [max(runs[(contender, layout, method)]["rows_scanned"][p], 1.0) for p in predicates]
        label = f"{contender} {layout}" + ("" if layout == "LINEAR" else f" {method}")
        hatch = "" if contender == "hudi" else "//"
        colour = plt.get_cmap("tab10")(layouts.index((layout, method)) % 10)
        scanned.bar(px - 0.4 + width * (j + 0.5), means, width, label=label, color=colour, hatch=hatch)
    scanned.set_yscale("log")
    scanned.set_xticks(px, [payload["predicates"][p] for p in predicates])
    scanned.set_ylabel("rows scanned (mean; lower is better)")
    scanned.legend(fontsize="x-small", ncol=2)
    scanned.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
