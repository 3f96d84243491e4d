"""Table-relative paths of a version-6 table (timeline layout 1) the fault tests aim their faults at:
the kill points' files and the requests the storage proxy fails."""

from __future__ import annotations


def instant_file(extension: str) -> str:
    """A timeline file `.hoodie/<instant>.<extension>` (`extension` a regex)."""
    return rf"^\.hoodie/\d{{17}}\.{extension}$"


INSTANT_FILE = instant_file(r"[a-z.]+")
PLAN = instant_file(r"(clean|replacecommit|compaction|rollback)\.requested")
MDT_DELTACOMMIT_COMPLETED = r"^\.hoodie/metadata/\.hoodie/\d{17}\.deltacommit$"
# A data file (base or log) outside `.hoodie`: one a writer task or a delete touches (a log file's
# write token has no dot, so Hadoop's `.crc` siblings do not match).
DATA_FILE = r"^(?!\.hoodie/)(.+/)?[^/]+\.(parquet|log\.\d+_[^/.]+)$"
BASE_FILE = r"^(?!\.hoodie/)(.+/)?[^/]+\.parquet$"
