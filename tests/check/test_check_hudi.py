"""`check` on tables real Hudi 0.15 wrote, compared with what the services then do on copies of them:
the files a clean deletes, the groups a clustering plan holds, the slices a compaction plan holds;
and its refusals (a LOCAL timeline on a machine naming no zone, a metadata-table partition we do not
serve, a compaction strategy we do not plan) with the setting that lifts each."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from service import command_context
from service.check import TABLE_FIX
from service.cli import main
from service.clustering.preflight import INDEX_FIX
from service.table.properties import PROPERTIES_FILE, TableConfig, load_table_config
from service.table.storage import Storage
from tests.faults.matrix import TableType
from tests.faults.tables import FaultTables
from tests.support import hudi_tables as ht
from tests.support.histories import HistoryCache
from tests.support.mdt_histories import MdtHistory

pytestmark = [pytest.mark.spark, pytest.mark.hudi]

# What every run here uses: one commit retained (a clean deletes), clustering due after one commit.
SETTINGS = ("hoodie.cleaner.commits.retained=1", "hoodie.clustering.async.max.commits=1",
            "hoodie.compact.inline.max.delta.commits=1")  # fmt: skip
CONF = [a for setting in SETTINGS for a in ("--hoodie-conf", setting)]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def table_of(
    hudi_histories: HistoryCache, mdt_history_built: MdtHistory, fault_tables: FaultTables, tmp_path: Path
) -> Callable[[str, str], Path]:
    """A fresh copy of the named table for each use (each service changes its copy)."""

    def copy(name: str, use: str) -> Path:
        if name == "mor_mdt_indexes":  # merge-on-read, metadata table with files, column_stats, bloom
            source = fault_tables.get(TableType.MOR).base.base_path
            return Path(shutil.copytree(source, tmp_path / use / name))
        history = mdt_history_built.history if name == "mdt_files" else hudi_histories.get(name)
        source = history.base_path
        return Path(shutil.copytree(source, tmp_path / use / name))

    return copy


MERGE_ON_READ = ("merge_on_read", "mor_mdt_indexes")


# Copy-on-write without and with the metadata table, merge-on-read without and with it (and indexes).
@pytest.mark.parametrize("name", ["many_commits", "mdt_files", "merge_on_read", "mor_mdt_indexes"])
def test_check_says_what_each_service_then_does(
    name: str, table_of: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    checked = table_of(name, "check")
    code, report = _run(capsys, "check", "--base-path", str(checked), *CONF)
    assert code == 0, report
    props = load_table_config(Storage.for_base_uri(str(checked))).raw
    assert report["table"]["type"] == props["hoodie.table.type"] and report["table"]["table_version"] == 6
    assert report["table"]["timeline_timezone"] == "LOCAL"  # Hudi's default
    assert report["zone"]["in_force"] and "this machine's zone" in report["zone"]["from"]
    listed = [p for p in props.get("hoodie.table.metadata.partitions", "").split(",") if p]
    assert report["metadata_table"]["partitions"] == listed
    services = report["services"]

    cleaned = table_of(name, "clean")
    code, clean = _run(capsys, "clean", "--base-path", str(cleaned), *CONF)
    deleted = sum(c["files_deleted"] + c["files_already_gone"] for c in clean["cleans"])
    assert code == 0 and deleted == services["cleaning"]["next"]["files_to_delete"]
    assert deleted > 0 or name in MERGE_ON_READ  # upserts appended logs: maybe no older slice to clean

    clustered = table_of(name, "cluster")
    code, cluster = _run(capsys, "cluster", "--base-path", str(clustered), "--mode", "schedule", *CONF)
    assert code == 0 and cluster["plan"]["written"]
    assert services["clustering"]["trigger"]["due"] is True
    assert len(cluster["plan"]["groups"]) == services["clustering"]["next"]["groups"] > 0
    assert cluster["plan"]["input_file_slices"] == services["clustering"]["next"]["input_files"]
    # The plan just written is pending: check names who scheduled it (our mark) and its attempts.
    _, after = _run(capsys, "check", "--base-path", str(clustered), *CONF)
    [pending] = [p for p in after["pending"] if p["instant"] == cluster["plan"]["instant_time"]]
    assert pending["owner"] == "hudi-table-service" and pending["failed_attempts"] == 0

    if name in MERGE_ON_READ:
        compacted = table_of(name, "compact")
        code, compact = _run(capsys, "compact", "--base-path", str(compacted), "--mode", "schedule", *CONF)
        assert code == 0 and services["compaction"]["trigger"]["due"] is True
        assert len(compact["operations"]) == services["compaction"]["next"]["operations"] > 0
    else:
        assert services["compaction"]["enabled"] is False


def test_a_local_table_on_a_machine_naming_no_zone_is_refused_until_timezone_is_given(
    table_of: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = str(table_of("many_commits", "check"))
    monkeypatch.setattr(command_context, "machine_zone", lambda: None)
    code, report = _run(capsys, "check", "--base-path", base, *CONF)
    assert code == 2
    for service in ("clustering", "cleaning"):
        refused = report["services"][service]
        assert not refused["runnable"] and refused["fix"] == "--timezone"
        assert "hoodie.table.timeline.timezone=LOCAL" in refused["refusal"]
    code, report = _run(capsys, "check", "--base-path", base, "--timezone", "Asia/Kolkata", *CONF)
    assert code == 0 and report["zone"] == {"in_force": "Asia/Kolkata", "from": "--timezone Asia/Kolkata"}


def test_a_metadata_partition_we_do_not_serve_is_refused_naming_the_table_change(
    table_of: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = table_of("mdt_files", "check")
    storage = Storage.for_base_uri(str(base))
    raw = {k: v for k, v in load_table_config(storage).raw.items() if k != "hoodie.table.checksum"}
    raw["hoodie.table.metadata.partitions"] = "files,expr_index_price"  # an expression index
    storage.write_bytes(PROPERTIES_FILE, TableConfig(raw).to_text().encode("latin-1"))
    code, report = _run(capsys, "check", "--base-path", str(base), *CONF)
    assert code == 2
    assert report["metadata_table"]["served"] == ["files"]
    refused = report["services"]["cleaning"]
    assert (
        not refused["runnable"] and "expr_index_price" in refused["refusal"] and refused["fix"] == TABLE_FIX
    )


def test_check_as_the_daemon_would_serve_an_entry(
    table_of: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = table_of("merge_on_read", "check")
    config = tmp_path / "daemon.yaml"
    config.write_text(f"""
daemon:
  timezone: Asia/Tokyo
tables:
  - name: orders
    base_path: {base}
    clustering: {{enabled: false}}
    hoodie:
      hoodie.cleaner.commits.retained: 1
      hoodie.compaction.strategy: org.apache.hudi.table.action.compact.strategy.DayBasedCompactionStrategy
""")
    code, report = _run(capsys, "check", "--config", str(config), "--table", "orders")
    assert code == 2
    assert report["zone"] == {"in_force": "Asia/Tokyo", "from": "daemon.timezone: Asia/Tokyo"}
    services = report["services"]
    assert services["clustering"]["enabled"] is False
    assert services["cleaning"]["runnable"] and services["cleaning"]["trigger"]["threshold"] == 1
    compaction = services["compaction"]
    assert not compaction["runnable"] and compaction["fix"] == "hoodie.compaction.strategy"
    assert "DayBasedCompactionStrategy" in compaction["refusal"]
    with pytest.raises(SystemExit):
        main(["check", "--config", str(config), "--table"])
    assert main(["check", "--config", str(config), "--table", "nope"]) == 1


def test_a_writers_index_a_clustering_would_leave_stale_refuses_clustering_only(
    table_of: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base = table_of("many_commits", "check")
    hbase = ("--hoodie-conf", "hoodie.index.type=HBASE")
    code, report = _run(capsys, "check", "--base-path", str(base), *CONF, *hbase)
    assert code == 2
    assert report["index"] == {
        "type": "HBASE", "setting": "hoodie.index.type", "clustering_keeps_it_current": False
    }  # fmt: skip
    clustering = report["services"]["clustering"]
    assert not clustering["runnable"] and "hoodie.index.type=HBASE" in clustering["refusal"]
    assert clustering["fix"] == INDEX_FIX
    assert report["services"]["cleaning"]["runnable"]
    timeline = sorted(p.name for p in (base / ".hoodie").iterdir())
    capsys.readouterr()
    assert main(["cluster", "--base-path", str(base), "--mode", "scheduleAndExecute", *CONF, *hbase]) == 1
    assert sorted(p.name for p in (base / ".hoodie").iterdir()) == timeline  # nothing planned


def test_check_of_a_table_without_meta_fields_says_its_keys_and_plans_as_clustering_does(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Virtual keys (`hoodie.populate.meta.fields=false`, Hudi 0.15's writer with its SIMPLE index)."""
    base = tmp_path / "virtual"
    opts = {"hoodie.populate.meta.fields": "false", "hoodie.index.type": "SIMPLE"}
    for start in range(0, 60, 20):  # three commits of small files in each partition
        ht.write(
            spark, base, ht.generate(spark, range(start, start + 20)), "insert",
            partition_fields=["region"], extra_opts=opts,
        )  # fmt: skip
    code, report = _run(capsys, "check", "--base-path", str(base), *CONF)
    assert code == 0
    assert report["keys"] == {
        "meta_fields": False, "record_key_fields": "id",
        "key_generator": "org.apache.hudi.keygen.SimpleKeyGenerator",
    }  # fmt: skip
    planned = report["services"]["clustering"]["next"]
    code, cluster = _run(capsys, "cluster", "--base-path", str(base), "--mode", "schedule", *CONF)
    assert code == 0 and cluster["plan"]["written"]
    assert len(cluster["plan"]["groups"]) == planned["groups"] == 3  # a group per partition
    assert cluster["plan"]["input_file_slices"] == planned["input_files"] == 9
