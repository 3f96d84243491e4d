"""Hot reload of the daemon's config file: when to reload, and what a new config changes.

The file is re-read when it changed (watched by digest) or on SIGHUP. Tables are added, removed or
re-tuned without a restart; a changed table entry gets a fresh runtime (lifting its quarantine).
An invalid file keeps the running config (`Daemon.reload_from_file`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from service.config.daemon import DaemonConfig, DaemonSettings, TableEntry

# Daemon settings a running daemon cannot change: a reload only warns about them.
RESTART_ONLY = ("spark", "metrics", "cluster", "run_history_size", "max_concurrent_ticks")


def file_digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class ConfigWatch:
    """Whether the config file changed since it was last loaded, and has settled."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.loaded_digest = file_digest(path)
        self._watched_digest = self.loaded_digest

    def loading(self) -> None:
        """The file is being (re)loaded now: its current content is the loaded one."""
        self.loaded_digest = file_digest(self.path)

    def changed(self) -> bool:
        digest = file_digest(self.path)
        # An editor or `cp` may be midway through writing it (a cut-off file can parse, with tables
        # missing): reload once the file has stayed the same for one watch interval.
        settled = digest == self._watched_digest
        self._watched_digest = digest
        return settled and digest != self.loaded_digest


@dataclass(frozen=True)
class TableChanges:
    """Table entries a new config removes, and those it adds or changes (each gets a fresh runtime)."""

    removed: tuple[str, ...]
    fresh: tuple[TableEntry, ...]


def table_changes(current: Mapping[str, TableEntry], old: DaemonSettings, new: DaemonConfig) -> TableChanges:
    """`current` maps served table names to their entries; a new poll interval reschedules them all."""
    reschedule_all = new.daemon.poll_interval_seconds != old.poll_interval_seconds
    wanted = {entry.name: entry for entry in new.tables}
    removed = tuple(name for name in current if name not in wanted)
    fresh = tuple(
        entry
        for name, entry in wanted.items()
        if reschedule_all or name not in current or current[name].fingerprint != entry.fingerprint
    )
    return TableChanges(removed, fresh)
