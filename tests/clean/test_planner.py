"""plan_clean on fixture tables: every Hudi 0.15 cleaning rule, one behaviour per test."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from service.config.cleaning import CleaningPolicy
from service.errors import TableServicesRefusedError
from service.table.codecs import WriteOperationType
from service.table.instant import Action, State
from service.table.table import HudiTable
from strategies.cleaning import earliest_commit_to_retain
from tests.clean.helpers import NOW, clean_config, fid, plan_table, planned_names
from tests.support.fixtures import FileSpec, FixtureTable, LogSpec, ts

COMMITS = "hoodie.cleaner.commits.retained"
HOURS = "hoodie.cleaner.hours.retained"
VERSIONS = "hoodie.cleaner.fileversions.retained"


def _versions(t: FixtureTable, times: list[int], partition: str = "a", n: int = 1) -> None:
    """One commit per time, each rewriting file group `fid(n)` in `partition`."""
    for i in times:
        t.commit(ts(i), [FileSpec(partition, fid(n))])


def _mid(n: int) -> str:
    """An instant time half a second after ts(n)."""
    return ts(n)[:-3] + "500"


def _name(t: FixtureTable, i: int, n: int = 1, partition: str = "a") -> str:
    return t.file_name(partition, fid(n), ts(i))


# ------------------------------------------------------------------ KEEP_LATEST_COMMITS
@pytest.mark.parametrize(
    ("retained", "ectr", "deleted"),
    [(1, 5, [1, 2, 3]), (2, 4, [1, 2]), (3, 3, [1]), (4, 2, []), (5, None, [])],
)
def test_keep_latest_commits_keeps_latest_and_newest_before_ectr(
    tmp_path: Path, retained: int, ectr: int | None, deleted: list[int]
) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2, 3, 4, 5])
    t.commit(_mid(1), [FileSpec("a", fid(2))])  # a group with a single version is never touched
    plan = plan_table(tmp_path, {COMMITS: retained})
    assert planned_names(plan) == {_name(t, i) for i in deleted}
    if plan is not None:
        assert plan.earliest_commit_to_retain is not None
        assert plan.earliest_commit_to_retain.timestamp == ts(ectr or 0)
        assert plan.last_completed_commit_timestamp == ts(5)
        assert plan.policy is CleaningPolicy.KEEP_LATEST_COMMITS


def test_keep_latest_commits_pending_commit_holds_ectr_back(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2])
    t.commit(ts(3), [FileSpec("b", fid(3))], state=State.INFLIGHT)
    _versions(t, [4, 5, 6])
    table = HudiTable.open(str(tmp_path))
    ectr = earliest_commit_to_retain(table.load_timeline(), clean_config({COMMITS: 2}), NOW, UTC)
    assert ectr is not None and ectr.timestamp == ts(2)  # last completed before the pending ts(3)
    # Without the pending instant the ECTR would be ts(5) and ts(1), ts(2) would go.
    assert plan_table(tmp_path, {COMMITS: 2}) is None


def test_keep_latest_commits_pending_clustering_holds_ectr_back(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2, 3])
    t.commit(_mid(3), [FileSpec("a", fid(2))])
    t.pending_clustering(ts(4), [("a", fid(2))])
    _versions(t, [5, 6])
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None and plan.earliest_commit_to_retain is not None
    assert plan.earliest_commit_to_retain.timestamp == _mid(3)
    assert planned_names(plan) == {_name(t, 1), _name(t, 2)}


def test_keep_latest_commits_nothing_to_clean_without_enough_commits(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2, 3])
    assert plan_table(tmp_path, {COMMITS: 3}) is None


# ------------------------------------------------------------------ KEEP_LATEST_BY_HOURS
def _hourly(t: FixtureTable) -> None:
    for hour in range(5):  # 00:00 .. 04:00
        t.commit(ts(hour * 60), [FileSpec("a", fid(1))])


@pytest.mark.parametrize(("hours", "deleted"), [(1, [0, 60, 120]), (2, [0, 60]), (3, [0]), (10, [])])
def test_keep_latest_by_hours_ectr_is_first_commit_inside_window(
    tmp_path: Path, hours: int, deleted: list[int]
) -> None:
    t = FixtureTable(tmp_path)
    _hourly(t)
    now = datetime(2024, 1, 1, 4, 30, tzinfo=UTC)
    plan = plan_table(tmp_path, {HOURS: hours}, now=now)
    assert planned_names(plan) == {_name(t, i) for i in deleted}
    if plan is not None:
        assert plan.policy is CleaningPolicy.KEEP_LATEST_BY_HOURS


def test_keep_latest_by_hours_uses_the_timeline_zone(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _hourly(t)
    chicago = ZoneInfo("America/Chicago")  # UTC-6 in January
    now = datetime(2024, 1, 1, 10, 30, tzinfo=UTC)  # 04:30 in Chicago
    assert planned_names(plan_table(tmp_path, {HOURS: 2}, now=now, zone=chicago)) == {
        _name(t, 0),
        _name(t, 60),
    }
    # Read as UTC, every instant is older than 08:30: no commit in the window, nothing is cleaned.
    assert plan_table(tmp_path, {HOURS: 2}, now=now, zone=UTC) is None


def test_keep_latest_by_hours_not_held_back_by_pending_instant(tmp_path: Path) -> None:
    """Java's getEarliestCommitToRetain applies the pending-instant rule to KEEP_LATEST_COMMITS only."""
    t = FixtureTable(tmp_path)
    _hourly(t)
    t.commit(ts(30), [FileSpec("b", fid(2))], state=State.INFLIGHT)
    plan = plan_table(tmp_path, {HOURS: 2}, now=datetime(2024, 1, 1, 4, 30, tzinfo=UTC))
    assert plan is not None and plan.earliest_commit_to_retain is not None
    assert plan.earliest_commit_to_retain.timestamp == ts(180)


# ------------------------------------------------------------------ KEEP_LATEST_FILE_VERSIONS
@pytest.mark.parametrize(("versions", "deleted"), [(1, [1, 2, 3]), (2, [1, 2]), (3, [1]), (4, [])])
def test_keep_latest_file_versions_keeps_newest_versions(
    tmp_path: Path, versions: int, deleted: list[int]
) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2, 3, 4])
    plan = plan_table(tmp_path, {VERSIONS: versions})
    assert planned_names(plan) == {_name(t, i) for i in deleted}
    if plan is not None:
        assert plan.earliest_commit_to_retain is None and plan.earliest_commit_to_retain_time == ""


def test_keep_latest_file_versions_deletes_replaced_groups_at_once(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))])
    t.replace(ts(2), [FileSpec("a", fid(3))], {"a": [fid(1)]})
    assert planned_names(plan_table(tmp_path, {VERSIONS: 3})) == {_name(t, 1, n=1)}


# ------------------------------------------------------------------ replaced file groups
def _replaced_history(t: FixtureTable) -> None:
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))])
    t.commit(ts(2), [FileSpec("a", fid(1))])
    t.replace(ts(3), [FileSpec("a", fid(3))], {"a": [fid(1), fid(2)]})
    t.commit(ts(4), [FileSpec("a", fid(3))])
    t.commit(ts(5), [FileSpec("a", fid(3))])


def test_replaced_groups_cleaned_once_replace_is_before_ectr(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _replaced_history(t)
    plan = plan_table(tmp_path, {COMMITS: 2})  # ECTR ts(4) > replace ts(3)
    assert planned_names(plan) == {_name(t, 1, n=1), _name(t, 2, n=1), _name(t, 1, n=2)}


def test_replaced_groups_kept_while_replace_is_at_or_after_ectr(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _replaced_history(t)
    assert plan_table(tmp_path, {COMMITS: 3}) is None  # ECTR ts(3) == replace instant


def test_savepointed_file_of_replaced_group_is_kept(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _replaced_history(t)
    t.savepoint(ts(1), {"a": [_name(t, 1, n=1)]})
    assert planned_names(plan_table(tmp_path, {COMMITS: 2})) == {_name(t, 2, n=1), _name(t, 1, n=2)}


# ------------------------------------------------------------------ savepoints and pending operations
def test_savepointed_slice_is_never_cleaned(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2, 3, 4, 5])
    t.savepoint(ts(2), {"a": [_name(t, 2)]})
    assert planned_names(plan_table(tmp_path, {COMMITS: 1})) == {_name(t, 1), _name(t, 3)}
    assert planned_names(plan_table(tmp_path, {VERSIONS: 1})) == {_name(t, 1), _name(t, 3), _name(t, 4)}


def test_files_of_pending_clustering_plan_are_never_cleaned(tmp_path: Path) -> None:
    """Beyond Hudi: a group updated after its clustering was planned keeps the slice the plan reads."""
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2])
    t.pending_clustering(ts(3), [("a", fid(1))])  # reads the ts(2) slice
    _versions(t, [4])
    assert planned_names(plan_table(tmp_path, {VERSIONS: 1})) == {_name(t, 1)}


def test_slices_needed_by_pending_compaction_are_kept(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path, table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1))], action=Action.DELTA_COMMIT)
    t.commit(ts(2), [], logs=[LogSpec("a", fid(1), ts(1))], action=Action.DELTA_COMMIT)
    t.pending_compaction(ts(3), [("a", fid(1), ts(1))])
    t.commit(ts(4), [], logs=[LogSpec("a", fid(1), ts(3))], action=Action.DELTA_COMMIT)
    # V=1 and a pending compaction: Hudi keeps V-1 = 0 slices beyond those the compaction needs; the
    # ts(1) slice (base + log) is needed, and the ts(3) slice (logs on the compaction) too.
    assert plan_table(tmp_path, {VERSIONS: 1}) is None


def test_replaced_group_slice_needed_by_pending_compaction_is_kept(tmp_path: Path) -> None:
    """Beyond Hudi, which applies the compaction rule to groups that are not replaced only."""
    t = FixtureTable(tmp_path, table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("a", fid(2))], action=Action.DELTA_COMMIT)
    t.pending_compaction(ts(2), [("a", fid(1), ts(1))])
    t.replace(ts(3), [FileSpec("a", fid(3))], {"a": [fid(1), fid(2)]})
    assert planned_names(plan_table(tmp_path, {VERSIONS: 1})) == {_name(t, 1, n=2)}


def test_pending_log_compaction_protects_its_slices(tmp_path: Path) -> None:
    """`isFileSliceNeededForPendingMajorOrMinorCompaction`: a log compaction's input slice and every
    later one are kept, and the group keeps one version fewer besides (FILE_VERSIONS)."""
    t = FixtureTable(tmp_path, table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1))], action=Action.DELTA_COMMIT)
    t.commit(ts(2), [FileSpec("a", fid(1))], action=Action.COMMIT)  # a compaction's output
    t.commit(ts(3), [], logs=[LogSpec("a", fid(1), ts(2), 1)], action=Action.DELTA_COMMIT)
    t.pending_compaction(ts(4), [("a", fid(1), ts(1))], action=Action.LOG_COMPACTION)
    assert plan_table(tmp_path, {VERSIONS: 1}) is None


def test_log_files_are_deleted_with_their_slice(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path, table_type="MERGE_ON_READ")
    t.commit(ts(1), [FileSpec("a", fid(1))], action=Action.DELTA_COMMIT)
    t.commit(
        ts(2),
        [],
        logs=[LogSpec("a", fid(1), ts(1), 1), LogSpec("a", fid(1), ts(1), 2)],
        action=Action.DELTA_COMMIT,
    )
    t.commit(ts(3), [FileSpec("a", fid(1))], action=Action.COMMIT)  # a compaction's output
    t.commit(ts(4), [FileSpec("a", fid(1))], action=Action.COMMIT)
    plan = plan_table(tmp_path, {COMMITS: 1})  # ECTR ts(4): keeps ts(4), ts(3)
    assert planned_names(plan) == {
        _name(t, 1),
        t.log_file_name(fid(1), ts(1), 1),
        t.log_file_name(fid(1), ts(1), 2),
    }


# ------------------------------------------------------------------ partitions to scan
def test_incremental_mode_scans_only_partitions_touched_since_last_ectr(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec(p, fid(n)) for n, p in enumerate("abc", start=1)])
    t.commit(ts(2), [FileSpec(p, fid(n)) for n, p in enumerate("abc", start=1)])
    t.commit(ts(4), [FileSpec("a", fid(1))])
    t.completed_clean(ts(5), earliest_commit_to_retain=ts(4), last_completed_commit=ts(4))
    t.commit(ts(6), [FileSpec("a", fid(1))])
    t.commit(ts(7), [FileSpec("b", fid(2))])
    t.commit(ts(8), [FileSpec("b", fid(2))])
    # ECTR (1 retained) = ts(8); incremental scans commits in [ts(4), ts(8)): partitions a and b.
    plan = plan_table(tmp_path, {COMMITS: 1}, full_listing=False)
    assert plan is not None and plan.incremental and plan.partitions_scanned == 2
    assert planned_names(plan) == {_name(t, i, n=1) for i in (1, 2, 4)} | {
        _name(t, i, 2, "b") for i in (1, 2)
    }
    full = plan_table(tmp_path, {COMMITS: 1, "hoodie.cleaner.incremental.mode": False})
    assert full is not None and not full.incremental and full.partitions_scanned == 3
    assert planned_names(full) == planned_names(plan) | {_name(t, 1, 3, "c")}


def test_incremental_mode_falls_back_to_full_scan_when_last_ectr_was_archived(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec(p, fid(n)) for n, p in enumerate("ab", start=1)])
    t.completed_clean(ts(4), earliest_commit_to_retain="20231231000000000", last_completed_commit=ts(3))
    t.commit(ts(5), [FileSpec("a", fid(1))])
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None and not plan.incremental
    assert planned_names(plan) == {_name(t, i, 1, "a") for i in (1, 2)} | {
        _name(t, i, 2, "b") for i in (1, 2)
    }


def test_empty_last_clean_means_full_scan(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1))])
    requested = ts(4)
    t.storage.write_bytes(f".hoodie/{requested}.clean", b"")
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None and not plan.incremental
    assert planned_names(plan) == {_name(t, 1)}


# ------------------------------------------------------------------ partitionsToBeDeleted
def _partition_overwritten(t: FixtureTable) -> None:
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("d", fid(4))])
    t.replace(ts(2), [], {"d": [fid(4)]}, operation=WriteOperationType.DELETE_PARTITION)
    t.commit(ts(3), [FileSpec("a", fid(1))])
    t.commit(ts(4), [FileSpec("a", fid(1))])


def test_partition_with_no_file_group_left_is_deleted(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _partition_overwritten(t)
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None
    assert plan.partitions_to_be_deleted == ("d",)
    assert {x.file_name for x in plan.targets["d"]} == {_name(t, 1, 4, "d")}


def test_partition_with_pending_files_is_not_deleted(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _partition_overwritten(t)
    t.commit(ts(5), [FileSpec("d", fid(5))], state=State.INFLIGHT)
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None and plan.partitions_to_be_deleted == ()


def test_partition_replaced_at_or_after_ectr_is_not_deleted(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("d", fid(4))])
    t.commit(ts(2), [FileSpec("a", fid(1)), FileSpec("d", fid(4))])
    t.replace(ts(3), [], {"d": [fid(4)]}, operation=WriteOperationType.DELETE_PARTITION)
    plan = plan_table(tmp_path, {COMMITS: 1})  # ECTR = ts(3): the replace is not before it
    assert plan is not None and plan.partitions_to_be_deleted == ()
    assert planned_names(plan) == {_name(t, 1, 1, "a")}


# ------------------------------------------------------------------ non-partitioned
def test_non_partitioned_table(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path, partitioned=False)
    _versions(t, [1, 2, 3], partition="")
    plan = plan_table(tmp_path, {COMMITS: 1})
    assert plan is not None and set(plan.targets) == {""}
    assert planned_names(plan) == {t.file_name("", fid(1), ts(1))}


CAP = "hoodie.clean.max.commits.to.clean"


def test_hudi_1_2s_cap_cleans_at_most_n_commits_past_the_last_cleans_earliest_commit_to_retain(
    tmp_path: Path,
) -> None:
    """`CleanerUtils.capCommitsToClean`: the last clean retained from ts(2); the policy (1 retained)
    would retain from ts(9), releasing ts(2)..ts(8). With a cap of 3 only ts(2), ts(3), ts(4) go: the
    clean retains from ts(5), and the next one goes on from there. Without a previous clean there is
    nothing to cap."""
    t = FixtureTable(tmp_path)
    _versions(t, [1, 2])
    t.completed_clean(_mid(2), earliest_commit_to_retain=ts(2), last_completed_commit=ts(2))
    _versions(t, [3, 4, 5, 6, 7, 8, 9])
    timeline = HudiTable.open(str(tmp_path)).load_timeline()
    capped = clean_config({COMMITS: 1, CAP: 3})
    ectr = earliest_commit_to_retain(timeline, capped, NOW, UTC, previous=ts(2))
    assert ectr is not None and ectr.timestamp == ts(5)
    assert earliest_commit_to_retain(timeline, capped, NOW, UTC) is not None  # first clean: no cap
    assert earliest_commit_to_retain(timeline, capped, NOW, UTC).timestamp == ts(9)  # type: ignore[union-attr]
    plan = plan_table(tmp_path, {COMMITS: 1, CAP: 3})
    assert plan is not None and plan.earliest_commit_to_retain is not None
    assert plan.earliest_commit_to_retain.timestamp == ts(5)
    assert planned_names(plan) == {_name(t, i) for i in (1, 2, 3)}  # the versions before ts(4)'s
    uncapped = plan_table(tmp_path, {COMMITS: 1, CAP: 7})  # 7 eligible: not more than the cap
    assert uncapped is not None and uncapped.earliest_commit_to_retain is not None
    assert uncapped.earliest_commit_to_retain.timestamp == ts(9)
    files = plan_table(tmp_path, {"hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS", VERSIONS: 1, CAP: 1})
    assert files is not None and files.earliest_commit_to_retain is None  # the cap never applies there


REGEX, SELECTED = "hoodie.clean.partition.filter.regex", "hoodie.clean.partition.filter.selected"


def test_hudi_1_2s_partition_filter_narrows_full_scan_cleans_and_is_refused_with_incremental_mode(
    tmp_path: Path,
) -> None:
    """`CleanPlanner.getPartitionPathsForFullCleaning`: a full scan cleans only the partitions the
    selected list names (it wins) or the regex matches whole; with incremental mode on Hudi refuses
    the filter (a state with its fix here). An incremental clean never reads it."""
    t = FixtureTable(tmp_path)
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec(p, fid(n)) for n, p in enumerate(("a", "b", "ab"), start=1)])
    full = {
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
        VERSIONS: 1,
        "hoodie.cleaner.incremental.mode": False,
    }
    everything = plan_table(tmp_path, full)
    assert everything is not None and set(everything.targets) == {"a", "b", "ab"}
    by_regex = plan_table(tmp_path, {**full, REGEX: "a.*"})
    assert by_regex is not None and set(by_regex.targets) == {"a", "ab"}  # "b" does not match whole
    by_list = plan_table(tmp_path, {**full, REGEX: "a.*", SELECTED: "b,zz"})
    assert by_list is not None and set(by_list.targets) == {"b"}
    with pytest.raises(TableServicesRefusedError, match=r"incremental\.mode=true") as refused:
        plan_table(tmp_path, {**full, "hoodie.cleaner.incremental.mode": True, REGEX: "a.*"})
    assert refused.value.reason == "config" and "incremental.mode=false" in (refused.value.fix or "")
    t.completed_clean(_mid(3), earliest_commit_to_retain=ts(2), last_completed_commit=ts(3))
    t.commit(ts(4), [FileSpec("b", fid(2))])
    incremental = plan_table(tmp_path, {COMMITS: 1, REGEX: "a.*"}, full_listing=False)
    assert incremental is not None and incremental.incremental  # the regex would have left "b" out
    assert set(incremental.targets) == {"a", "b", "ab"}
