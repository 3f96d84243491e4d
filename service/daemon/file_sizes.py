"""The live base files of a table by size: totals, small files and a size distribution.

What the status page charts and the small-file gauges export. Live means the latest file slice of
every file group not replaced (what Hudi's readers see); small means below
`hoodie.clustering.plan.strategy.small.file.limit`, the limit the size-based planner uses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from service.daemon.history import FileStats
from service.daemon.run_log import size
from service.table.fs_view import FileSystemView

# Upper bounds of the distribution's buckets (powers of 4 from 4 KiB to 1 GiB), then the rest.
BUCKET_BOUNDS = tuple(4**k * 1024 for k in range(1, 11))


def bucket_index(n_bytes: int) -> int:
    """The distribution's bucket of a file of `n_bytes` (the last one: 1 GiB and more)."""
    return next((i for i, b in enumerate(BUCKET_BOUNDS) if n_bytes < b), len(BUCKET_BOUNDS))


def bucket_label(index: int) -> str:
    if index >= len(BUCKET_BOUNDS):
        return f">= {size(BUCKET_BOUNDS[-1])}"
    return f"< {size(BUCKET_BOUNDS[index])}"


@dataclass(frozen=True)
class FileSizes:
    stats: FileStats
    small_limit: int
    buckets: tuple[int, ...]  # file counts per BUCKET_BOUNDS bucket, one more for the rest
    as_of: str | None  # the latest completed instant the view was built from
    # `hoodie.clustering.plan.strategy.target.file.max.bytes`: the size clustering writes towards.
    target: int | None = None

    @classmethod
    def of(
        cls, views: Iterable[FileSystemView], small_limit: int, as_of: str | None, target: int | None = None
    ) -> FileSizes:
        """The latest base files of `views` (a table's batches of partitions, `HudiTable.iter_views`:
        counted a batch at a time, so a large table's view is never held whole)."""
        stats = FileStats()
        buckets = [0] * (len(BUCKET_BOUNDS) + 1)
        for view in views:
            sizes = [s.base_size_bytes for s in view.latest_file_slices() if s.base_file is not None]
            for n in sizes:
                buckets[bucket_index(n)] += 1
            stats = stats.plus(FileStats.of(sizes, small_limit))
        return cls(stats, small_limit, tuple(buckets), as_of, target)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.stats.to_json(),
            "small_file_limit_bytes": self.small_limit,
            "target_file_bytes": self.target,
            "as_of_instant": self.as_of,
            "distribution": [
                {"below_bytes": BUCKET_BOUNDS[i] if i < len(BUCKET_BOUNDS) else None, "files": n}
                for i, n in enumerate(self.buckets)
            ],
        }
