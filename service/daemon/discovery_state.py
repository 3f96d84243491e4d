"""What the daemon's table discovery saw (`Daemon.discover_now`): each root's last pass, the tables
found, and the tables that appeared and disappeared, for the status page and the JSON API."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.config.daemon import DiscoveryRoot, TableSettings
from service.daemon.status_api import redact
from service.discovery import Found, scan

log = logging.getLogger(__name__)

EVENTS_KEPT = 50


@dataclass
class RootState:
    found: list[Found] = field(default_factory=list)
    scanned_at: datetime | None = None
    error: str | None = None


@dataclass
class Discovery:
    roots: dict[str, RootState] = field(default_factory=dict)
    settings: list[TableSettings] = field(default_factory=list)  # the entries the last pass made
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))

    def scan(self, roots: Iterable[DiscoveryRoot], now: datetime) -> list[Found]:
        """Every root scanned; a root that fails keeps its previous tables and records its error."""
        found: list[Found] = []
        for root in roots:
            state = self.roots.setdefault(root.root, RootState())
            try:
                state.found = scan(root)
                state.error = None
            except Exception as exc:  # one root's storage failing must not drop another's tables
                state.error = f"{type(exc).__name__}: {exc}"
                log.warning("discovery: %s could not be scanned; its tables stay: %s", redact(root.root), exc)
            state.scanned_at = now
            found += state.found
        return found

    def record(self, now: datetime, before: Mapping[str, str], after: Mapping[str, str]) -> None:
        for path in sorted(after.keys() - before.keys()):
            self._event(now, "appeared", after[path], path)
        for path in sorted(before.keys() - after.keys()):
            self._event(now, "disappeared", before[path], path)

    def _event(self, now: datetime, what: str, name: str, path: str) -> None:
        log.info("discovery: table %s %s (%s)", name, what, redact(path))
        self.events.appendleft({"at": now.isoformat(timespec="seconds"), "event": what, "table": name,
                                "base_path": redact(path)})  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "roots": [
                {
                    "root": redact(root),
                    "tables": len(state.found),
                    "scanned_at": state.scanned_at.isoformat(timespec="seconds")
                    if state.scanned_at
                    else None,
                    "error": state.error,
                }
                for root, state in self.roots.items()
            ],
            "events": list(self.events),
        }


def _iso(at: datetime | None) -> str | None:
    return at.isoformat(timespec="seconds") if at is not None else None
