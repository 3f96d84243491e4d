"""The pruning benchmark's chart: rows scanned per layout and predicate, one panel per row-group size."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

with warnings.catch_warnings():
    # matplotlib 3.9 uses pyparsing 3.3's deprecated camelCase names on import (and when drawing).
    warnings.simplefilter("ignore", DeprecationWarning)
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a server
    import matplotlib.pyplot as plt

COLOURS = ("#7f7f7f", "#1f77b4", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a")


def draw(payload: Mapping[str, Any], out: Path) -> Path:
    """Grouped bars (log scale) of mean rows scanned, a cap at the worst placement, and markers for
    the matching rows and the two floors; written as PNG to `out`."""
    with warnings.catch_warnings():
        # matplotlib 3.9 parses font names with pyparsing 3.3's deprecated camelCase names.
        warnings.simplefilter("ignore", DeprecationWarning)
        return _draw(payload, out)


def _draw(payload: Mapping[str, Any], out: Path) -> Path:
    layouts: Sequence[str] = [layout["label"] for layout in payload["layouts"]]
    predicates: Sequence[Mapping[str, Any]] = payload["predicates"]
    granularities: Sequence[Mapping[str, Any]] = payload["granularities"]
    figures = {(f["layout"], f["granularity"], f["predicate"]): f for f in payload["figures"]}
    floors = {(f["granularity"], f["predicate"]): f for f in payload["floors"]}
    fig, axes = plt.subplots(len(granularities), 1, figsize=(12, 4.8 * len(granularities)), squeeze=False)
    x = np.arange(len(predicates))
    width = 0.8 / len(layouts)
    for ax, granularity in zip(axes[:, 0], granularities, strict=True):
        g = granularity["key"]
        for i, layout in enumerate(layouts):
            means = [figures[(layout, g, p["key"])]["rows_scanned_mean"] for p in predicates]
            worst = [figures[(layout, g, p["key"])]["rows_scanned_worst"] for p in predicates]
            offset = x - 0.4 + width * (i + 0.5)
            colour = COLOURS[i % len(COLOURS)]
            ax.bar(offset, means, width, label=layout, color=colour)
            ax.errorbar(
                offset,
                means,
                yerr=[np.zeros(len(means)), np.subtract(worst, means)],
                fmt="none",
                ecolor="black",
                elinewidth=0.6,
                capsize=2,
            )
        for j, p in enumerate(predicates):
            floor = floors[(g, p["key"])]
            span = [x[j] - 0.42, x[j] + 0.42]
            ax.plot(span, [floor["square_tile_floor"]] * 2, "k--", linewidth=1)
            ax.plot(span, [floor["perfect_floor_mean"]] * 2, "k:", linewidth=1)
            ax.plot(span, [max(floor["matching_mean"], 1)] * 2, color="red", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(x, [p["label"] for p in predicates])
        ax.set_ylabel("rows scanned (mean; cap = worst)")
        ax.set_title(
            f"{payload['input']['rows']:,} rows, row groups of ~{granularity['nominal_rows']:,} rows "
            f"({payload['placements']} placements per predicate)"
        )
        ax.grid(axis="y", which="major", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles += [
        plt.Line2D([], [], color="black", linestyle="--"),
        plt.Line2D([], [], color="black", linestyle=":"),
        plt.Line2D([], [], color="red"),
    ]
    labels += ["square-tile floor", "perfect floor (whole groups)", "matching rows"]
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize="small")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
