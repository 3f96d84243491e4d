"""The scale benchmark's chart: seconds and peak resident memory against files, log-log."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

with warnings.catch_warnings():
    # matplotlib 3.9 uses pyparsing 3.3's deprecated camelCase names on import (and when drawing).
    warnings.simplefilter("ignore", DeprecationWarning)
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a server
    import matplotlib.pyplot as plt

MARKERS = {6: "o", 9: "s"}


def draw(payload: Mapping[str, Any], out: Path) -> Path:
    """Two panels (seconds, peak MB), one line per operation and table version (Hudi's dashed); PNG at
    `out`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _draw(payload, out)


def _draw(payload: Mapping[str, Any], out: Path) -> Path:
    points = payload["points"]
    operations = list(points[0]["operations"]) if points else []
    operations = [name for name in operations if isinstance(points[0]["operations"][name], dict)]
    fig, (seconds, memory) = plt.subplots(1, 2, figsize=(13, 5))
    for name in operations:
        for version in sorted({p["table_version"] for p in points}):
            mine = sorted((p for p in points if p["table_version"] == version), key=lambda p: p["files"])
            files = [p["files"] for p in mine]
            label = f"{name} (v{version})"
            marker = MARKERS.get(version, "^")
            seconds.plot(files, [p["operations"][name]["seconds"]["median"] for p in mine], marker=marker,
                         label=label)  # fmt: skip
            memory.plot(files, [p["operations"][name]["peak_rss_mb"]["median"] for p in mine], marker=marker,
                        label=label)  # fmt: skip
    for version in sorted({p["table_version"] for p in points if "hudi" in p}):
        theirs = sorted(
            (p for p in points if p["table_version"] == version and "hudi" in p), key=lambda p: p["files"]
        )
        for name in theirs[0]["hudi"]["operations"]:
            files = [p["files"] for p in theirs]
            label = f"Hudi {theirs[0]['hudi']['hudi_version']} {name} (v{version})"
            marker = MARKERS.get(version, "^")
            for axis, figure in ((seconds, "seconds"), (memory, "peak_rss_mb")):
                values = [p["hudi"]["operations"][name][figure]["median"] for p in theirs]
                axis.plot(files, values, marker=marker, linestyle="--", label=label)
    for axis, title, unit in ((seconds, "Time", "seconds"), (memory, "Peak resident memory", "MB")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("data files in the table")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
    memory.legend(fontsize="small")
    fig.suptitle("hudi-table-service planning cost against table size (each operation in its own process)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
