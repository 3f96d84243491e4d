"""Shared helpers for the cleaning tests: plan a fixture table, name what a plan deletes."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from service.cleaning import Cleaner, CleanOptions
from service.cleaning.snapshot import load_clean_snapshot
from service.config.cleaning import CleanConfig
from service.config.hoodie import HoodieConfig
from service.lock import InProcessTableLock
from service.lock.base import TableLock
from service.table.table import HudiTable
from strategies.cleaning import CleanPlan, plan_clean

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def clean_config(props: Mapping[str, object], table_name: str = "fixture") -> CleanConfig:
    return HoodieConfig.from_mapping(props, table_name).clean


def make_cleaner(
    table: HudiTable | Path,
    props: Mapping[str, object],
    options: CleanOptions | None = None,
    *,
    now: datetime | None = NOW,
    lock: TableLock | None = None,
    delete: Callable[[str], bool] | None = None,
    wall_clock: Callable[[], float] = time.time,
) -> Cleaner:
    """Our `Cleaner` as the tests run it: `props` over Hudi's defaults, an in-process lock on the
    table's base path (unless `lock`), a UTC timeline, and the clock stopped at `now` (None: the real
    clock, for tables a JVM wrote just now)."""
    if not isinstance(table, HudiTable):
        table = HudiTable.open(str(table))
    config = HoodieConfig.from_mapping(props, table.name)
    if lock is None:
        lock = InProcessTableLock(table.name, key=table.base_uri, default_timeout_s=5)
    if now is None:
        return Cleaner(table, config, lock, UTC, options, delete=delete, wall_clock=wall_clock)
    stopped = now
    return Cleaner(table, config, lock, UTC, options, lambda: stopped, delete, wall_clock)


def plan_table(
    base: Path,
    props: Mapping[str, object],
    now: datetime = NOW,
    zone: tzinfo = UTC,
    full_listing: bool = True,
) -> CleanPlan | None:
    table = HudiTable.open(str(base))
    config = clean_config(props, table.name)
    snapshot = load_clean_snapshot(table, table.load_timeline(), config, now, zone, full_listing)
    return plan_clean(snapshot, config, now)


def planned_names(plan: CleanPlan | None) -> set[str]:
    return set() if plan is None else {t.file_name for t in plan.all_targets}
