"""The fault matrix's CI subset covers every kill point of every service (pure)."""

from __future__ import annotations

import re

import pytest

from tests.faults.matrix import (
    KILL_POINTS,
    KILL_POINTS_OF_LAYOUT,
    LAYOUTS,
    TABLE_TYPES,
    Recoverer,
    Service,
    all_cases,
    matrix_size,
)

STEPS = ("plan_written", "inflight_written", "after_mdt", "before_completed", "after_completed")
ARCHIVAL_STEPS = {
    1: ("archive_written", "mid_pending_deletes", "mid_completed_deletes", "merge_planned",
        "mid_merge_deletes"),
    2: ("data_file_written", "manifest_written", "version_written", "mid_pending_deletes",
        "mid_completed_deletes", "layer_compacted", "mid_history_clean"),
}  # fmt: skip


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_service_is_killed_at_each_step_boundary(layout: int) -> None:
    names = {s: [p.name for p in points] for s, points in KILL_POINTS_OF_LAYOUT[layout].items()}
    assert tuple(names.pop(Service.ARCHIVAL)) == ARCHIVAL_STEPS[layout]
    for service in names:
        assert set(STEPS) <= set(names[service]), service
        assert "mid_rollback" in names[service] or service is Service.CLEANING, service
    assert "data_files" in names[Service.CLUSTERING] and "data_files" in names[Service.COMPACTION]
    assert "mid_deletes" in names[Service.CLEANING]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ci_runs_every_kill_point_on_every_table_type_and_by_both_recoverers(layout: int) -> None:
    ci = [c for c in all_cases(layout) if c.in_ci]
    assert {c.layout for c in ci} == {layout}
    for service, points in KILL_POINTS_OF_LAYOUT[layout].items():
        mine = [c for c in ci if c.service is service]
        assert sorted(c.point.name for c in mine) == sorted(p.name for p in points), service
        assert {c.table_type for c in mine} == set(TABLE_TYPES[service]), service
        assert {c.recoverer for c in mine} == set(Recoverer), service


def test_the_matrix_size_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print("", *(matrix_size(layout) for layout in LAYOUTS), sep="\n")
    services = "clustering 7 x 2, cleaning 6 x 2, compaction 7 x 1, rollback 6 x 2"
    assert matrix_size(1) == (
        f"fault matrix, timeline layout 1: 55 (kill point, service, table type) cells ({services}, "
        "archival 5 x 2), each recovered by the CLI and by the daemon: 110 cases, 31 in CI"
    )
    assert matrix_size(2) == (
        f"fault matrix, timeline layout 2: 59 (kill point, service, table type) cells ({services}, "
        "archival 7 x 2), each recovered by the CLI and by the daemon: 118 cases, 33 in CI"
    )


def test_layout_2_kills_where_versions_8_and_9_write() -> None:
    """A pending clustering is a `clustering` instant there, and completed files carry the completion
    time: a layout-1 pattern would never match, and the case would fail as not killed."""
    points = {(s, p.name): p for s, ps in KILL_POINTS_OF_LAYOUT[2].items() for p in ps}
    [requested] = points[(Service.CLUSTERING, "plan_written")].kills
    assert re.match(requested.pattern, ".hoodie/timeline/20261207000000000.clustering.requested")
    [completed] = points[(Service.CLEANING, "after_completed")].kills
    assert re.match(completed.pattern, ".hoodie/timeline/20261207000000000_20261207000001000.clean")
    assert not re.match(completed.pattern, ".hoodie/20261207000000000.clean")
    [mdt] = points[(Service.COMPACTION, "after_mdt")].kills
    assert re.match(
        mdt.pattern, ".hoodie/metadata/.hoodie/timeline/20261207000000000_20261207000001000.deltacommit"
    )
    [history] = points[(Service.ARCHIVAL, "layer_compacted")].kills
    assert re.match(history.pattern, ".hoodie/timeline/history/20261207000000000_20261207000001000_1.parquet")
    assert KILL_POINTS is KILL_POINTS_OF_LAYOUT[1]
