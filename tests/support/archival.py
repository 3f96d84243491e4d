"""What the archival differential tests share: the settings they compare at, the instants of a table's
active timeline, and our window for those settings (`service.archival.archival_window`)."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from service.archival import archival_window
from service.config.hoodie import HoodieConfig
from service.table.instant import Action
from service.table.table import HudiTable
from strategies.archival import ArchivalWindow

# (hoodie.keep.min.commits, hoodie.keep.max.commits, the cleaner's commits retained): a small window,
# one the cleaner's retention widens, and one between.
SETTINGS = [(2, 3, 1), (3, 5, 8), (4, 6, 2)]


def active_instants(base: Path) -> set[tuple[str, Action]]:
    """(time, comparable action) of every instant on the active timeline."""
    return {(i.timestamp, i.action.comparable) for i in HudiTable.open(str(base)).load_timeline()}


def our_window(
    base: Path, low: int, high: int, retained: int
) -> tuple[set[tuple[str, Action]], ArchivalWindow]:
    """Our window at these settings (Hudi's defaults otherwise, as `archive_commits` runs), and its
    instants as `active_instants` names them."""
    config = HoodieConfig.from_mapping(
        {
            "hoodie.keep.min.commits": low,
            "hoodie.keep.max.commits": high,
            "hoodie.cleaner.commits.retained": retained,
        },
        base.name,
    )
    window = archival_window(HudiTable.open(str(base)), config, UTC)
    return {(i.timestamp, i.action.comparable) for i in window.instants}, window
