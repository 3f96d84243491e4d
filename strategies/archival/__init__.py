"""Archival: which instants leave the active timeline, decided exactly as Hudi's archiver of the table's
timeline layout decides. Pure: a function of the timeline, the last clean, the metadata table's latest
compaction and the settings; writing the archived timeline and deleting instant files is `service`'s."""

from __future__ import annotations

from strategies.archival.window import (
    ArchivalInputs,
    ArchivalWindow,
    Archiver,
    Bound,
    LastClean,
    Stop,
    window,
)

__all__ = ["ArchivalInputs", "ArchivalWindow", "Archiver", "Bound", "LastClean", "Stop", "window"]
