"""How `archive` and `check` report what holds the archival window back: one JSON shape, one sentence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from strategies.archival import ArchivalWindow


def held_by_json(window: ArchivalWindow) -> dict[str, Any] | None:
    """`{"bound", "instant", "detail"}` of the bound that holds the window back most; None: none."""
    stop = window.stop
    if stop is None:
        return None
    return {"bound": stop.bound.value, "instant": stop.instant_time, "detail": stop.detail}


def held_by_text(held: Mapping[str, Any]) -> str:
    """`held by <bound>[ at <instant>]: <detail>`, from `held_by_json`'s object."""
    at = f" at {held['instant']}" if held["instant"] else ""
    return f"held by {held['bound']}{at}: {held['detail']}"
