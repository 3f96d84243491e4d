"""Rolling back writers' failed attempts on tables Hudi 1.0.2 (version 8) and 1.1.1 (version 9) wrote,
against Hudi 1.x's own rollback, with the metadata table on (both versions' default).

A clean under `hoodie.cleaner.policy.failed.writes=LAZY` first rolls back every write whose heartbeat
expired (`rollbackFailedWrites`). Two failures, each on copy-on-write and merge-on-read:

- **failed before its metadata-table write**: a pre-commit validator that never passes aborts the
  write after its data files (and their CREATE markers) are written. Hudi rolls it back from the
  markers, deleting every file, base and log, whole;
- **killed after its metadata-table deltacommit**, before its own completed file: the last write's
  completed file removed (what a kill between the two leaves). No markers are left, so Hudi plans from
  a listing, and the metadata table rolls back its own deltacommit T with a rollback instant.

Hudi rolls back one copy (`CALL run_clean` under LAZY), we roll back an identical copy with our clean.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from service.cleaning.orchestrator import CleanOptions
from service.cli import main
from service.table import codecs
from service.table.instant import Action
from service.table.table import HudiTable
from tests.clean.helpers import make_cleaner
from tests.support.crash_at import run_killed_at
from tests.support.hudi1_histories import (
    PARTITIONS,
    SCHEMA,
    completed_instants,
    hudi_rows,
    hudi_rs_rows,
    mdt_views,
    rows,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm, HudiJvmError
from tests.support.hudi_tables import FAILING_WRITE_OPTIONS, data_files
from tests.support.service_runs import SMALL_FILES

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
FAILURES = ["before_mdt", "after_mdt"]
LAZY = "hoodie.cleaner.policy.failed.writes=LAZY"
_COMPLETED_WRITE = re.compile(r"^(\d{17})_\d{17}\.(commit|deltacommit)$")
_names = iter(range(1_000_000))


def _options(name: str, table_type: str, operation: str) -> dict[str, str]:
    return {**writer_options(name, table_type, True), "hoodie.datasource.write.operation": operation}


def _build(jvm: HudiJvm, base: Path, table_type: str, failure: str) -> str:
    """Two good writes and a failed third; returns the failed instant."""
    name = base.name
    jvm.write(base, rows(range(0, 12), 0), SCHEMA, _options(name, table_type, "insert"))
    jvm.write(base, rows(range(0, 8), 1), SCHEMA, _options(name, table_type, "upsert"))
    timeline = base / ".hoodie" / "timeline"
    if failure == "after_mdt":
        jvm.write(base, rows([*range(4, 10), 50, 51], 2), SCHEMA, _options(name, table_type, "upsert"))
        [last] = sorted(p for p in timeline.iterdir() if _COMPLETED_WRITE.match(p.name))[-1:]
        last.unlink()
        (timeline / f".{last.name}.crc").unlink(missing_ok=True)
        return last.name[:17]
    before = set(timeline.iterdir())
    with pytest.raises(HudiJvmError, match=r"(?i)validat"):
        jvm.write(
            base,
            rows([*range(4, 10), 50, 51], 2),
            SCHEMA,
            {**_options(name, table_type, "upsert"), **FAILING_WRITE_OPTIONS},
        )
    [failed] = {p.name[:17] for p in set(timeline.iterdir()) - before if p.name.endswith(".inflight")}
    assert (base / ".hoodie" / ".temp" / failed).is_dir(), "the failed write left its markers"
    return failed


@pytest.fixture(scope="module")
def failed_tables(
    hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], tuple[Path, str]]:
    root = tmp_path_factory.mktemp(f"failed-{hudi1.version}")
    out = {}
    for table_type in TABLE_TYPES:
        for failure in FAILURES:
            base = root / f"f{hudi1.table_version}_{table_type.lower()}_{failure}"
            out[(table_type, failure)] = (base, _build(hudi1, base, table_type, failure))
    return out


def _rollback_of(base: Path, failed: str) -> tuple[codecs.RollbackPlan, codecs.RollbackMetadata] | None:
    """The completed rollback of `failed` on a timeline (the data table's, or the MDT's at
    `.hoodie/metadata`), with its plan; None when there is none."""
    table = HudiTable.open(str(base), check_supported=False)
    for instant in table.load_timeline().by_actions([Action.ROLLBACK]).completed():
        metadata = table.facts_reader.metadata(instant, codecs.RollbackMetadata)
        if failed in metadata.commits_rollback:
            plan = table.facts_reader.requested_plan(instant, codecs.RollbackPlan)
            assert plan is not None
            return plan, metadata
    return None


def _requests(plan: codecs.RollbackPlan) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.partition_path,
            r.file_id,
            r.latest_base_instant,
            tuple(sorted(posixpath.basename(f) for f in r.files_to_be_deleted)),
            dict(r.log_blocks_to_be_deleted or {}),
        )
        for r in plan.rollback_requests or ()
    )


def _deleted(metadata: codecs.RollbackMetadata) -> dict[str, list[str]]:
    return {
        p: sorted(posixpath.basename(f) for f in pm.success_delete_files)
        for p, pm in metadata.partition_metadata.items()
        if pm.success_delete_files
    }


def _mdt_files(base: Path) -> set[str]:
    """The metadata table's data files (its timeline aside)."""
    mdt = base / ".hoodie" / "metadata"
    return {
        str(p.relative_to(mdt))
        for p in mdt.rglob("*")
        if p.is_file() and ".hoodie" not in p.relative_to(mdt).parts and not p.name.endswith(".crc")
    }


def _mdt_timeline(base: Path, failed: str) -> list[str]:
    """The MDT timeline's names of `failed` and of rollbacks, with times blanked."""
    timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    names = [p.name for p in timeline.iterdir() if p.name[:1].isdigit()]
    return sorted(re.sub(r"\d{17}", "T", n) for n in names if n.startswith(failed) or "rollback" in n)


# CI: each (table type, failure) once, each version with both types and both failures.
@pytest.mark.long(hudi1="1.0.2", table_type="COPY_ON_WRITE", failure="after_mdt")
@pytest.mark.long(hudi1="1.0.2", table_type="MERGE_ON_READ", failure="before_mdt")
@pytest.mark.long(hudi1="1.1.1", table_type="COPY_ON_WRITE", failure="before_mdt")
@pytest.mark.long(hudi1="1.1.1", table_type="MERGE_ON_READ", failure="after_mdt")
@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_lazy_clean_rolls_back_a_failed_write_as_hudi_1x_does(
    hudi1: HudiJvm,
    failed_tables: dict[tuple[str, str], tuple[Path, str]],
    tmp_path: Path,
    table_type: str,
    failure: str,
) -> None:
    source, failed = failed_tables[(table_type, failure)]
    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(source, hudi_copy)
    shutil.copytree(source, our_copy)
    before = data_files(source)
    expected = hudi_rows(hudi1, source)
    assert {r[0] for r in expected} == set(range(12)), "the failed write is invisible before its rollback"
    failed_files = {f for f in before if re.search(rf"_{failed}(\.log\.|\.parquet$)", f)}
    assert any(".log." in f for f in failed_files) is (table_type == "MERGE_ON_READ")

    name = f"rb_{next(_names)}"
    hudi1.sql(f"create table {name} using hudi location '{hudi_copy}'")
    hudi1.sql(f"call run_clean(table => '{name}', retain_commits => 10, options => '{LAZY}')")
    props = {"hoodie.cleaner.policy.failed.writes": "LAZY", "hoodie.cleaner.commits.retained": 10}
    make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run()

    theirs, ours = _rollback_of(hudi_copy, failed), _rollback_of(our_copy, failed)
    assert theirs is not None and ours is not None
    hudi_deleted, our_deleted = before - data_files(hudi_copy), before - data_files(our_copy)
    assert our_deleted == failed_files
    if failure == "before_mdt":
        # From the markers: the same requests (whole files, base and log alike, no command blocks).
        assert _requests(ours[0]) == _requests(theirs[0])
        assert hudi_deleted == failed_files
        assert all(not pm.rollback_log_files for pm in ours[1].partition_metadata.values())
    else:
        # Without markers Hudi 1.x plans from a listing that finds none of T's files (its plan is
        # empty): they stay on storage, files no instant explains. We delete them: a rollback
        # leaves nothing of T.
        assert hudi_deleted == set()
    by_partition = {
        p: [posixpath.basename(f) for f in our_deleted if f.startswith(f"{p}/")] for p in PARTITIONS
    }
    assert _deleted(ours[1]) == {p: sorted(files) for p, files in by_partition.items() if files}
    assert not [p for p in (our_copy / ".hoodie" / "timeline").iterdir() if p.name.startswith(failed)]
    assert not (our_copy / ".hoodie" / ".temp" / failed).exists()

    # The metadata table: rolled back as Hudi rolls it back (a rollback instant of its own when it
    # held T, nothing otherwise), the same files left, and Hudi's procedures agree with storage.
    assert _mdt_files(our_copy) == _mdt_files(hudi_copy)
    assert _mdt_timeline(our_copy, failed) == _mdt_timeline(hudi_copy, failed)
    mdt_ours = _rollback_of(our_copy / ".hoodie" / "metadata", failed)
    mdt_theirs = _rollback_of(hudi_copy / ".hoodie" / "metadata", failed)
    assert (mdt_ours is None) is (mdt_theirs is None) is (failure == "before_mdt")
    if mdt_ours is not None and mdt_theirs is not None:
        assert _requests(mdt_ours[0]) == _requests(mdt_theirs[0])
        assert _deleted(mdt_ours[1]) == _deleted(mdt_theirs[1])
    assert mdt_views(hudi1, our_copy) == mdt_views(hudi1, hudi_copy)

    # Readers: Hudi with and without the metadata table, and hudi-rs, read what they read before.
    assert hudi_rows(hudi1, our_copy) == expected
    assert hudi_rows(hudi1, our_copy, metadata=True) == expected
    assert hudi_rs_rows(our_copy) == expected
    # Hudi's writer goes on: its upsert lands exactly once, and its next clean finds nothing of ours.
    hudi1.write(our_copy, rows([4, 50], 3), SCHEMA, _options(source.name, table_type, "upsert"))
    after = hudi_rows(hudi1, our_copy, metadata=True)
    assert [r for r in after if r[0] in (4, 50)] == [(4, "americas", 3, "v3"), (50, "americas", 3, "v3")]
    assert len(after) == len({r[0] for r in after}) == 13
    our_name = f"rb_{next(_names)}"
    hudi1.sql(f"create table {our_name} using hudi location '{our_copy}'")
    hudi1.sql(f"call run_clean(table => '{our_name}', retain_commits => 10, options => '{LAZY}')")


# The LAZY clean killed after each file its rollback of the failed write creates.
ROLLBACK_KILL_POINTS = {
    "data_inflight": r"^\.hoodie/timeline/\d{17}\.rollback\.inflight$",  # nothing deleted yet
    "mdt_inflight": r"^\.hoodie/metadata/\.hoodie/timeline/\d{17}\.rollback\.inflight$",  # data files gone
    "mdt_completed": r"^\.hoodie/metadata/\.hoodie/timeline/\d{17}_\d{17}\.rollback$",  # MDT done, data not
}


# Long: the fault matrix kills the rollback on 1.0.2 and 1.1.1 tables in CI (its `rollback` service,
# tests/interop/test_hudi1_fault_matrix.py); this compares the resumed rollback with Hudi's own.
@pytest.mark.long
@pytest.mark.parametrize("step", list(ROLLBACK_KILL_POINTS))
def test_a_rollback_killed_midway_is_completed_by_the_next_clean(
    hudi1: HudiJvm, failed_tables: dict[tuple[str, str], tuple[Path, str]], tmp_path: Path, step: str
) -> None:
    """SIGKILL of the clean rolling back a write killed after its metadata-table deltacommit (merge-on-
    read): Hudi's readers read what they read before; the next clean finishes the same rollback (the
    data table's and the metadata table's), leaving nothing of the failed write, as Hudi's own
    rollback on a copy leaves its metadata table."""
    source, failed = failed_tables[("MERGE_ON_READ", "after_mdt")]
    base, hudi_copy = tmp_path / "t", tmp_path / "hudi"
    shutil.copytree(source, base)
    shutil.copytree(source, hudi_copy)
    expected = hudi_rows(hudi1, source)
    clean = ["clean", "--base-path", str(base), "--timezone", "UTC", "--force",
             "--hoodie-conf", "hoodie.cleaner.policy.failed.writes=LAZY",
             "--hoodie-conf", "hoodie.cleaner.commits.retained=10",
             "--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]  # fmt: skip
    run_killed_at(ROLLBACK_KILL_POINTS[step], clean, tmp_path / "killed.log")
    assert hudi_rows(hudi1, base) == expected
    assert hudi_rows(hudi1, base, metadata=True) == expected

    time.sleep(2.5)  # the dead run's heartbeat of its rollback expires; the next run resumes it
    assert main(clean) == 0
    timeline = base / ".hoodie" / "timeline"
    assert not [p for p in timeline.iterdir() if p.name.startswith(failed)]
    rollback_files = [p.name for p in timeline.iterdir() if ".rollback" in p.name and p.name[:1].isdigit()]
    assert len({n[:17] for n in rollback_files}) == 1, rollback_files  # resumed, not started again
    assert any(re.fullmatch(r"\d{17}_\d{17}\.rollback", n) for n in rollback_files)
    assert not [f for f in data_files(base) if f"_{failed}." in f]
    name = f"rb_{next(_names)}"
    hudi1.sql(f"create table {name} using hudi location '{hudi_copy}'")
    hudi1.sql(f"call run_clean(table => '{name}', retain_commits => 10, options => '{LAZY}')")
    assert _mdt_files(base) == _mdt_files(hudi_copy)
    assert _mdt_timeline(base, failed) == _mdt_timeline(hudi_copy, failed)
    assert mdt_views(hudi1, base) == mdt_views(hudi1, hudi_copy)
    assert hudi_rows(hudi1, base, metadata=True) == expected
    assert hudi_rs_rows(base) == expected


EXPIRE = {
    "hoodie.clustering.enable.expirations": "true",
    "hoodie.clustering.expiration.threshold.mins": "0",  # the requested time's age is covered in tests/repair
    "hoodie.cleaner.policy.failed.writes": "LAZY",
}


def _pending_clustering(base: Path) -> list[str]:
    names = (p.name for p in (base / ".hoodie" / "timeline").iterdir())
    return sorted(n for n in names if n[:1].isdigit() and ".clustering." in n)


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.hudi1_only("1.2.0")  # the only oracle that expires clustering
@pytest.mark.parametrize("heartbeat", ["expired", "alive"])
def test_a_stale_clustering_plan_expires_as_hudi_1_2_expires_it(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str], heartbeat: str
) -> None:
    """Hudi 1.2.0 schedules a clustering and its scheduler dies. With `hoodie.clustering.enable.
    expirations` under LAZY failed writes, Hudi's clean rolls the plan back (`run_clean`) once its
    heartbeat expired and keeps it while the heartbeat lives; `repair --execute` does the same on an
    identical copy: the same instants rolled back, the same metadata table, the same rows for Hudi
    and hudi-rs, and Hudi's writer then clusters the groups the plan held."""
    source = tmp_path / "source"
    name = f"expiring_{heartbeat}"
    options = {**writer_options(name, "COPY_ON_WRITE", True), "hoodie.table.services.enabled": "false"}
    for batch, ids in enumerate((range(0, 10), range(10, 20), range(20, 30))):
        hudi1.write(
            source, rows(ids, batch), SCHEMA, {**options, "hoodie.datasource.write.operation": "insert"}
        )
    scheduler = f"sched_{heartbeat}"
    hudi1.sql(f"create table {scheduler} using hudi location '{source}'")
    conf = ",".join([*(f"{k}={v}" for k, v in EXPIRE.items()), SMALL_FILES])
    hudi1.sql(f"call run_clustering(op => 'schedule', table => '{scheduler}', options => '{conf}')")
    [requested] = _pending_clustering(source)
    plan = requested[:17]
    beat = source / ".hoodie" / ".heartbeat" / plan
    beat.parent.mkdir(exist_ok=True)
    beat.touch()  # Hudi 1.2 starts it at scheduling; its file outlives a killed scheduler
    at = time.time() - (600 if heartbeat == "expired" else 0)
    os.utime(beat, (at, at))
    expected = hudi_rows(hudi1, source)
    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(source, hudi_copy)
    shutil.copytree(source, our_copy)

    cleaner = f"rb_{next(_names)}"
    hudi1.sql(f"create table {cleaner} using hudi location '{hudi_copy}'")
    hudi1.sql(f"call run_clean(table => '{cleaner}', retain_commits => 10, options => '{conf}')")
    argv = ["repair", "--base-path", str(our_copy), "--timezone", "UTC", "--json",
            *(f"--hoodie-conf={k}={v}" for k, v in EXPIRE.items())]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["expired_clusterings"] == (
        [plan] if heartbeat == "expired" else []
    )
    assert main([*argv, "--execute"]) == 0
    assert json.loads(capsys.readouterr().out)["rolled_back"] == ([plan] if heartbeat == "expired" else [])

    theirs, ours = _rollback_of(hudi_copy, plan), _rollback_of(our_copy, plan)
    assert (theirs is None) is (ours is None) is (heartbeat == "alive")
    assert _pending_clustering(our_copy) == _pending_clustering(hudi_copy)
    assert _pending_clustering(our_copy) == ([] if heartbeat == "expired" else [requested])
    if theirs is not None and ours is not None:
        assert _requests(ours[0]) == _requests(theirs[0]) == []  # a requested plan wrote nothing
        assert not (our_copy / ".hoodie" / ".heartbeat" / plan).exists()
        assert not (hudi_copy / ".hoodie" / ".heartbeat" / plan).exists()
    assert _mdt_files(our_copy) == _mdt_files(hudi_copy)
    assert _mdt_timeline(our_copy, plan) == _mdt_timeline(hudi_copy, plan)
    assert mdt_views(hudi1, our_copy) == mdt_views(hudi1, hudi_copy)
    assert hudi_rows(hudi1, our_copy) == hudi_rows(hudi1, our_copy, metadata=True) == expected
    assert hudi_rs_rows(our_copy) == expected
    if heartbeat == "expired":
        # The groups the plan held are free again: Hudi's writer clusters them on our copy.
        writer = f"cl_{next(_names)}"
        hudi1.sql(f"create table {writer} using hudi location '{our_copy}'")
        hudi1.sql(
            f"call run_clustering(op => 'scheduleAndExecute', table => '{writer}', options => '{conf}')"
        )
        assert completed_instants(our_copy, "replacecommit")
        assert hudi_rows(hudi1, our_copy, metadata=True) == expected == hudi_rs_rows(our_copy)
