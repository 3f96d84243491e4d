"""Shared helpers for the cleaning tests: plan a fixture table, name what a plan deletes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from service.cleaning.snapshot import load_clean_snapshot
from service.config.cleaning import CleanConfig
from service.config.hoodie import HoodieConfig
from service.table.table import HudiTable
from strategies.cleaning import CleanPlan, plan_clean

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def fid(n: int) -> str:
    return f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"


def clean_config(props: Mapping[str, object], table_name: str = "fixture") -> CleanConfig:
    return HoodieConfig.from_mapping(props, table_name).clean


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
