"""The cleaning orchestration on fixture tables: instants written, files deleted, safety refusals."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.cleaning import Cleaner, CleanOptions, CleanRunResult, render_result
from service.errors import HudiTableServiceError, PlanRefusedError
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.timeline import create_instant_file
from tests.clean.helpers import fid, make_cleaner
from tests.support.fixtures import FileSpec, FixtureTable, ts

COMMITS = "hoodie.cleaner.commits.retained"
VERSIONS = "hoodie.cleaner.fileversions.retained"


def _cleaner(
    base: Path,
    props: dict[str, object],
    options: CleanOptions | None = None,
    delete: Callable[[str], bool] | None = None,
) -> Cleaner:
    return make_cleaner(base, props, options, delete=delete)


def _age(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def _data_files(base: Path) -> set[str]:
    return {
        p.relative_to(base).as_posix()
        for p in base.rglob("*")
        if p.is_file() and ".hoodie" not in p.relative_to(base).parts and "partition_metadata" not in p.name
    }


def _clean_instants(base: Path) -> list[str]:
    return sorted(p.name for p in (base / ".hoodie").iterdir() if ".clean" in p.name)


def _history(t: FixtureTable) -> None:
    """Partitions a and b, three versions of one group each, one single-version group in a."""
    for i in (1, 2, 3):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])
    t.commit(ts(4), [FileSpec("a", fid(3))])


def _rel(t: FixtureTable, partition: str, n: int, i: int) -> str:
    return f"{partition}/{t.file_name(partition, fid(n), ts(i))}"


def test_clean_writes_hudi_instants_and_deletes_planned_files(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    before = _data_files(tmp_path)
    result = _cleaner(tmp_path, {COMMITS: 1}).run()

    # ECTR ts(4): ts(3) is both the latest slice and the newest before it; ts(1) and ts(2) go.
    expected = {_rel(t, p, n, i) for p, n in (("a", 1), ("b", 2)) for i in (1, 2)}
    assert before - _data_files(tmp_path) == expected
    [clean] = result.cleans
    assert (clean.files_deleted, clean.files_already_gone, clean.files_planned) == (4, 0, 4)
    assert clean.bytes_deleted > 0 and clean.incremental is False
    assert _clean_instants(tmp_path) == [
        f"{clean.instant_time}.clean{s}" for s in ("", ".inflight", ".requested")
    ]
    assert clean.instant_time > ts(4)

    storage = t.storage
    requested = Instant(clean.instant_time, Action.CLEAN, State.REQUESTED)
    plan_bytes = storage.read_bytes(LAYOUT_1.instant_path(requested))
    assert storage.read_bytes(LAYOUT_1.instant_path(requested.with_state(State.INFLIGHT))) == plan_bytes
    plan = codecs.decode(codecs.CleanerPlan, plan_bytes, "plan")
    assert plan.version == 2 and plan.policy == "KEEP_LATEST_COMMITS"
    assert plan.earliest_instant_to_retain == codecs.ActionInstant(
        timestamp=ts(4), action="commit", state="COMPLETED"
    )
    assert plan.last_completed_commit_timestamp == ts(4)
    assert plan.files_to_be_deleted_per_partition == {} and plan.partitions_to_be_deleted == ()
    stored = {p: set(infos) for p, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items()}
    assert stored == {
        p: {
            codecs.CleanFileInfo(file_path=storage.qualify(_rel(t, p, n, i)), is_bootstrap_base_file=False)
            for i in (1, 2)
        }
        for p, n in (("a", 1), ("b", 2))
    }
    meta = codecs.decode(
        codecs.CleanMetadata,
        storage.read_bytes(LAYOUT_1.instant_path(requested.with_state(State.COMPLETED))),
        "meta",
    )
    assert (meta.start_clean_time, meta.total_files_deleted, meta.version) == (clean.instant_time, 4, 2)
    assert (meta.earliest_commit_to_retain, meta.last_completed_commit_timestamp) == (ts(4), ts(4))
    assert meta.bootstrap_partition_metadata == {}
    a = meta.partition_metadata["a"]
    names = {t.file_name("a", fid(1), ts(i)) for i in (1, 2)}
    assert set(a.delete_path_patterns) == set(a.success_delete_files) == names and a.failed_delete_files == ()
    assert a.policy == "KEEP_LATEST_COMMITS" and a.is_partition_deleted is False


def test_clean_not_due_writes_nothing(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    result = _cleaner(tmp_path, {COMMITS: 1, "hoodie.clean.max.commits": 5}).run()
    assert result.cleans == () and "max.commits" in (result.skipped_reason or "")
    assert _clean_instants(tmp_path) == []


def test_clean_with_nothing_to_delete_writes_no_plan(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    result = _cleaner(tmp_path, {COMMITS: 10}).run()
    assert result.cleans == () and result.skipped_reason == "nothing to clean"
    assert _clean_instants(tmp_path) == []


def test_second_run_is_not_due_and_deletes_nothing(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    _cleaner(tmp_path, {COMMITS: 1}).run()
    after_first = _data_files(tmp_path)
    second = _cleaner(tmp_path, {COMMITS: 1}).run()
    assert second.cleans == () and _data_files(tmp_path) == after_first


def test_incremental_second_clean_after_more_commits(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    _cleaner(tmp_path, {COMMITS: 1}).run()
    t.commit(ts(10), [FileSpec("a", fid(1))])
    t.commit(ts(11), [FileSpec("a", fid(1))])
    result = _cleaner(tmp_path, {COMMITS: 1}).run()
    [clean] = result.cleans
    assert clean.incremental is True and clean.earliest_commit_to_retain == ts(11)
    assert {p.partition_path for p in clean.partitions} == {"a"}
    assert _rel(t, "a", 1, 10) in _data_files(tmp_path) and _rel(t, "a", 1, 3) not in _data_files(tmp_path)


def test_dry_run_reports_per_partition_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    before = _data_files(tmp_path)
    result = _cleaner(tmp_path, {COMMITS: 1}, CleanOptions(dry_run=True)).run()
    assert _data_files(tmp_path) == before and _clean_instants(tmp_path) == []
    [clean] = result.cleans
    assert clean.dry_run and clean.files_deleted == 0
    sizes = {
        p: sum((tmp_path / _rel(t, p, n, i)).stat().st_size for i in (1, 2)) for p, n in (("a", 1), ("b", 2))
    }
    assert {(p.partition_path, p.files, p.bytes) for p in clean.partitions} == {
        ("a", 2, sizes["a"]),
        ("b", 2, sizes["b"]),
    }
    text = render_result(result)
    assert "dry run" in text and f"a: 2 files, {sizes['a']} bytes" in text and "would delete 4 files" in text


def _crash_after(limit: int, storage_delete: Callable[[str], bool]) -> Callable[[str], bool]:
    calls: list[str] = []

    def delete(path: str) -> bool:
        if len(calls) >= limit:
            raise OSError(f"simulated crash before deleting {path}")
        calls.append(path)
        return storage_delete(path)

    return delete


def test_crash_between_inflight_and_completed_rerun_finishes_same_plan(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    for i in (1, 2, 3, 4):
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2)), FileSpec("c", fid(3))])
    before = _data_files(tmp_path)
    storage = t.storage
    with pytest.raises(HudiTableServiceError, match="stays inflight"):
        _cleaner(tmp_path, {COMMITS: 1}, delete=_crash_after(2, storage.delete_file)).run()
    [inflight, requested] = _clean_instants(tmp_path)
    assert inflight.endswith(".clean.inflight") and requested.endswith(".clean.requested")
    partly = before - _data_files(tmp_path)
    assert 0 < len(partly) < 6  # two slices per group are older than the ECTR's newest: 6 files planned
    # The crash was a while ago: an inflight clean without heartbeat is left alone for one window.
    _age(tmp_path / ".hoodie" / inflight, seconds=600)

    result = _cleaner(tmp_path, {COMMITS: 1}).run()
    [resumed] = result.cleans
    assert resumed.resumed and resumed.instant_time == requested.split(".")[0]
    assert resumed.files_deleted + resumed.files_already_gone == 6
    assert resumed.files_already_gone == len(partly)
    gone = before - _data_files(tmp_path)
    planned = {_rel(t, p, n, i) for p, n in (("a", 1), ("b", 2), ("c", 3)) for i in (1, 2)}
    assert gone == planned  # nothing outside the plan
    meta = codecs.decode(
        codecs.CleanMetadata,
        storage.read_bytes(f".hoodie/{resumed.instant_time}.clean"),
        "meta",
    )
    failed = {n for pm in meta.partition_metadata.values() for n in pm.failed_delete_files}
    assert failed == {p.rsplit("/", 1)[1] for p in partly}  # Java records already-gone files as failed
    assert meta.total_files_deleted == 6 - len(partly)


def test_pending_plan_completed_by_another_writer_is_fine(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    cleaner = _cleaner(tmp_path, {COMMITS: 1})
    original = cleaner._complete

    def other_writer_first(instant: Instant, metadata: codecs.CleanMetadata, *rest: Any) -> bool:
        completed = Instant(instant.timestamp, Action.CLEAN, State.COMPLETED)
        # e.g. a Java writer running the same plan
        create_instant_file(t.storage, LAYOUT_1, completed, codecs.encode(metadata))
        return original(instant, metadata, *rest)

    cleaner._complete = other_writer_first  # type: ignore[method-assign]
    [clean] = cleaner.run().cleans
    assert clean.completed_by_other_writer


def test_pending_plan_is_finished_before_a_new_one_is_scheduled(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    # A Java-written plan (full paths with the scheme) deleting one file, left requested.
    paths = {"a": [t.storage.qualify(_rel(t, "a", 1, 1))]}
    t.requested_clean(ts(5), paths, earliest_commit_to_retain=ts(2), last_completed_commit=ts(2))
    result = _cleaner(tmp_path, {COMMITS: 1}).run()
    first, second = result.cleans
    assert first.instant_time == ts(5)
    assert first.resumed and first.files_deleted == 1
    # The new plan (ECTR ts(4)) takes ts(1) and ts(2) of each group; a's ts(1) went with the first.
    assert not second.resumed and second.files_planned == 3 and second.files_deleted == 3
    assert _rel(t, "b", 2, 1) not in _data_files(tmp_path)


def test_version_1_plan_is_migrated_and_finished(tmp_path: Path) -> None:
    """Old writers stored file names per partition only; Java migrates them to full paths on read."""
    t = FixtureTable(tmp_path)
    _history(t)
    plan = codecs.CleanerPlan(
        earliest_instant_to_retain=None,
        last_completed_commit_timestamp=ts(4),
        policy="KEEP_LATEST_COMMITS",
        files_to_be_deleted_per_partition={"a": (t.file_name("a", fid(1), ts(1)),)},
        version=1,
    )
    create_instant_file(
        t.storage, LAYOUT_1, Instant(ts(5), Action.CLEAN, State.REQUESTED), codecs.encode(plan)
    )
    [clean] = _cleaner(tmp_path, {COMMITS: 10}).run().cleans
    assert clean.resumed and clean.files_deleted == 1
    assert _rel(t, "a", 1, 1) not in _data_files(tmp_path)


# ------------------------------------------------------------------ safety
def _stored_plan(t: FixtureTable, instant: str, paths: dict[str, list[str]]) -> None:
    t.requested_clean(instant, paths, last_completed_commit=ts(4), policy="KEEP_LATEST_FILE_VERSIONS")


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("outside", "outside the table"),
        ("latest", "latest snapshot"),
        ("metafile", "not a Hudi base or log file"),
        ("other-partition", "not directly in partition .a."),
        ("uncommitted", "pending or failed write"),
    ],
)
def test_unsafe_pending_plan_is_refused_and_deletes_nothing(tmp_path: Path, target: str, error: str) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    t.commit(ts(5), [FileSpec("a", fid(9))], state=State.INFLIGHT)
    outside = tmp_path.parent / "victim.parquet"
    outside.write_bytes(b"x")
    q = t.storage.qualify
    path = {
        "outside": f"file:{outside}",
        "latest": q(_rel(t, "a", 1, 3)),
        "metafile": q("a/.hoodie_partition_metadata"),
        "other-partition": q(_rel(t, "b", 2, 1)),
        "uncommitted": q(f"a/{t.file_name('a', fid(9), ts(5))}"),
    }[target]
    _stored_plan(t, ts(6), {"a": [q(_rel(t, "a", 1, 1)), path]})
    before = _data_files(tmp_path)
    with pytest.raises(HudiTableServiceError, match=error):
        _cleaner(tmp_path, {VERSIONS: 1}).run()
    assert _data_files(tmp_path) == before and outside.exists()
    assert _clean_instants(tmp_path) == [f"{ts(6)}.clean.requested"]  # not even moved to inflight


def _many_versions(t: FixtureTable) -> None:
    for i in range(1, 6):  # 5 versions of each group: keeping 1 deletes 80% of the files
        t.commit(ts(i), [FileSpec("a", fid(1)), FileSpec("b", fid(2))])


def test_volume_breaker_refuses_before_writing_a_plan(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _many_versions(t)
    before = _data_files(tmp_path)
    with pytest.raises(PlanRefusedError, match=r"8 of the 10 files of live file groups \(.*80%.*--force"):
        _cleaner(tmp_path, {VERSIONS: 1}).run()
    assert _data_files(tmp_path) == before and _clean_instants(tmp_path) == []
    # A higher limit, or --force, lets it run.
    result = _cleaner(tmp_path, {VERSIONS: 1}, CleanOptions(max_delete_fraction=0.8)).run()
    assert result.files_deleted == 8


def test_volume_breaker_force_overrides(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _many_versions(t)
    result: CleanRunResult = _cleaner(tmp_path, {VERSIONS: 1}, CleanOptions(force=True)).run()
    assert result.files_deleted == 8 and len(_data_files(tmp_path)) == 2


def test_volume_breaker_counts_every_partition_of_an_incremental_clean(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec(p, fid(n)) for n, p in enumerate("abcdef", start=1)])
    t.commit(ts(4), [FileSpec("a", fid(1))])
    t.commit(ts(5), [FileSpec("a", fid(1))])
    t.completed_clean(ts(6), earliest_commit_to_retain=ts(4), last_completed_commit=ts(5))
    t.commit(ts(7), [FileSpec("a", fid(1))])
    t.commit(ts(8), [FileSpec("a", fid(1))])
    # Incremental: only partition a is listed, where 5 of its 7 files go (71%); of the table, 5 of 22.
    result = _cleaner(tmp_path, {COMMITS: 1}, CleanOptions(max_delete_fraction=0.5)).run()
    assert result.files_deleted == 5 and result.cleans[0].incremental


def _clustered_small_files(t: FixtureTable) -> None:
    """4 single-version file groups in each of 3 partitions, then a clustering replacing all 12 by
    one file group per partition."""
    partitions = ("a", "b", "c")
    for i in range(1, 5):
        t.commit(ts(i), [FileSpec(p, fid(10 * n + i)) for n, p in enumerate(partitions, start=1)])
    inputs = [(p, fid(10 * n + i)) for n, p in enumerate(partitions, start=1) for i in range(1, 5)]
    t.pending_clustering(ts(5), inputs, inflight=True)
    outputs = [FileSpec(p, fid(10 * n)) for n, p in enumerate(partitions, start=1)]
    t.complete_clustering(ts(5), outputs, {p: [f for q, f in inputs if q == p] for p in partitions})


def test_volume_breaker_does_not_count_files_of_replaced_file_groups(tmp_path: Path) -> None:
    """The normal clean after a clustering: it deletes the 12 replaced files, 80% of the 15 files
    on storage but none of the live file groups' (which the old breaker refused, issue 31)."""
    t = FixtureTable(tmp_path)
    _clustered_small_files(t)
    result = _cleaner(tmp_path, {VERSIONS: 1, "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}).run()
    assert result.files_deleted == 12
    assert _data_files(tmp_path) == {
        f"{p}/{t.file_name(p, fid(10 * n), ts(5))}" for n, p in enumerate("abc", 1)
    }


def test_volume_breaker_trips_on_live_file_groups_beside_replaced_ones(tmp_path: Path) -> None:
    """Replaced groups' files in the plan do not hide a plan deleting most live groups' versions:
    5 versions of the 3 clustered groups, keeping 1 deletes 12 of their 15 files (80%)."""
    t = FixtureTable(tmp_path)
    _clustered_small_files(t)
    for i in range(6, 10):
        t.commit(ts(i), [FileSpec(p, fid(10 * n)) for n, p in enumerate("abc", start=1)])
    before = _data_files(tmp_path)
    props = {VERSIONS: 1, "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}
    message = (
        r"12 of the 15 files of live file groups \(.*80%.*besides 12 file\(s\) of replaced file groups, "
        r"not counted.*more than the limit of 75%"
    )
    with pytest.raises(PlanRefusedError, match=message):
        _cleaner(tmp_path, props).run()
    assert _data_files(tmp_path) == before and _clean_instants(tmp_path) == []


def test_volume_breaker_whole_table_count_leaves_out_replaced_file_groups(tmp_path: Path) -> None:
    """An incremental clean over the limit within its listed partition counts the whole table, by
    the same rule: files of file groups replaced in partitions it does not list count for nothing.
    Partition a: 5 of its 7 files go (71%); b to f hold 15 files of replaced groups only."""
    t = FixtureTable(tmp_path)
    for i in range(1, 4):
        t.commit(ts(i), [FileSpec(p, fid(n)) for n, p in enumerate("abcdef", start=1)])
    replaced = {p: [fid(n)] for n, p in enumerate("bcdef", start=2)}
    t.replace(ts(3)[:-3] + "500", [], replaced, operation=codecs.WriteOperationType.DELETE_PARTITION)
    t.commit(ts(4), [FileSpec("a", fid(1))])
    t.commit(ts(5), [FileSpec("a", fid(1))])
    t.completed_clean(ts(6), earliest_commit_to_retain=ts(4), last_completed_commit=ts(5))
    t.commit(ts(7), [FileSpec("a", fid(1))])
    t.commit(ts(8), [FileSpec("a", fid(1))])
    forced = _cleaner(tmp_path, {COMMITS: 1}, CleanOptions(dry_run=True, force=True)).run()
    assert [(c.incremental, c.files_planned) for c in forced.cleans] == [(True, 5)]
    with pytest.raises(PlanRefusedError, match=r"5 of the 7 files of live file groups \(.*71%"):
        _cleaner(tmp_path, {COMMITS: 1}, CleanOptions(max_delete_fraction=0.5)).run()


def test_partition_left_empty_is_removed(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    t.commit(ts(1), [FileSpec("a", fid(1)), FileSpec("d", fid(4))])
    t.replace(ts(2), [], {"d": [fid(4)]}, operation=codecs.WriteOperationType.DELETE_PARTITION)
    t.commit(ts(3), [FileSpec("a", fid(1))])
    t.commit(ts(4), [FileSpec("a", fid(1))])
    result = _cleaner(tmp_path, {COMMITS: 1}, CleanOptions(force=True)).run()
    [clean] = result.cleans
    assert [p.partition_deleted for p in clean.partitions if p.partition_path == "d"] == [True]
    assert not (tmp_path / "d").exists()
    meta = codecs.decode(
        codecs.CleanMetadata, t.storage.read_bytes(f".hoodie/{clean.instant_time}.clean"), "m"
    )
    assert meta.partition_metadata["d"].is_partition_deleted is True


def test_started_at_is_the_injected_clock(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    later = datetime(2030, 1, 1, 12, 0, 0, 123000, tzinfo=UTC)
    [clean] = make_cleaner(tmp_path, {COMMITS: 1}, now=later).run().cleans
    assert clean.instant_time == "20300101120000123"


def _count_listings(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The clean instants `verified_storage_view` lists storage for at execution."""
    from service.cleaning import orchestrator

    calls: list[str] = []
    real = orchestrator.verified_storage_view

    def counting(table: Any, timeline: Any, partitions: Any, may_be_gone: Any = ()) -> Any:
        calls.append(",".join(sorted(partitions)))
        return real(table, timeline, partitions, may_be_gone)

    monkeypatch.setattr(orchestrator, "verified_storage_view", counting)
    return calls


def test_a_plan_executed_right_after_it_was_checked_is_not_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = FixtureTable(tmp_path)
    _history(t)
    listings = _count_listings(monkeypatch)
    [clean] = _cleaner(tmp_path, {COMMITS: 1}).run().cleans
    assert clean.files_deleted == 4
    assert listings == []  # the timeline held only the clean's own new file since the check


def test_a_plan_is_checked_again_when_an_instant_landed_after_it_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's commit between the plan's check and its execution: storage is listed again and the
    plan checked on it, as for any stored plan."""
    from service.cleaning import orchestrator

    t = FixtureTable(tmp_path)
    _history(t)
    listings = _count_listings(monkeypatch)
    real_schedule = orchestrator.Cleaner._schedule

    def schedule_then_a_writer_commits(self: Cleaner) -> Any:
        scheduled = real_schedule(self)
        t.commit(ts(5), [FileSpec("b", fid(4))])
        return scheduled

    monkeypatch.setattr(orchestrator.Cleaner, "_schedule", schedule_then_a_writer_commits)
    [clean] = _cleaner(tmp_path, {COMMITS: 1}).run().cleans
    assert clean.files_deleted == 4
    assert listings == ["a,b"]


def _outcome(base: Path, props: dict[str, Any], options: CleanOptions) -> str:
    """What a clean run says: its files and partitions, or why it was refused."""
    try:
        result = _cleaner(base, props, options).run()
    except PlanRefusedError as exc:
        return str(exc)
    return repr([(c.files_planned, c.files_deleted, c.incremental, c.partitions) for c in result.cleans])


@pytest.mark.parametrize("scenario", ["full_scan_held", "incremental_counted_whole", "replaced_left_out"])
def test_a_clean_planned_a_partition_at_a_time_plans_and_counts_as_over_one_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    """The clean plans and checks a batch of partitions at a time (`HudiTable.iter_views`): with one
    partition per batch, the plan, the volume breaker's counts (the whole-table recount of an
    incremental clean too) and its refusals are those of a single view of the table."""
    import service.table.table as table_module

    outcomes = []
    for batch in (table_module.VIEW_BATCH_FILES, 1):
        monkeypatch.setattr(table_module, "VIEW_BATCH_FILES", batch)
        base = tmp_path / str(batch)
        t = FixtureTable(base)
        if scenario == "full_scan_held":
            _clustered_small_files(t)
            for i in range(6, 10):
                t.commit(ts(i), [FileSpec(p, fid(10 * n)) for n, p in enumerate("abc", start=1)])
            props: dict[str, Any] = {VERSIONS: 1, "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS"}
            options = CleanOptions()
        else:
            for i in range(1, 4):
                t.commit(ts(i), [FileSpec(p, fid(n)) for n, p in enumerate("abcdef", start=1)])
            if scenario == "replaced_left_out":
                replaced = {p: [fid(n)] for n, p in enumerate("bcdef", start=2)}
                t.replace(
                    ts(3)[:-3] + "500", [], replaced, operation=codecs.WriteOperationType.DELETE_PARTITION
                )
            for i in (4, 5):
                t.commit(ts(i), [FileSpec("a", fid(1))])
            t.completed_clean(ts(6), earliest_commit_to_retain=ts(4), last_completed_commit=ts(5))
            for i in (7, 8):
                t.commit(ts(i), [FileSpec("a", fid(1))])
            # Partition a alone: 5 of 7 (71%); the table: 5 of 22 (23%), or 5 of 7 with b-f replaced.
            props, options = {COMMITS: 1}, CleanOptions(max_delete_fraction=0.3)
        outcomes.append(_outcome(base, props, options).replace(str(base), "<base>"))
    expected = {
        "full_scan_held": r"12 of the 15 files of live file groups",
        "incremental_counted_whole": r"\[\(5, 5, True",
        "replaced_left_out": r"5 of the 7 files of live file groups",
    }[scenario]
    assert re.search(expected, outcomes[0]), outcomes[0]
    assert outcomes[1] == outcomes[0]
