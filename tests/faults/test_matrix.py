"""The fault matrix's CI subset covers every kill point of every service (pure)."""

from __future__ import annotations

import pytest

from tests.faults.matrix import KILL_POINTS, TABLE_TYPES, Recoverer, Service, all_cases, matrix_size

STEPS = ("plan_written", "inflight_written", "after_mdt", "before_completed", "after_completed")


def test_every_service_is_killed_at_each_step_boundary() -> None:
    names = {s: [p.name for p in points] for s, points in KILL_POINTS.items()}
    for service in Service:
        assert set(STEPS) <= set(names[service]), service
        assert "mid_rollback" in names[service] or service is Service.CLEANING, service
    assert "data_files" in names[Service.CLUSTERING] and "data_files" in names[Service.COMPACTION]
    assert "mid_deletes" in names[Service.CLEANING]


def test_ci_runs_every_kill_point_on_every_table_type_and_by_both_recoverers() -> None:
    ci = [c for c in all_cases() if c.in_ci]
    for service, points in KILL_POINTS.items():
        mine = [c for c in ci if c.service is service]
        assert sorted(c.point.name for c in mine) == sorted(p.name for p in points), service
        assert {c.table_type for c in mine} == set(TABLE_TYPES[service]), service
        assert {c.recoverer for c in mine} == set(Recoverer), service


def test_the_matrix_size_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\n{matrix_size()}")
    assert matrix_size() == (
        "fault matrix: 45 (kill point, service, table type) cells (clustering 7 x 2, cleaning 6 x 2, "
        "compaction 7 x 1, rollback 6 x 2), each recovered by the CLI and by the daemon: 90 cases, 26 in CI"
    )
