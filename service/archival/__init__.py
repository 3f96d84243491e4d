"""Archival: the window Hudi's archiver would archive (`planning`), read from a table."""

from __future__ import annotations

from service.archival.planning import archival_window, archive_location, archived_timeline_files, archiver_of

__all__ = ["archival_window", "archive_location", "archived_timeline_files", "archiver_of"]
