"""Tables written by real Hudi 1.0.2 (table version 8) and 1.1.1 (version 9): the service reads them as
Hudi and hudi-rs do (timeline layout 2, Avro commit metadata, log files sliced by completion time),
and refuses to write to them until their services are served."""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.cli import main
from service.status import table_status
from service.table.table import HudiTable
from tests.support.hudi1_histories import Hudi1History, HudiSlice, build_history, hudi_latest_slices
from tests.support.hudi_jvm import HudiJvm, hudi_jvm
from tests.support.hudi_tables import LatestSlice, hudi_rs_file_slices

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

# (table type, metadata table on): Hudi 1.x's defaults keep the metadata table on.
HISTORIES = [("COPY_ON_WRITE", True), ("MERGE_ON_READ", True), ("MERGE_ON_READ", False)]


@pytest.fixture(scope="module", params=["1.0.2", "1.1.1"])
def hudi1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HudiJvm]:
    root = tmp_path_factory.mktemp(f"hudi-{request.param}")
    with hudi_jvm(request.param, root / "jvm") as jvm:
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


def _ours(table: HudiTable) -> list[HudiSlice]:
    status = table_status(table)
    return sorted(
        HudiSlice(
            g["partition_path"],
            g["file_id"],
            g["base_instant"],
            g["base_file"] or "",
            tuple(sorted(lf["name"] for lf in g["log_files"])),
        )
        for g in status["file_groups"]
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
    ours = _ours(table)
    assert ours == theirs
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


@pytest.mark.parametrize("service", ["clean", "cluster", "compact"])
def test_services_are_refused_by_name_and_nothing_changes(
    hudi1: HudiJvm,
    histories: dict[tuple[str, bool], tuple[Hudi1History, list[HudiSlice]]],
    tmp_path: Path,
    service: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    history, _ = histories[("MERGE_ON_READ", True)]
    copy = tmp_path / "t"
    shutil.copytree(history.base, copy)
    before = sorted(str(p.relative_to(copy)) for p in copy.rglob("*"))
    args = [service, "--base-path", str(copy)]
    if service != "clean":
        args += ["--mode", "scheduleAndExecute"]
    with caplog.at_level(logging.WARNING):
        assert main(args) != 0
    said = " ".join(r.getMessage() for r in caplog.records)
    assert re.search(
        rf"{service}\w* of table version {hudi1.table_version} \(Hudi 1.x\) is not served yet", said
    )
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
