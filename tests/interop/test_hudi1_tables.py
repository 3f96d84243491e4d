"""Tables written by real Hudi 1.0.2 (table version 8) and 1.1.1 (version 9): the service reads them as
Hudi and hudi-rs do (timeline layout 2, Avro commit metadata, log files sliced by completion time),
and refuses to write to them until their services are served."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import logging
import os
import re
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastavro
import pytest
from prometheus_client import CollectorRegistry

from service.cleaning.orchestrator import CleanOptions
from service.cli import main
from service.config.daemon import parse_daemon_config
from service.daemon.runtime import Outcome, TableService
from service.daemon.scheduler import Daemon
from service.executor import SparkExecutor
from service.status import table_status
from service.table import codecs
from service.table.hfile.reader import HFileReader
from service.table.instant import Action, Instant, State
from service.table.log_format.blocks import BlockLocation
from service.table.log_format.content import decode_deletes
from service.table.mdt.log_blocks import BlockType, read_log_blocks
from service.table.mdt.records import decode_files_record
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, format_instant_time, next_instant_time
from tests.clean.helpers import make_cleaner
from tests.support.crash_at import run_killed_at
from tests.support.fixtures import FileSpec, FixtureTable
from tests.support.hudi1_histories import (
    PARTITIONS,
    SCHEMA,
    Hudi1History,
    HudiSlice,
    build_history,
    build_upgraded_history,
    completed_instants,
    hudi_latest_slices,
    hudi_rows,
    hudi_rs_rows,
    mdt_views,
    our_latest_slices,
    rows,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm, HudiJvmError
from tests.support.hudi_tables import LatestSlice, hudi_rs_file_slices
from tests.support.hudi_tables import data_files as _data_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

# (table type, metadata table on): Hudi 1.x's defaults keep the metadata table on.
HISTORIES = [
    ("COPY_ON_WRITE", True),
    ("COPY_ON_WRITE", False),
    ("MERGE_ON_READ", True),
    ("MERGE_ON_READ", False),
]


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


# A metadata-table partition the service does not keep in sync on 1.x: an expression index.
_EXPRESSION_INDEX_REFUSED = (
    r"partition\(s\) expr_index_value_upper .* keeps only files, column_stats, partition_stats, "
    r"bloom_filters, record_index in sync"
)


@pytest.mark.parametrize(
    ("service", "metadata", "reason"),
    [(service, True, _EXPRESSION_INDEX_REFUSED) for service in ("clean", "cluster", "compact")],
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
    if metadata:
        props = copy / ".hoodie" / "hoodie.properties"
        text = props.read_text("latin-1")
        partitions = re.search(r"^hoodie.table.metadata.partitions=(.*)$", text, re.M)
        assert partitions is not None
        props.write_text(text.replace(partitions[0], partitions[0] + ",expr_index_value_upper"), "latin-1")
    before = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    args = [service, "--base-path", str(copy)]
    if service != "clean":
        args += ["--mode", "scheduleAndExecute"]
    with caplog.at_level(logging.WARNING):
        assert main(args) != 0
    said = " ".join(r.getMessage() for r in caplog.records)
    assert re.search(reason.format(v=hudi1.table_version), said), said
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*")) == before


_CHECK_SETTINGS = ("hoodie.cleaner.commits.retained=1", "hoodie.clustering.async.max.commits=1",
                   "hoodie.compact.inline.max.delta.commits=1")  # fmt: skip
_CHECK_CONF = [a for setting in _CHECK_SETTINGS for a in ("--hoodie-conf", setting)]


def _json_of(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, *_CHECK_CONF, "--json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


@pytest.mark.long(hudi1="1.0.2", table_type="MERGE_ON_READ")  # CI: each table type on one version
@pytest.mark.long(hudi1="1.1.1", table_type="COPY_ON_WRITE")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_check_says_what_each_service_then_does_on_a_1x_table(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    table_type: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`check` on what Hudi 1.x wrote (metadata table on): each service it says can run plans what
    check said (clean's files, clustering's groups, compaction's slices); each it refuses, the service
    refuses too, changing nothing."""
    history, _ = histories[(table_type, True)]
    checked = tmp_path / "check"
    shutil.copytree(history.base, checked)
    code, report = _json_of(capsys, "check", "--base-path", str(checked))
    assert report["table"]["table_version"] == hudi1.table_version
    assert report["table"]["type"] == table_type and report["metadata_table"]["partitions"]
    services = report["services"]
    refused = {name for name, s in services.items() if s["enabled"] and not s["runnable"]}
    assert code == (2 if refused else 0)
    runs = {"cleaning": ["clean"], "clustering": ["cluster", "--mode", "schedule"],
            "compaction": ["compact", "--mode", "schedule"]}  # fmt: skip
    for name, argv in runs.items():
        if not services[name]["enabled"]:
            continue
        copy = tmp_path / name
        shutil.copytree(history.base, copy)
        before = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
        code, out = _json_of(capsys, argv[0], "--base-path", str(copy), *argv[1:])
        if name in refused:
            assert code == 1, (name, services[name])
            assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*")) == before
            continue
        assert code == 0, (name, out)
        planned = services[name]["next"]
        # Each runnable service plans work here (retention 1, every commit a trigger): equal counts
        # of nothing would say nothing about check.
        if name == "cleaning":
            deleted = sum(c["files_deleted"] + c["files_already_gone"] for c in out["cleans"])
            assert deleted == planned["files_to_delete"] > 0
        elif name == "clustering":
            assert len(out["plan"]["groups"] if out["plan"] else []) == planned["groups"] > 0
        else:
            assert len(out["operations"]) == planned["operations"] > 0


@pytest.mark.parametrize(("table_type", "metadata"), [("MERGE_ON_READ", True), ("COPY_ON_WRITE", True)])
def test_commit_metadata_re_encodes_to_the_records_hudi_1x_wrote(
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]], table_type: str, metadata: bool
) -> None:
    """Every completed commit, deltacommit and replacecommit (clustering and insert overwrite) Hudi
    wrote, on the data table and its metadata table, decodes and encodes back to the record Hudi's
    file holds: the Avro `HoodieCommitMetadata` / `HoodieReplaceCommitMetadata` our services write."""
    history, _ = histories[(table_type, metadata)]
    checked: dict[str, int] = {}
    for timeline in (
        history.base / ".hoodie" / "timeline",
        history.base / ".hoodie" / "metadata" / ".hoodie" / "timeline",
    ):
        for path in sorted(timeline.iterdir()):
            found = re.fullmatch(r"\d{17}_\d{17}\.(commit|deltacommit|replacecommit)", path.name)
            if found is None:
                continue
            model = codecs.ReplaceCommitMetadata if found[1] == "replacecommit" else codecs.CommitMetadata
            data = path.read_bytes()
            [theirs] = fastavro.reader(io.BytesIO(data))
            decoded = codecs.decode(model, data, str(path), avro_commit=True)
            [ours] = fastavro.reader(io.BytesIO(codecs.encode_commit(decoded, avro=True)))
            assert ours == theirs, path
            checked[found[1]] = checked.get(found[1], 0) + 1
    assert checked.get("replacecommit", 0) >= 2 and checked.get("deltacommit", 0) > 0
    assert checked.get("commit", 0) > 0 or table_type == "COPY_ON_WRITE"


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
        # A completed replacecommit: the view reads its replaced file groups (a commit's it does not read).
        bad = victim.with_name(victim.name.replace(".commit", ".replacecommit"))
        victim.rename(bad)
        bad.write_bytes(json.dumps({"partitionToWriteStats": {}, "operationType": "UPSERT"}).encode())
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


# CI: each version with both table types and both policies (every case once); all with HTS_LONG_TESTS.
@pytest.mark.long(hudi1="1.0.2", policy="KEEP_LATEST_COMMITS", table_type="MERGE_ON_READ")
@pytest.mark.long(hudi1="1.0.2", policy="KEEP_LATEST_FILE_VERSIONS", table_type="COPY_ON_WRITE")
@pytest.mark.long(hudi1="1.1.1", policy="KEEP_LATEST_COMMITS", table_type="COPY_ON_WRITE")
@pytest.mark.long(hudi1="1.1.1", policy="KEEP_LATEST_FILE_VERSIONS", table_type="MERGE_ON_READ")
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
    snapshot = hudi_rows(hudi1, history.base)

    _hudi_clean(hudi1, hudi_copy, policy, retained)
    props = {"hoodie.cleaner.policy": policy, _RETAINED[policy][1]: retained}
    # The volume breaker is not Hudi's (tests/clean cover it): here only what Hudi deletes counts.
    [ours] = make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run().cleans

    hudi_deleted = before - _data_files(hudi_copy)
    our_deleted = before - _data_files(our_copy)
    assert hudi_deleted and our_deleted == hudi_deleted  # two cleans of nothing would prove nothing
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
    assert hudi_rows(hudi1, our_copy) == snapshot
    assert hudi_rs_rows(our_copy) == snapshot
    # Hudi's own cleaner accepts our clean: it plans from our completed instant and fails on nothing.
    _hudi_clean(hudi1, our_copy, policy, retained)
    assert _data_files(our_copy) <= before - our_deleted
    # Hudi's writer goes on: its upsert lands exactly once.
    opts = {
        **writer_options(history.table_name, table_type, False),
        "hoodie.datasource.write.operation": "upsert",
    }
    hudi1.write(our_copy, rows([0, 3, 100], 50), SCHEMA, opts)
    after = hudi_rows(hudi1, our_copy)
    assert [r for r in after if r[0] in (0, 3, 100)] == [
        (0, "americas", 50, "v50"),
        (3, "asia", 50, "v50"),
        (100, "americas", 50, "v50"),
    ]
    new_ids = {0, 3, 100} - {r[0] for r in snapshot}
    assert len(after) == len({r[0] for r in after}) == len(snapshot) + len(new_ids)


# The two cases where the pending instant decides (the other pairs passed too, and cost CI minutes):
# the clustering holds KEEP_LATEST_COMMITS's earliest commit to retain back, the compaction protects
# the slice it reads from KEEP_LATEST_FILE_VERSIONS.
PENDING_CASES = [("COPY_ON_WRITE", "KEEP_LATEST_COMMITS"), ("MERGE_ON_READ", "KEEP_LATEST_FILE_VERSIONS")]


@pytest.mark.parametrize(("table_type", "policy"), PENDING_CASES)
def test_pending_clustering_and_compaction_hold_files_as_hudi_1x_holds_them(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    table_type: str,
    policy: str,
) -> None:
    """A clustering (copy-on-write) or a compaction (merge-on-read) Hudi scheduled and left pending, as
    the `clustering` / `compaction` action of layout 2, then one more write: our clean keeps what
    Hudi's keeps for it (the files its plan reads, and under KEEP_LATEST_COMMITS everything from the
    earliest pending instant on) and deletes what Hudi's deletes."""
    history, _ = histories[(table_type, False)]
    pending = tmp_path / "pending"
    shutil.copytree(history.base, pending)
    name = f"pending_{next(_copies)}"
    hudi1.sql(f"create table {name} using hudi location '{pending}'")
    timeline = pending / ".hoodie" / "timeline"
    known = set(os.listdir(timeline))
    if table_type == "COPY_ON_WRITE":
        options = "hoodie.clustering.plan.strategy.small.file.limit=100000000"
        hudi1.sql(f"call run_clustering(table => '{name}', op => 'schedule', options => '{options}')")
        action = "clustering"
    else:
        options = "hoodie.compact.inline.max.delta.commits=1"
        hudi1.sql(f"call run_compaction(table => '{name}', op => 'schedule', options => '{options}')")
        action = "compaction"
    [requested] = [n for n in set(os.listdir(timeline)) - known if n.endswith(f".{action}.requested")]
    # A write after the plan (new file groups only: Hudi rejects updates to groups under clustering),
    # so that KEEP_LATEST_COMMITS's earliest commit to retain is held back by the pending instant.
    opts = {
        **writer_options(history.table_name, table_type, False),
        "hoodie.datasource.write.operation": "insert",
    }
    hudi1.write(pending, rows(range(100, 104), 9), SCHEMA, opts)
    assert not [p for p in timeline.iterdir() if re.fullmatch(rf"{requested[:17]}_\d{{17}}\.\w+", p.name)]
    table = HudiTable.open(str(pending))
    facts = table.load_view().facts
    held = facts.pending_clustering if action == "clustering" else facts.pending_compaction
    assert held, f"Hudi's {action} plan names file groups"

    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(pending, hudi_copy)
    shutil.copytree(pending, our_copy)
    before = _data_files(pending)
    _hudi_clean(hudi1, hudi_copy, policy, 1)
    props = {"hoodie.cleaner.policy": policy, _RETAINED[policy][1]: 1}
    make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run()
    our_deleted = before - _data_files(our_copy)
    assert our_deleted and our_deleted == before - _data_files(hudi_copy)
    # Every slice the plan reads is still there: a clustering reads the latest slice, a compaction the
    # slice before the one it opened.
    view = HudiTable.open(str(our_copy)).load_view()
    for key in held:
        group = view.file_groups[key]
        compacted = facts.pending_compaction.get(key)
        read = next(s for s in group.slices if compacted is None or s.base_instant_time == compacted[1])
        kept = {f.path for f in read.log_files} | ({read.base_file.path} if read.base_file else set())
        assert kept and not kept & our_deleted


def test_savepoints_and_incremental_cleans_are_honoured_as_hudi_1x_honours_them(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
) -> None:
    """A savepoint Hudi wrote on an early commit keeps its files from our clean as from Hudi's; after
    one more upsert, the next (incremental) clean of each deletes the same files again."""
    history, _ = histories[("COPY_ON_WRITE", False)]
    copies = {"hudi": tmp_path / "hudi", "ours": tmp_path / "ours"}
    names = {}
    commits = sorted(
        p.name[:17] for p in (history.base / ".hoodie" / "timeline").iterdir() if p.name.endswith(".commit")
    )
    for who, copy in copies.items():
        shutil.copytree(history.base, copy)
        names[who] = f"sp_{who}_{next(_copies)}"
        hudi1.sql(f"create table {names[who]} using hudi location '{copy}'")
        hudi1.sql(f"call create_savepoint(table => '{names[who]}', commit_time => '{commits[1]}')")
    before = _data_files(copies["ours"])
    props = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": 1}
    args = (
        "clean_policy => 'KEEP_LATEST_COMMITS', retain_commits => 1, "
        "options => 'hoodie.metadata.enable=false'"
    )

    def clean_both() -> None:
        hudi1.sql(f"call run_clean(table => '{names['hudi']}', {args})")
        make_cleaner(copies["ours"], props, CleanOptions(force=True), now=None).run()

    clean_both()
    deleted = {who: before - _data_files(copy) for who, copy in copies.items()}
    assert deleted["ours"] == deleted["hudi"] and deleted["ours"]
    savepointed = {f for f in before if commits[1] in f}
    assert savepointed and savepointed <= _data_files(copies["ours"])
    opts = {
        **writer_options(history.table_name, "COPY_ON_WRITE", False),
        "hoodie.datasource.write.operation": "upsert",
    }
    for copy in copies.values():
        hudi1.write(copy, rows(range(0, 30, 2), 60), SCHEMA, opts)
    # The two writes name their files by their own instants: the same count, other names.
    middle = {who: _data_files(copy) for who, copy in copies.items()}
    assert len(middle["ours"]) == len(middle["hudi"])
    clean_both()
    again = {who: middle[who] - _data_files(copy) for who, copy in copies.items()}
    assert again["ours"] == again["hudi"] and again["ours"]
    assert savepointed <= _data_files(copies["ours"])


def _hudi_clean_by_hours(jvm: HudiJvm, name: str, hours: int) -> list[dict[str, Any]]:
    args = f"clean_policy => 'KEEP_LATEST_BY_HOURS', hours_retained => {hours}, trigger_max_commits => 0"
    return jvm.sql(f"call run_clean(table => '{name}', {args}, options => 'hoodie.metadata.enable=false')")


def test_keep_latest_by_hours_cuts_by_requested_time_as_hudi_1x_does(hudi1: HudiJvm, tmp_path: Path) -> None:
    """KEEP_LATEST_BY_HOURS needs commits hours apart, which no writer run here produces: a layout-2
    fixture table holds them, and Hudi 1.x's cleaner reads it as it reads its own. One commit was
    requested before the cutoff and completed after it: Hudi 1.x still retains from the first commit
    *requested* at or after `now - H` (`CleanerUtils.getEarliestCommitToRetain`), and so do we."""
    t = FixtureTable(tmp_path / "hudi", name="hours_1x", table_version=hudi1.table_version)
    now = datetime.now(UTC)
    files = {
        n: FileSpec(p, f"{i}1111111-aaaa-bbbb-cccc-dddddddddddd-0")
        for i, (n, p) in enumerate([("a", "p1"), ("b", "p2"), ("c", "p3")])
    }
    # (requested, completed) hours ago, and the file groups written; half an hour off the hour, so
    # Hudi's clock and ours (seconds apart) cut at the same place.
    history = [
        (11.5, 11.5, "abc"),
        (9.5, 9.5, "ab"),
        (8.5, 6.75, "ac"),  # requested before the 8-hour cutoff, completed after it
        (7.5, 7.5, "a"),
        (5.5, 5.5, "ab"),
        (3.5, 3.5, "ac"),
        (1.5, 1.5, "a"),
    ]
    instants = []
    for requested, completed, written in history:
        instant = format_instant_time(now - timedelta(hours=requested))
        done = format_instant_time(now - timedelta(hours=completed, seconds=-1))
        t.commit(instant, [files[n] for n in written], completion_time=done)
        instants.append(instant)
    ours = tmp_path / "ours"
    shutil.copytree(t.base, ours)
    before = _data_files(t.base)
    name = f"hours_{next(_copies)}"
    hudi1.sql(f"create table {name} using hudi location '{t.base}'")
    expected_ectr = {8: instants[3], 4: instants[5]}
    for hours in (8, 4):  # the second clean, with a narrower window, deletes more (incrementally)
        [hudi_row] = _hudi_clean_by_hours(hudi1, name, hours)
        props = {
            "hoodie.cleaner.policy": "KEEP_LATEST_BY_HOURS",
            "hoodie.cleaner.hours.retained": hours,
            "hoodie.clean.max.commits": 0,
        }
        [result] = make_cleaner(ours, props, CleanOptions(force=True), now=None).run().cleans
        assert hudi_row["earliest_commit_to_retain"] == expected_ectr[hours]
        assert result.earliest_commit_to_retain == expected_ectr[hours]
        assert before - _data_files(ours) == before - _data_files(t.base)
    assert before - _data_files(ours)
    # Hudi's cleaner plans from our two completed cleans and finds nothing more to delete (so it writes
    # no clean instant of its own).
    ours_name = f"hours_{next(_copies)}"
    hudi1.sql(f"create table {ours_name} using hudi location '{ours}'")
    _hudi_clean_by_hours(hudi1, ours_name, 4)
    assert _data_files(ours) == _data_files(t.base)
    timeline = HudiTable.open(str(ours)).load_timeline()
    assert [i.state for i in timeline.by_actions([Action.CLEAN])] == [State.COMPLETED] * 2


# -- cleaning a table with Hudi 1.x's metadata table (its defaults: files, column_stats, partition_stats)


def _mdt_blocks_of(base: Path, instant: str) -> dict[tuple[str, str], Any]:
    """The metadata table's log blocks of one instant, decoded: per (partition, block kind) the
    `files` records or the deleted keys. A byte-level oracle beside Hudi's procedures."""
    out: dict[tuple[str, str], Any] = {}
    for path in sorted((base / ".hoodie" / "metadata").glob(f"*/.*_{instant}.log.*")):
        if path.name.endswith(".crc"):
            continue
        for block in read_log_blocks(path.read_bytes(), str(path)):
            kind = (path.parent.name, block.block_type.name)
            if block.block_type is BlockType.DELETE_BLOCK:
                location = BlockLocation(str(path), block.offset, len(block.content))
                keys = [
                    (d.record_key, d.partition_path, d.ordering_value)
                    for d in decode_deletes(memoryview(block.content), location)
                ]
                out.setdefault(kind, []).extend(keys)
            else:
                reader = HFileReader(block.content, str(path))
                records = [
                    decode_files_record(k, v, reader.schema_text or "", str(path)) for k, v in reader.items()
                ]
                out.setdefault(kind, []).extend((r.key, sorted(r.entries.items())) for r in records)
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.long(hudi1="1.0.2", table_type="MERGE_ON_READ")  # CI: each case on one version
@pytest.mark.long(hudi1="1.1.1", table_type="COPY_ON_WRITE")
@pytest.mark.parametrize(
    ("table_type", "policy", "retained"),
    [("COPY_ON_WRITE", "KEEP_LATEST_FILE_VERSIONS", 1), ("MERGE_ON_READ", "KEEP_LATEST_COMMITS", 1)],
)
def test_clean_keeps_hudi_1x_metadata_table_in_sync_as_hudi_does(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    table_type: str,
    policy: str,
    retained: int,
) -> None:
    """On a table with Hudi 1.x's default metadata table our clean deletes what Hudi's cleaner
    deletes and leaves the metadata table as Hudi's clean leaves it: Hudi's metadata procedures list
    the same files and column stats on both copies and find storage and listing equal; readers with
    the metadata table (and data skipping) read what they read before; Hudi's writer and cleaner go on."""
    history, _ = histories[(table_type, True)]
    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(history.base, hudi_copy)
    shutil.copytree(history.base, our_copy)
    before = _data_files(history.base)
    snapshot = hudi_rows(hudi1, history.base, metadata=True)

    name = f"cleaned_{next(_copies)}"
    hudi1.sql(f"create table {name} using hudi location '{hudi_copy}'")
    args = f"clean_policy => '{policy}', {_RETAINED[policy][0]} => {retained}"
    [hudi_clean] = hudi1.sql(f"call run_clean(table => '{name}', {args})")
    props = {"hoodie.cleaner.policy": policy, _RETAINED[policy][1]: retained}
    # A dry run first: it plans what the clean then deletes and writes nothing, metadata table included.
    everything = sorted(str(p.relative_to(our_copy)) for p in our_copy.rglob("*"))
    dry = make_cleaner(our_copy, props, CleanOptions(force=True, dry_run=True), now=None).run()
    assert sorted(str(p.relative_to(our_copy)) for p in our_copy.rglob("*")) == everything
    [ours] = make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run().cleans

    our_deleted = before - _data_files(our_copy)
    assert our_deleted == before - _data_files(hudi_copy) and our_deleted
    assert [c.files_planned for c in dry.cleans] == [len(our_deleted)]
    # The metadata table's blocks of the two cleans hold the same records and deleted keys.
    assert _mdt_blocks_of(our_copy, ours.instant_time) == _mdt_blocks_of(
        hudi_copy, hudi_clean["start_clean_time"]
    )
    mdt_timeline = our_copy / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert any(
        re.fullmatch(rf"{ours.instant_time}_\d{{17}}\.deltacommit", p.name) for p in mdt_timeline.iterdir()
    )
    # Hudi's metadata procedures: the same listing and column stats as after Hudi's own clean.
    views = mdt_views(hudi1, our_copy)
    assert views == mdt_views(hudi1, hudi_copy)
    assert all(
        r["is_present_in_fs"] and r["is_present_in_metadata"] and r["fs_size"] == r["metadata_size"]
        for r in (dict(row) for row in views["validation"])
    )
    # Readers: Hudi with the metadata table, with data skipping on a filter, and hudi-rs.
    assert hudi_rows(hudi1, our_copy, metadata=True) == snapshot
    skipping = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
    filtered = hudi1.read(our_copy, skipping, where="ts >= 5")
    assert sorted((r["id"], r["region"], r["ts"], r["value"]) for r in filtered) == [
        r for r in snapshot if r[2] >= 5
    ]
    assert hudi_rs_rows(our_copy) == snapshot
    # Hudi's writer goes on (its metadata-table writer reads ours), then Hudi's cleaner.
    opts = {
        **writer_options(history.table_name, table_type, True),
        "hoodie.datasource.write.operation": "upsert",
    }
    hudi1.write(our_copy, rows([0, 3, 100], 50), SCHEMA, opts)
    after = hudi_rows(hudi1, our_copy, metadata=True)
    assert [r for r in after if r[0] in (0, 3, 100)] == [
        (0, "americas", 50, "v50"),
        (3, "asia", 50, "v50"),
        (100, "americas", 50, "v50"),
    ]
    name_ours = f"ours_{next(_copies)}"
    hudi1.sql(f"create table {name_ours} using hudi location '{our_copy}'")
    hudi1.sql(f"call run_clean(table => '{name_ours}', {args})")
    validation = [dict(r) for r in mdt_views(hudi1, our_copy)["validation"]]
    assert all(r["is_present_in_fs"] and r["is_present_in_metadata"] for r in validation)


def test_clean_leaves_bloom_record_and_secondary_indexes_as_hudi_1x_does(
    hudi1: HudiJvm, tmp_path: Path
) -> None:
    """A copy-on-write table with every index a clean may meet (bloom filters, record index, a
    secondary index beside files, column_stats, partition_stats): our clean writes into the metadata
    table exactly what Hudi's writes (files and column_stats only), and Hudi's lookups through the
    record index and the secondary index find the rows they found before."""
    name = f"indexed{hudi1.table_version}"
    base = tmp_path / name
    opts = {
        **writer_options(name, "COPY_ON_WRITE", True),
        "hoodie.metadata.index.bloom.filter.enable": "true",
        "hoodie.metadata.record.index.enable": "true",  # 1.0
        "hoodie.metadata.global.record.level.index.enable": "true",  # 1.1
    }
    for ids, batch, operation in ((range(0, 12), 0, "insert"), (range(4, 16), 1, "upsert")):
        hudi1.write(base, rows(ids, batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": operation})
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    hudi1.sql("set hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider")
    hudi1.sql(f"create index idx_value on {name} (value)")
    hudi1.write(
        base, rows(range(0, 16, 3), 2), SCHEMA, {**opts, "hoodie.datasource.write.operation": "upsert"}
    )
    props = (base / ".hoodie" / "hoodie.properties").read_text("latin-1")
    partitions = set(re.findall(r"^hoodie.table.metadata.partitions=(.*)$", props, re.M)[0].split(","))
    assert {"bloom_filters", "record_index", "secondary_index_idx_value", "partition_stats"} <= partitions

    hudi_copy, our_copy = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(base, hudi_copy)
    shutil.copytree(base, our_copy)
    before = _data_files(base)
    lookups = {"id = 4": [], "value = 'v2'": []}
    reader = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
    for where in lookups:
        lookups[where] = sorted(r["id"] for r in hudi1.read(base, reader, where=where))
    assert all(lookups.values())

    hudi1.sql(f"create table {name}_h using hudi location '{hudi_copy}'")
    args = "clean_policy => 'KEEP_LATEST_FILE_VERSIONS', file_versions_retained => 1"
    [hudi_clean] = hudi1.sql(f"call run_clean(table => '{name}_h', {args})")
    cleaner_props = {
        "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
        "hoodie.cleaner.fileversions.retained": 1,
    }
    [ours] = make_cleaner(our_copy, cleaner_props, CleanOptions(force=True), now=None).run().cleans

    assert before - _data_files(our_copy) == before - _data_files(hudi_copy) != set()
    blocks = _mdt_blocks_of(our_copy, ours.instant_time)
    assert blocks == _mdt_blocks_of(hudi_copy, hudi_clean["start_clean_time"])
    assert {partition for partition, _ in blocks} == {"files", "column_stats"}
    assert mdt_views(hudi1, our_copy) == mdt_views(hudi1, hudi_copy)
    for where, found in lookups.items():
        assert sorted(r["id"] for r in hudi1.read(our_copy, reader, where=where)) == found, where


# A clean killed after each file it creates in the metadata table of a version-8/9 table.
MDT_KILL_POINTS = {
    "mdt_files_log": r"^\.hoodie/metadata/files/\.files-0000-0_\d{17}\.log\.",
    "mdt_column_stats_log": r"^\.hoodie/metadata/column_stats/\.col-stats-000\d-0_\d{17}\.log\.",
    "mdt_completed": r"^\.hoodie/metadata/\.hoodie/timeline/\d{17}_\d{17}\.deltacommit$",
}


@pytest.mark.long(hudi1="1.0.2")  # every kill point on 1.1.1 in CI, on both versions long
@pytest.mark.parametrize("step", list(MDT_KILL_POINTS))
def test_a_clean_killed_while_writing_the_metadata_table_is_repaired_by_the_next_run(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    step: str,
) -> None:
    """SIGKILL right after each metadata-table file of a clean on a version-8/9 table: Hudi's
    readers, with the metadata table and without, read what they read before; the next run
    completes the clean and Hudi's metadata validation finds storage and listing equal."""
    history, _ = histories[("MERGE_ON_READ", True)]
    base = tmp_path / "t"
    shutil.copytree(history.base, base)
    rows_before = hudi_rows(hudi1, base, metadata=True)
    clean = ["clean", "--base-path", str(base), "--timezone", "UTC", "--force",
             "--hoodie-conf", "hoodie.cleaner.commits.retained=1",
             "--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]  # fmt: skip
    run_killed_at(MDT_KILL_POINTS[step], clean, tmp_path / "killed.log")
    timeline = base / ".hoodie" / "timeline"
    assert not [p for p in timeline.iterdir() if p.name.endswith(".clean") and "_" in p.name]
    assert hudi_rows(hudi1, base, metadata=True) == rows_before
    assert hudi_rows(hudi1, base, metadata=False) == rows_before

    time.sleep(2.5)  # the dead run's heartbeat expires; the next run takes its clean over
    assert main(clean) == 0
    assert len([p for p in timeline.iterdir() if re.fullmatch(r"\d{17}_\d{17}\.clean", p.name)]) == 1
    validation = [dict(r) for r in mdt_views(hudi1, base)["validation"]]
    assert validation and all(
        r["is_present_in_fs"] and r["is_present_in_metadata"] and r["fs_size"] == r["metadata_size"]
        for r in validation
    )
    assert hudi_rows(hudi1, base, metadata=True) == rows_before


# -- a version-6 table (Hudi 0.15) upgraded in place by a Hudi 1.x writer


# CI: each (table type, metadata table) once, each version with both types and both metadata settings.
@pytest.mark.long(hudi1="1.0.2", table_type="MERGE_ON_READ", metadata=True)
@pytest.mark.long(hudi1="1.0.2", table_type="COPY_ON_WRITE", metadata=False)
@pytest.mark.long(hudi1="1.1.1", table_type="COPY_ON_WRITE", metadata=True)
@pytest.mark.long(hudi1="1.1.1", table_type="MERGE_ON_READ", metadata=False)
@pytest.mark.parametrize(
    ("table_type", "metadata"),
    [("COPY_ON_WRITE", False), ("MERGE_ON_READ", False), ("COPY_ON_WRITE", True), ("MERGE_ON_READ", True)],
)
def test_a_table_hudi_1x_upgraded_in_place_is_read_and_cleaned_as_hudi_does(
    spark: Any, hudi1: HudiJvm, tmp_path: Path, table_type: str, metadata: bool
) -> None:
    """Written by Hudi 0.15 at version 6 and upgraded by one Hudi 1.x upsert, as a user upgrading
    their writers leaves it; with the metadata table on (both versions' default) its metadata table
    is upgraded too, and our clean keeps it as Hudi's own clean does."""
    history = build_upgraded_history(spark, hudi1, tmp_path / "tables", table_type, metadata)
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
    snapshot = hudi_rows(hudi1, history.base)
    if metadata:
        name = f"upgraded_{next(_copies)}"
        hudi1.sql(f"create table {name} using hudi location '{hudi_copy}'")
        hudi1.sql(
            f"call run_clean(table => '{name}', clean_policy => 'KEEP_LATEST_COMMITS', retain_commits => 1)"
        )
    else:
        _hudi_clean(hudi1, hudi_copy, "KEEP_LATEST_COMMITS", 1)
    props = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": 1}
    make_cleaner(our_copy, props, CleanOptions(force=True), now=None).run()
    our_deleted = before - _data_files(our_copy)
    assert our_deleted == before - _data_files(hudi_copy)
    assert our_deleted or table_type == "MERGE_ON_READ"  # a pending compaction may hold every slice
    assert hudi_rows(hudi1, our_copy) == snapshot
    if not metadata:
        assert hudi_rs_rows(our_copy) == snapshot
    else:
        # hudi-rs 0.5.0 cannot merge a metadata table whose blocks carry two versions' record schemas
        # (0.15's base file, 1.x's blocks since the upgrade) until the metadata table compacts: then it
        # fails on Hudi's own copy as on ours. Ours must read wherever Hudi's reads, and the same rows.
        try:
            theirs: list[tuple[Any, ...]] | None = hudi_rs_rows(hudi_copy)
        except Exception as exc:
            assert "reconcile: column 'ColumnStatsMetadata'" in str(exc)
            theirs = None
        if theirs is None:
            with pytest.raises(Exception, match=r"reconcile: column 'ColumnStatsMetadata'"):
                hudi_rs_rows(our_copy)
        else:
            assert theirs == hudi_rs_rows(our_copy) == snapshot
        assert hudi_rows(hudi1, our_copy, metadata=True) == snapshot
        views = mdt_views(hudi1, our_copy)
        assert views == mdt_views(hudi1, hudi_copy)
        assert all(
            dict(r)["is_present_in_metadata"] and dict(r)["is_present_in_fs"] for r in views["validation"]
        )


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
  hoodie.compact.inline.max.delta.commits: 1
tables:{entries}
"""


def test_the_daemon_serves_every_service_on_1x_tables_without_failing(
    spark: SparkSession,
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
) -> None:
    """On version 8/9 merge-on-read tables, with and without the metadata table: the daemon's
    clustering, compaction and cleaning ticks all run (none refused, failed or quarantined), the
    clean deletes files, and Hudi reads every row it read before."""
    plain, with_mdt = tmp_path / "plain", tmp_path / "mdt"
    shutil.copytree(histories[("MERGE_ON_READ", False)][0].base, plain)
    shutil.copytree(histories[("MERGE_ON_READ", True)][0].base, with_mdt)
    before = {table: _data_files(table) for table in (plain, with_mdt)}
    rows_before = {table: hudi_rows(hudi1, table, metadata=table == with_mdt) for table in (plain, with_mdt)}
    config = parse_daemon_config(_daemon_config({"plain": plain, "mdt": with_mdt}))
    daemon = Daemon(
        config, registry=CollectorRegistry(), serve_http=False, executor=SparkExecutor(session=spark)
    )
    now = datetime.now(UTC)
    # What each tick must leave completed: a compaction commits as `commit`, a clustering as
    # `replacecommit`, a clean as `clean` (DONE alone is also a tick that found nothing to do).
    completes = {
        TableService.COMPACTION: "commit",
        TableService.CLUSTERING: "replacecommit",
        TableService.CLEANING: "clean",
    }
    for name, table in (("plain", plain), ("mdt", with_mdt)):
        runtime = daemon.runtimes[name]
        for service, action in completes.items():
            known = set(completed_instants(table, action))
            assert daemon.run_iteration(runtime, service, now) is Outcome.DONE, (name, service)
            assert len(set(completed_instants(table, action)) - known) == 1, (name, service)
        assert not runtime.consecutive_failures and not runtime.quarantined
        assert before[table] - _data_files(table), f"{name}: the clean deleted files"
        assert hudi_rows(hudi1, table, metadata=table == with_mdt) == rows_before[table]


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


def _digests(base: Path) -> dict[str, str]:
    """The table's data files (its partitions only) -> SHA-256."""
    return {
        str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
        for partition in PARTITIONS
        for p in (base / partition).glob("*.parquet")
    }


def _as_of(jvm: HudiJvm, base: Path, instant: str, metadata: bool) -> list[tuple[Any, ...]]:
    found = jvm.read(base, {"as.of.instant": instant, "hoodie.metadata.enable": str(metadata).lower()})
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in found)


@pytest.mark.long(hudi1=("1.0.2", "1.2.0"))  # CI: 1.1.1 (table version 9); 1.0.2 (8) and 1.2.0 long
def test_an_undone_clean_is_taken_out_of_the_metadata_table_and_read_as_if_it_never_ran(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our clean with the trash on, on a table Hudi 1.x wrote with the metadata table, then
    `clean --undo`: the metadata table lists what it listed before the clean (Hudi's procedures),
    Hudi reads every commit through it and by listing as on an untouched copy, and Hudi's own clean
    then leaves exactly what it leaves on that copy."""
    source = tmp_path / "source"
    options = {**writer_options(f"undo_{hudi1.table_version}", "COPY_ON_WRITE", True),
               "hoodie.table.services.enabled": "false"}  # fmt: skip
    for batch in range(4):
        upsert = {**options, "hoodie.datasource.write.operation": "upsert"}
        hudi1.write(source, rows(range(0, 16), batch), SCHEMA, upsert)
    commits = [requested for requested, _ in completed_instants(source, "commit")]
    ours, untouched = tmp_path / "ours", tmp_path / "untouched"
    shutil.copytree(source, ours)
    shutil.copytree(source, untouched)
    before = _digests(ours)
    argv = ["clean", "--base-path", str(ours), "--timezone", "UTC", "--json"]
    capsys.readouterr()
    retain = "--hoodie-conf=hoodie.cleaner.commits.retained=1"
    assert main([*argv, retain, "--trash-retention-hours", "24"]) == 0
    [clean] = json.loads(capsys.readouterr().out)["cleans"]
    released = [c for c in commits if c < clean["earliest_commit_to_retain"]]
    assert released and clean["files_deleted"] and set(_digests(ours)) < set(before)
    with pytest.raises(HudiJvmError, match="Cleaner cleaned up the timestamp of interest"):
        _as_of(hudi1, ours, released[-1], metadata=True)

    assert main([*argv, "--undo", clean["instant_time"]]) == 0
    assert _digests(ours) == before  # byte for byte
    assert mdt_views(hudi1, ours) == mdt_views(hudi1, untouched)
    for instant in commits:
        for metadata in (True, False):
            assert _as_of(hudi1, ours, instant, metadata) == _as_of(hudi1, untouched, instant, metadata)
    for base in (ours, untouched):
        name = f"undone_{next(_copies)}"
        hudi1.sql(f"create table {name} using hudi location '{base}'")
        hudi1.sql(
            f"call run_clean(table => '{name}', clean_policy => 'KEEP_LATEST_COMMITS', retain_commits => 1)"
        )
    assert set(before) - set(_digests(untouched)) and _digests(ours) == _digests(untouched)
    assert mdt_views(hudi1, ours) == mdt_views(hudi1, untouched)
    hudi1.write(ours, rows([1, 99], 9), SCHEMA, {**options, "hoodie.datasource.write.operation": "upsert"})
    assert [r for r in hudi_rows(hudi1, ours, metadata=True) if r[0] in (1, 99)] == [
        (1, "asia", 9, "v9"),
        (99, "asia", 9, "v9"),
    ]


NO_MDT = "hoodie.metadata.enable=false"


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.hudi1_only("1.2.0")  # the cap is new in Hudi 1.2
def test_a_capped_clean_retains_what_hudi_1_2s_capped_clean_retains(hudi1: HudiJvm, tmp_path: Path) -> None:
    """`hoodie.clean.max.commits.to.clean=2`: after a first clean, eight more commits would all be
    released by one commit retained; Hudi 1.2.0's clean releases two past the last clean's earliest
    commit to retain, and so does ours on an identical copy: the same earliest commit to retain and
    the same files deleted, twice in a row."""
    source = tmp_path / "source"
    options = {**writer_options("capped", "COPY_ON_WRITE", False), "hoodie.table.services.enabled": "false"}
    upsert = {**options, "hoodie.datasource.write.operation": "upsert"}
    for batch in range(3):
        hudi1.write(source, rows(range(0, 8), batch), SCHEMA, upsert)
    first = f"capped_{next(_copies)}"
    hudi1.sql(f"create table {first} using hudi location '{source}'")
    hudi1.sql(f"call run_clean(table => '{first}', retain_commits => 1, options => '{NO_MDT}')")
    for batch in range(3, 11):
        hudi1.write(source, rows(range(0, 8), batch), SCHEMA, upsert)
    theirs, ours = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(source, theirs)
    shutil.copytree(source, ours)
    cap = "hoodie.clean.max.commits.to.clean=2"
    again = "hoodie.clean.max.commits=0"  # the second clean comes with no commit since the first
    props = {"hoodie.cleaner.commits.retained": 1, "hoodie.clean.max.commits.to.clean": 2,
             "hoodie.clean.max.commits": 0}  # fmt: skip
    for _ in range(2):
        before = _digests(theirs)
        name = f"capped_{next(_copies)}"
        hudi1.sql(f"create table {name} using hudi location '{theirs}'")
        [row] = hudi1.sql(
            f"call run_clean(table => '{name}', retain_commits => 1, options => '{cap},{again},{NO_MDT}')"
        )
        [clean] = make_cleaner(ours, props, CleanOptions(), now=None).run().cleans
        assert clean.earliest_commit_to_retain == row["earliest_commit_to_retain"]
        deleted = set(before) - set(_digests(theirs))
        assert deleted and set(_digests(ours)) == set(_digests(theirs))
    assert hudi_rows(hudi1, ours) == hudi_rows(hudi1, theirs)


@pytest.mark.hudi1_only("1.2.0")  # empty clean commits are new in Hudi 1.2
def test_an_empty_clean_hudi_1_2_commits_is_read_as_the_anchor_of_the_next_clean(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hoodie.write.empty.clean.interval.hours`: on an append-only table Hudi 1.2.0's clean that
    deletes nothing still completes, recording an earliest commit to retain and no partition. `check`,
    `archive --dry-run` and our clean read it; our next clean scans incrementally from its anchor."""
    base = tmp_path / "appends"
    options = {**writer_options("appends", "COPY_ON_WRITE", False), "hoodie.table.services.enabled": "false"}
    for batch in range(4):
        insert = {**options, "hoodie.datasource.write.operation": "insert"}
        hudi1.write(base, rows(range(batch * 10, batch * 10 + 10), batch), SCHEMA, insert)
    name = f"appends_{next(_copies)}"
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    empty = "hoodie.write.empty.clean.interval.hours=1"
    hudi1.sql(f"call run_clean(table => '{name}', retain_commits => 1, options => '{empty},{NO_MDT}')")
    [clean] = completed_instants(base, "clean")
    table = HudiTable.open(str(base))
    [instant] = table.load_timeline().by_actions([Action.CLEAN]).completed().instants
    metadata = table.facts_reader.metadata(instant, codecs.CleanMetadata)
    assert metadata.total_files_deleted == 0 and not metadata.partition_metadata
    assert metadata.earliest_commit_to_retain  # an anchor all the same
    utc = ["--base-path", str(base), "--timezone", "UTC", "--json"]
    for argv in (
        ["check", *utc],
        ["archive", "--dry-run", *utc],
        ["status", "--base-path", str(base), "--json"],
    ):
        capsys.readouterr()
        assert main(argv) in (0, 2), argv  # 2: check says a service is refused
        json.loads(capsys.readouterr().out)
    upsert = {**options, "hoodie.datasource.write.operation": "upsert"}
    for batch in (9, 10):
        hudi1.write(base, rows(range(0, 5), batch), SCHEMA, upsert)
    capsys.readouterr()
    assert main(["clean", *utc, "--hoodie-conf=hoodie.cleaner.commits.retained=1", "--dry-run"]) == 0
    [planned] = json.loads(capsys.readouterr().out)["cleans"]
    assert planned["incremental"] is True, planned  # from the empty clean's earliest commit to retain
    assert clean[0] == instant.timestamp
