"""What the daemon keeps per idle table once it has looked at it: ten thousand tables must fit in a
daemon of about 1 GB (`python -m bench daemon --fleet`), so the memory its Python objects hold
per table is bounded here, measured with tracemalloc on the benchmark's own tables (101 active
instants, 4 partitions, a completed clustering and clean). A count of allocations, not a timing."""

from __future__ import annotations

import gc
import statistics
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

from bench import daemon as bench_daemon
from service.config.daemon import load_daemon_config
from service.daemon.runtime import TableRuntime, TableService
from service.daemon.scheduler import Daemon

WARM = 5  # tables ticked before measuring: module-level caches, the first schema, the metric families
WINDOW = 20
WINDOWS = 3
# Measured at 42 KiB (Python 3.11, the pinned prometheus-client); 57 KiB while every gauge series
# was a prometheus-client object and equal commit summaries were objects of their own; 126 KiB while
# the timeline kept a string object per instant file, each commit summary its own copy of equal
# values, and every table two lock histograms before its first lock.
MAX_KIB_PER_TABLE = 50


def test_an_idle_table_costs_the_daemon_a_bounded_amount_of_memory(tmp_path: Path) -> None:
    tables = WARM + WINDOW * WINDOWS
    (tmp_path / "tables").mkdir()
    bench_daemon.build_tables(tmp_path, tables)
    config_path = tmp_path / "daemon.yaml"
    bench_daemon.write_config(config_path, tmp_path, bench_daemon.Shape(tables, 60.0, 1, 1))
    daemon = Daemon(load_daemon_config(config_path))
    services = [s for s in TableService if s is not TableService.REPAIR]
    runtimes = list(daemon.runtimes.values())
    now = datetime.now(UTC)

    def tick(batch: list[TableRuntime]) -> None:
        for runtime in batch:
            for service in services:
                outcome = daemon.run_iteration(runtime, service, now)
                assert outcome.value in ("done", "not_applicable"), (runtime.name, service, outcome)

    tick(runtimes[:WARM])
    # A window's growth includes any one-off resize of a process-wide table (the interpreter's
    # interned strings, say: megabytes at once): the median of three windows leaves it out.
    per_table_kib = []
    tracemalloc.start()
    try:
        for w in range(WINDOWS):
            gc.collect()
            before = tracemalloc.take_snapshot()
            tick(runtimes[WARM + w * WINDOW : WARM + (w + 1) * WINDOW])
            gc.collect()
            after = tracemalloc.take_snapshot()
            kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
            per_table_kib.append(kept / WINDOW / 1024)
    finally:
        tracemalloc.stop()
    assert statistics.median(per_table_kib) <= MAX_KIB_PER_TABLE, f"KiB kept per idle table: {per_table_kib}"
    # An idle table never locked: it has no lock histograms (a dozen series each on /metrics).
    registry = daemon.metrics.registry
    for runtime in runtimes:
        for name in ("lock_wait_seconds_count", "lock_hold_seconds_count"):
            assert registry.get_sample_value(f"hudi_table_service_{name}", {"table": runtime.name}) is None
