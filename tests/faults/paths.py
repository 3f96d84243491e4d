"""Table-relative paths the fault tests aim their faults at: the kill points' files and the requests the
storage proxy fails. Timeline layout 1 (table version 6): `.hoodie/<instant>.<action>[.<state>]`;
layout 2 (versions 8 and 9): `.hoodie/timeline/<instant>.<action>.<state>` while pending and
`.hoodie/timeline/<instant>_<completion time>.<action>` once completed; the metadata table's timeline
alike under `.hoodie/metadata/.hoodie/`."""

from __future__ import annotations


def timeline_folder(layout: int, mdt: bool = False) -> str:
    """The folder (a regex) of the table's, or its metadata table's, active timeline."""
    folder = r"\.hoodie/metadata/\.hoodie/" if mdt else r"\.hoodie/"
    return folder if layout == 1 else rf"{folder}timeline/"


def instant_file(extension: str, layout: int = 1) -> str:
    """A pending timeline file `<instant>.<extension>` (`extension` a regex); on layout 1 also a
    completed one (`extension` an action)."""
    return rf"^{timeline_folder(layout)}\d{{17}}\.{extension}$"


def completed_file(action: str, layout: int = 1, *, mdt: bool = False) -> str:
    """The completed file of an instant of `action` (a regex), of the table or of its metadata table."""
    if layout == 1:
        return rf"^{timeline_folder(layout, mdt)}\d{{17}}\.{action}$"
    return rf"^{timeline_folder(layout, mdt)}\d{{17}}_\d{{17}}\.{action}$"


INSTANT_FILE = instant_file(r"[a-z.]+")
PLAN = instant_file(r"(clean|replacecommit|compaction|rollback)\.requested")
MDT_DELTACOMMIT_COMPLETED = completed_file("deltacommit", mdt=True)
# A data file (base or log) outside `.hoodie`: one a writer task or a delete touches (a log file's
# write token has no dot, so Hadoop's `.crc` siblings do not match).
DATA_FILE = r"^(?!\.hoodie/)(.+/)?[^/]+\.(parquet|log\.\d+_[^/.]+)$"
BASE_FILE = r"^(?!\.hoodie/)(.+/)?[^/]+\.parquet$"
