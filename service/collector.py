"""The process's cyclic garbage collector, set for planning large tables.

Planning a clean or a clustering of a table of a million files allocates tens of millions of objects
(listing entries, file slices, plan targets), nearly all freed by reference counting: the collector
has nothing to find in them. CPython's default (a young collection every 700 allocations net, an old
one every 100 young ones, a full one when the heap grew by a quarter) then walks the growing heap over
and over: a full clean dry run of 10^6 files spent 11 of its 39 s in the collector
(`python -m bench scale`). Collections every 100,000 allocations net keep the cycles a daemon makes
(exceptions with their frames, the Spark gateway's objects) collected within a tick of work, at a
fraction of the cost.
"""

from __future__ import annotations

import gc

THRESHOLDS = (100_000, 20, 10)


def set_for_planning() -> None:
    """Applied once, at the start of the CLI and the daemon (`service.cli.main`)."""
    gc.set_threshold(*THRESHOLDS)
