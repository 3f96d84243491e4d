from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from service.cli import main
from service.table.properties import TableConfig, load_table_config, store_table_config
from tests.support.fixtures import FileSpec, FixtureTable, ts

FID = "11111111-2222-3333-4444-555555555555-0"


def _table(tmp_path: Path) -> FixtureTable:
    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec("a", FID)])
    return t


def _set(t: FixtureTable, **updates: str) -> None:
    config = load_table_config(t.storage)
    store_table_config(t.storage, TableConfig(dict(config.raw)).with_updates(updates))


def test_cli_status_json_lists_live_file_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(tmp_path)
    assert main(["status", "--base-path", str(t.base), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["table"]["name"] == "fixture" and report["table"]["version"] == 6
    assert [(g["partition_path"], g["file_id"], g["base_instant"]) for g in report["file_groups"]] == [
        ("a", FID, ts(1))
    ]
    assert report["instants"] == [
        {"timestamp": ts(1), "action": "commit", "state": "COMPLETED", "completion_time": None}
    ]


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("not_a_table", r"is not a Hudi table"),
        ("version", r"hoodie.table.version=7; the service reads table versions 6, 8, 9"),
        ("layout", r"version=8 with hoodie.timeline.layout.version=1; .* requires layout version 2"),
        ("table_format", r"hoodie.table.format=iceberg: only Hudi's own format"),
        ("lance", r"hoodie.table.base.file.format=LANCE; the service reads PARQUET, HFILE, ORC"),
        (
            "merge_mode",
            r"hoodie.properties has hoodie.record.merge.mode=LATEST_WINS, which is none of Hudi's",
        ),
        ("garbage_instant", r"20240101000900000\.replacecommit"),
        ("garbage_name", r"20240101000200000\.comit"),
    ],
)
def test_cli_status_bad_tables_fail_with_one_clear_error(
    tmp_path: Path, breakage: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path)
    base = t.base
    if breakage == "not_a_table":
        base = tmp_path / "empty"
        base.mkdir()
    elif breakage == "version":
        _set(t, **{"hoodie.table.version": "7"})
    elif breakage == "layout":
        _set(t, **{"hoodie.table.version": "8"})
    elif breakage == "table_format":
        _set(t, **{"hoodie.table.format": "iceberg"})
    elif breakage == "lance":
        _set(t, **{"hoodie.table.base.file.format": "LANCE"})
    elif breakage == "merge_mode":
        _set(t, **{"hoodie.record.merge.mode": "LATEST_WINS"})
    elif breakage == "garbage_instant":
        # A completed replacecommit: the view reads its replaced file groups (a commit's it does not read).
        (t.base / ".hoodie" / f"{ts(9)}.replacecommit").write_bytes(b"{not json")
    elif breakage == "garbage_name":
        (t.base / ".hoodie" / f"{ts(2)}.comit").write_bytes(b"")
    with caplog.at_level(logging.ERROR):
        assert main(["status", "--base-path", str(base)]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert re.search(message, errors[0]), errors[0]


@pytest.mark.parametrize(
    ("updates", "message"),
    [
        (
            {"hoodie.table.metadata.partitions": "files,partition_stats"},
            r"partition\(s\) partition_stats .*keeps only files, column_stats, bloom_filters, record_index",
        ),
        ({"hoodie.table.metadata.partitions.inflight": "files"}, r"metadata.partitions.inflight=files"),
    ],
)
def test_metadata_partitions_the_service_does_not_sync_refuse_services_not_status(
    tmp_path: Path, updates: dict[str, str], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`status` reads the table (from storage); a clean, which writes the metadata table, is refused."""
    t = _table(tmp_path)
    _set(t, **updates)
    assert main(["status", "--base-path", str(t.base), "--json"]) == 0
    with caplog.at_level(logging.ERROR):
        assert main(["clean", "--base-path", str(t.base)]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert re.search(message, errors[0]), errors[0]


def test_status_and_file_sizes_read_a_partition_at_a_time_as_over_one_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status` and the daemon's file sizes read the table a batch of partitions at a time
    (`HudiTable.iter_views`): with one partition per batch they say what one view of the table says
    (live groups in order, replaced groups, files of a pending write, a pending clustering)."""
    import service.table.table as table_module
    from service.daemon.file_sizes import FileSizes
    from service.table.instant import State
    from service.table.table import HudiTable
    from service.table.timeline import Timeline
    from tests.clean.helpers import fid

    t = FixtureTable(tmp_path / "t")
    t.commit(ts(1), [FileSpec(p, fid(n)) for n, p in enumerate("cab", start=1)])
    t.commit(ts(2), [FileSpec(p, fid(n + 3), size_hint=4096) for n, p in enumerate("abc", start=1)])
    t.replace(ts(3), [FileSpec("c", fid(9))], {"c": [fid(1)]})
    t.pending_clustering(ts(4), [("a", fid(2)), ("a", fid(4))])
    t.commit(ts(5), [FileSpec("b", fid(7))], state=State.INFLIGHT)
    table = HudiTable.open(str(t.base))
    reports, sizes = [], []
    for batch in (table_module.VIEW_BATCH_FILES, 1):
        monkeypatch.setattr(table_module, "VIEW_BATCH_FILES", batch)
        assert main(["status", "--base-path", str(t.base), "--json"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
        timeline: Timeline = table.load_timeline()
        sizes.append(FileSizes.of(table.iter_views(timeline), 1024, ts(5)).to_json())
    assert reports[1] == reports[0]
    assert [g["partition_path"] for g in reports[0]["file_groups"]] == ["a", "a", "b", "b", "c", "c"]
    assert (reports[0]["replaced_file_groups"], reports[0]["uncommitted_files"]) == (1, 1)
    assert len(reports[0]["pending_clustering"]) == 1
    assert sizes[1] == sizes[0] and sizes[0]["files"] == 6
