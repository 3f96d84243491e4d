"""Cleaning orchestration: finish pending clean plans, schedule and execute new ones (see orchestrator)."""

from __future__ import annotations

from service.cleaning.orchestrator import Cleaner, CleanOptions
from service.cleaning.results import CleanInstantResult, CleanRunResult, PartitionSummary, render_result

__all__ = [
    "CleanInstantResult",
    "CleanOptions",
    "CleanRunResult",
    "Cleaner",
    "PartitionSummary",
    "render_result",
]
