"""Tables written by real Hudi 1.0.2 (table version 8) and 1.1.1 (version 9): the service reads them as
Hudi and hudi-rs do (timeline layout 2, Avro commit metadata, log files sliced by completion time),
and refuses to write to them until their services are served."""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.cleaning.orchestrator import CleanOptions
from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon.runtime import Outcome, TableService
from service.daemon.scheduler import Daemon
from service.status import table_status
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, next_instant_time
from tests.clean.helpers import make_cleaner
from tests.support import leaks
from tests.support.hudi1_histories import (
    SCHEMA,
    Hudi1History,
    HudiSlice,
    build_history,
    build_upgraded_history,
    hudi_latest_slices,
    our_latest_slices,
    rows,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm, hudi_jvm
from tests.support.hudi_tables import LatestSlice, hudi_rs_file_slices, hudi_rs_snapshot
from tests.support.hudi_tables import data_files as _data_files

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

# (table type, metadata table on): Hudi 1.x's defaults keep the metadata table on.
HISTORIES = [
    ("COPY_ON_WRITE", True),
    ("COPY_ON_WRITE", False),
    ("MERGE_ON_READ", True),
    ("MERGE_ON_READ", False),
]


@pytest.fixture(scope="module", params=["1.0.2", "1.1.1"])
def hudi1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HudiJvm]:
    root = tmp_path_factory.mktemp(f"hudi-{request.param}")
    before = leaks.snapshot()
    with hudi_jvm(request.param, root / "jvm") as jvm:
        leaks.expect_started_since(before)  # the child, its JVM and their Python workers live for the module
        yield jvm


@pytest.fixture(scope="module")
def histories(
    hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]]:
    """Every history of one Hudi version, with Hudi's own latest file slices of each."""
    root = tmp_path_factory.mktemp(f"tables-{hudi1.version}")
    out = {}
    for table_type, metadata in HISTORIES:
        history = build_history(hudi1, root, table_type, metadata)
        out[(table_type, metadata)] = (history, hudi_latest_slices(hudi1, history.table_name))
    return out


def _status_slices(table: HudiTable) -> list[HudiSlice]:
    """What `status` reports: each live group's latest slice."""
    return sorted(
        HudiSlice(
            g["partition_path"],
            g["file_id"],
            g["base_instant"],
            g["base_file"] or "",
            tuple(sorted(lf["name"] for lf in g["log_files"])),
        )
        for g in table_status(table)["file_groups"]
    )


@pytest.mark.parametrize(("table_type", "metadata"), HISTORIES)
def test_status_lists_the_latest_file_slices_hudi_and_hudi_rs_list(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    table_type: str,
    metadata: bool,
) -> None:
    history, theirs = histories[(table_type, metadata)]
    table = HudiTable.open(str(history.base))
    assert table.format.table_version == hudi1.table_version
    assert table.layout.version == 2
    ours = our_latest_slices(table)
    assert ours == theirs
    assert _status_slices(table) == ours  # no pending compaction in this history: latest = merged
    if table_type == "MERGE_ON_READ":
        # The history appends to compacted groups: slices whose logs completion time placed.
        assert any(s.log_files and s.base_file for s in ours)
    rs = hudi_rs_file_slices(history.base)
    assert [LatestSlice(s.partition, s.file_id, s.base_instant, s.base_file) for s in ours] == rs


def test_status_reports_the_version_and_completion_times(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    history, _ = histories[("MERGE_ON_READ", True)]
    assert main(["status", "--base-path", str(history.base), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["table"]["table_version"] == hudi1.table_version
    assert report["table"]["timeline_layout_version"] == 2
    completed = [i for i in report["instants"] if i["state"] == "COMPLETED"]
    assert completed and all(i["completion_time"] > i["timestamp"] for i in completed)
    names = {p.name for p in (history.base / ".hoodie" / "timeline").iterdir()}
    for i in completed:
        assert f"{i['timestamp']}_{i['completion_time']}.{i['action']}" in names
    # Hudi's clustering completed as a replacecommit, planned under the clustering action.
    clustering = [i for i in completed if i["action"] == "replacecommit"]
    assert any(f"{i['timestamp']}.clustering.requested" in names for i in clustering)
    assert report["replaced_file_groups"] > 0


@pytest.mark.parametrize(
    ("service", "metadata", "reason"),
    [
        ("cluster", False, r"clustering of table version {v} \(Hudi 1.x\) is not served yet"),
        ("compact", False, r"compaction of table version {v} \(Hudi 1.x\) is not served yet"),
        ("clean", True, r"metadata table .* not kept in sync on table version {v}"),
    ],
)
def test_services_not_served_are_refused_by_name_and_nothing_changes(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    service: str,
    metadata: bool,
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    history, _ = histories[("MERGE_ON_READ", metadata)]
    copy = tmp_path / "t"
    shutil.copytree(history.base, copy)
    before = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    args = [service, "--base-path", str(copy)]
    if service != "clean":
        args += ["--mode", "scheduleAndExecute"]
    with caplog.at_level(logging.WARNING):
        assert main(args) != 0
    said = " ".join(r.getMessage() for r in caplog.records)
    assert re.search(reason.format(v=hudi1.table_version), said), said
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*")) == before


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("short_completion", r"completion time '2026' must have 17 digits"),
        ("json_in_completed", r"not an Avro commit metadata file .*Hudi 1.x refuses JSON"),
        ("completion_on_requested", r"a requested instant has no completion time"),
    ],
)
def test_crafted_bad_timeline_files_fail_status_naming_the_file(
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    breakage: str,
    message: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    history, _ = histories[("COPY_ON_WRITE", True)]
    copy = tmp_path / "t"
    shutil.copytree(history.base, copy)
    timeline = copy / ".hoodie" / "timeline"
    completed = sorted(p for p in timeline.iterdir() if re.fullmatch(r"\d{17}_\d{17}\.commit", p.name))
    victim = completed[-1]
    if breakage == "short_completion":
        bad = timeline / f"{victim.name[:17]}_2026.commit"
        victim.rename(bad)
    elif breakage == "json_in_completed":
        bad = victim
        victim.write_bytes(json.dumps({"partitionToWriteStats": {}, "operationType": "UPSERT"}).encode())
    else:
        bad = timeline / f"{victim.name[:17]}_{victim.name[18:35]}.commit.requested"
        bad.write_bytes(b"")
    with caplog.at_level(logging.ERROR):
        assert main(["status", "--base-path", str(copy)]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert bad.name in errors[0], errors[0]
    assert re.search(message, errors[0]), errors[0]


# -- cleaning on versions 8 and 9 (metadata table off), against Hudi 1.x's own cleaner

CLEAN_CONFIGS = [
    ("KEEP_LATEST_COMMITS", 1),
    ("KEEP_LATEST_COMMITS", 3),
    ("KEEP_LATEST_FILE_VERSIONS", 1),
    ("KEEP_LATEST_FILE_VERSIONS", 2),
]
_RETAINED = {
    "KEEP_LATEST_COMMITS": ("retain_commits", "hoodie.cleaner.commits.retained"),
    "KEEP_LATEST_FILE_VERSIONS": ("file_versions_retained", "hoodie.cleaner.fileversions.retained"),
}
_copies = itertools.count()


def _hudi_clean(jvm: HudiJvm, base: Path, policy: str, retained: int) -> list[dict[str, Any]]:
    name = f"cleaned_{next(_copies)}"
    jvm.sql(f"create table {name} using hudi location '{base}'")
    args = f"clean_policy => '{policy}', {_RETAINED[policy][0]} => {retained}"
    return jvm.sql(f"call run_clean(table => '{name}', {args}, options => 'hoodie.metadata.enable=false')")


def _snapshot(jvm: HudiJvm, base: Path) -> list[tuple[Any, ...]]:
    rows = jvm.read(base, {"hoodie.metadata.enable": "false"})
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in rows)


def _hudi_rs_snapshot(base: Path) -> list[tuple[Any, ...]]:
    rows = hudi_rs_snapshot(base).to_pylist()
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in rows)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("policy", "retained"), CLEAN_CONFIGS)
def test_clean_deletes_what_hudi_1x_deletes_and_readers_agree(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    table_type: str,
    policy: str,
    retained: int,
) -> None:
    history, _ = histories[(table_type, False)]
    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(history.base, hudi_copy)
    shutil.copytree(history.base, our_copy)
    before = _data_files(history.base)
    snapshot = _snapshot(hudi1, history.base)

    _hudi_clean(hudi1, hudi_copy, policy, retained)
    props = {"hoodie.cleaner.policy": policy, _RETAINED[policy][1]: retained}
    # The volume breaker is not Hudi's (tests/clean cover it): here only what Hudi deletes counts.
    [ours] = make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run().cleans

    hudi_deleted = before - _data_files(hudi_copy)
    our_deleted = before - _data_files(our_copy)
    assert our_deleted == hudi_deleted
    assert ours.files_deleted == len(our_deleted)
    timeline = our_copy / ".hoodie" / "timeline"
    names = [p.name for p in timeline.iterdir() if p.name[:1].isdigit()]
    [completed] = [n for n in names if re.fullmatch(rf"{ours.instant_time}_\d{{17}}\.clean", n)]
    # The completion time sorts after every requested and completion time written before it.
    times_before = {
        t for n in os.listdir(history.base / ".hoodie" / "timeline") for t in re.findall(r"\d{17}", n)
    }
    assert completed[18:35] > max(times_before | {ours.instant_time})
    inflight = (timeline / f"{ours.instant_time}.clean.inflight").read_bytes()
    # 1.0.x writes the plan again into the inflight file, 1.1.x leaves it empty.
    assert (inflight == (timeline / f"{ours.instant_time}.clean.requested").read_bytes()) is (
        hudi1.table_version == 8
    )
    assert (inflight == b"") is (hudi1.table_version == 9)

    # Hudi's reader (metadata table off, as the table has none) and hudi-rs read what they read before.
    assert _snapshot(hudi1, our_copy) == snapshot
    assert _hudi_rs_snapshot(our_copy) == snapshot
    # Hudi's own cleaner accepts our clean: it plans from our completed instant and fails on nothing.
    _hudi_clean(hudi1, our_copy, policy, retained)
    assert _data_files(our_copy) <= before - our_deleted
    # Hudi's writer goes on: its upsert lands exactly once.
    opts = {
        **writer_options(history.table_name, table_type, False),
        "hoodie.datasource.write.operation": "upsert",
    }
    hudi1.write(our_copy, rows([0, 3, 100], 50), SCHEMA, opts)
    after = _snapshot(hudi1, our_copy)
    assert [r for r in after if r[0] in (0, 3, 100)] == [
        (0, "americas", 50, "v50"),
        (3, "asia", 50, "v50"),
        (100, "americas", 50, "v50"),
    ]
    new_ids = {0, 3, 100} - {r[0] for r in snapshot}
    assert len(after) == len({r[0] for r in after}) == len(snapshot) + len(new_ids)


# -- a version-6 table (Hudi 0.15) upgraded in place by a Hudi 1.x writer


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_table_hudi_1x_upgraded_in_place_is_read_and_cleaned_as_hudi_does(
    spark: Any, hudi1: HudiJvm, tmp_path: Path, table_type: str
) -> None:
    history = build_upgraded_history(spark, hudi1, tmp_path / "tables", table_type)
    table = HudiTable.open(str(history.base))
    assert (table.format.table_version, table.layout.version) == (hudi1.table_version, 2)
    ours, theirs = our_latest_slices(table), hudi_latest_slices(hudi1, history.table_name)
    # On merge-on-read the 1.0.2 upgrade leaves its full compaction inflight (its base files written).
    # Readers merge the slice it compacts with the logs appended since (hudi-rs's snapshot below reads
    # their records); `show_fsview_latest` lists only the compacted slice's own logs there.
    pending = table.load_view().facts.pending_compaction
    assert [(s.partition, s.file_id, s.base_instant, s.base_file) for s in ours] == [
        (s.partition, s.file_id, s.base_instant, s.base_file) for s in theirs
    ]
    for mine, hudis in zip(ours, theirs, strict=True):
        if (mine.partition, mine.file_id) in pending:
            assert set(hudis.log_files) <= set(mine.log_files)
        else:
            assert mine.log_files == hudis.log_files

    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(history.base, hudi_copy)
    shutil.copytree(history.base, our_copy)
    before = _data_files(history.base)
    snapshot = _snapshot(hudi1, history.base)
    _hudi_clean(hudi1, hudi_copy, "KEEP_LATEST_COMMITS", 1)
    props = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": 1}
    make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run()
    our_deleted = before - _data_files(our_copy)
    assert our_deleted == before - _data_files(hudi_copy)
    assert our_deleted or table_type == "MERGE_ON_READ"  # a pending compaction may hold every slice
    assert _snapshot(hudi1, our_copy) == snapshot
    assert _hudi_rs_snapshot(our_copy) == snapshot


# -- the daemon on versions 8 and 9


def _daemon_config(tables: dict[str, Path]) -> str:
    entries = "".join(
        f"""
  - name: {name}
    base_path: {base}
    clustering: {{enabled: true}}
    compaction: {{enabled: true}}
    timezone: UTC"""
        for name, base in tables.items()
    )
    return f"""
daemon:
  poll_interval_seconds: 60
  shutdown_grace_seconds: 10
  metrics: {{host: 127.0.0.1, port: 0}}
  lock: {{provider: in-process, properties: {{hoodie.write.lock.wait_time_ms: 5000}}}}
  failures: {{backoff_initial_seconds: 30, backoff_max_seconds: 120, quarantine_after: 2}}
defaults:
  hoodie.cleaner.policy: KEEP_LATEST_FILE_VERSIONS
  hoodie.cleaner.fileversions.retained: 1
  hoodie.clean.max.commits: 1
tables:{entries}
"""


def test_the_daemon_cleans_what_it_serves_and_refuses_the_rest_without_failing(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
) -> None:
    """On version 8/9 merge-on-read tables: cleaning runs where the table has no metadata table;
    clustering and compaction, and every service of a table with the metadata table, are refused
    (a state with its reason), never failed or quarantined; nothing is written for them."""
    plain, with_mdt = tmp_path / "plain", tmp_path / "mdt"
    shutil.copytree(histories[("MERGE_ON_READ", False)][0].base, plain)
    shutil.copytree(histories[("MERGE_ON_READ", True)][0].base, with_mdt)
    untouched = sorted(str(p.relative_to(with_mdt)) for p in with_mdt.rglob("*"))
    before = _data_files(plain)
    planned_before = sorted(
        p.name
        for p in (plain / ".hoodie" / "timeline").iterdir()
        if re.search(r"clustering|compaction", p.name)
    )
    config = parse_daemon_config(_daemon_config({"plain": plain, "mdt": with_mdt}))
    daemon = Daemon(config, registry=CollectorRegistry(), serve_http=False)
    plain_rt, mdt_rt = daemon.runtimes["plain"], daemon.runtimes["mdt"]
    now = datetime.now(UTC)
    for service in (TableService.CLUSTERING, TableService.COMPACTION):
        assert daemon.run_iteration(plain_rt, service, now) is Outcome.REFUSED
    assert daemon.run_iteration(plain_rt, TableService.CLEANING, now) is Outcome.DONE
    assert _data_files(plain) < before
    for service in TableService:
        assert daemon.run_iteration(mdt_rt, service, now) is Outcome.REFUSED
    for runtime in (plain_rt, mdt_rt):
        assert not runtime.consecutive_failures and not runtime.quarantined
    assert sorted(str(p.relative_to(with_mdt)) for p in with_mdt.rglob("*")) == untouched
    planned = [
        p.name
        for p in (plain / ".hoodie" / "timeline").iterdir()
        if re.search(r"clustering|compaction", p.name)
    ]
    assert sorted(planned) == planned_before  # Hudi's own plans of the history only


def test_a_stored_clean_plan_naming_a_path_outside_the_table_is_refused_and_nothing_deleted(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A pending clean plan (Hudi's or anyone's) on a layout-2 timeline is untrusted input: a path
    outside the table refuses the plan before anything is deleted, naming the plan file and the path."""
    history, _ = histories[("COPY_ON_WRITE", False)]
    copy = tmp_path / "t"
    shutil.copytree(history.base, copy)
    sentinel = tmp_path / "outside" / "victim.parquet"
    sentinel.parent.mkdir()
    sentinel.write_bytes(b"not the table's")
    table = HudiTable.open(str(copy))
    timeline = table.load_timeline()
    plan_time = next_instant_time(timeline, datetime.now(UTC), UTC)
    partition = "americas"
    inside = next(iter(table.load_view().latest_file_slices(partition))).base_file
    assert inside is not None
    plan = codecs.CleanerPlan(
        earliest_instant_to_retain=None,
        last_completed_commit_timestamp=timeline.completed().last.timestamp,  # type: ignore[union-attr]
        policy="KEEP_LATEST_COMMITS",
        files_to_be_deleted_per_partition={},
        version=2,
        file_paths_to_be_deleted_per_partition={
            partition: (
                codecs.CleanFileInfo(file_path=f"file:{sentinel}", is_bootstrap_base_file=False),
                codecs.CleanFileInfo(
                    file_path=table.storage.qualify(inside.path), is_bootstrap_base_file=False
                ),
            )
        },
        partitions_to_be_deleted=(),
    )
    requested = Instant(plan_time, Action.CLEAN, State.REQUESTED)
    create_instant_file(table.storage, table.layout, requested, codecs.encode(plan))
    before = _data_files(copy)
    with caplog.at_level(logging.ERROR):
        assert main(["clean", "--base-path", str(copy), "--timezone", "UTC"]) != 0
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"{plan_time}.clean.requested" in said and str(sentinel) in said, said
    assert sentinel.exists() and _data_files(copy) == before
