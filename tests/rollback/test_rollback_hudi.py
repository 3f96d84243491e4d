"""Our rollbacks against real Hudi 0.15: its deserializers, its timeline, its writers and readers."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, tzinfo
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from service.clustering.records import requested_metadata
from service.config.hoodie import HoodieConfig
from service.lock import InProcessTableLock
from service.rollback import rollback_instant
from service.table import codecs
from service.table.data_files import base_file_name
from service.table.instant import Action, Instant, State
from service.table.markers import create_marker, list_markers, marker_dir_exists
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, next_instant_time
from strategies.clustering import plan_clustering
from tests.rollback.scenarios import RecordingLock, T, pending_clustering_scenario
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.jvm import run_java

CONFIG = {
    "hoodie.clustering.plan.strategy.max.bytes.per.group": "1000000",
    "hoodie.clustering.plan.strategy.target.file.max.bytes": "500000",
}


def _local_zone() -> tzinfo:
    """The zone of this machine: the JVM's default zone, which the harness's Hudi writers use."""
    zone = datetime.now().astimezone().tzinfo
    assert zone is not None
    return zone


def _lock(h: HudiHistory) -> InProcessTableLock:
    return InProcessTableLock(h.table_name, key=str(h.base_path), default_timeout_s=10)


@pytest.mark.hudi
def test_hudi_deserializes_our_rollback_plan_and_metadata(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    outcome = rollback_instant(
        s.table, T, RecordingLock(s.base), now=datetime(2024, 1, 1, 12, tzinfo=UTC), tz=UTC
    )
    r = outcome.rollback_time
    work = tmp_path / "decode"
    work.mkdir()
    meta = s.base / ".hoodie"
    shutil.copy(meta / f"{r}.rollback.requested", work / "1.HoodieRollbackPlan.bin")
    shutil.copy(meta / f"{r}.rollback", work / "2.HoodieRollbackMetadata.bin")
    run_java("HudiTimelineDecode", "decode", str(work))
    assert not list(work.glob("*.err")), [p.read_text() for p in work.glob("*.err")]
    plan = (work / "1.HoodieRollbackPlan.out").read_text()
    assert f'"instantToRollback": {{"commitTime": "{T}", "action": "replacecommit"}}' in plan
    assert s.table.storage.qualify(s.outputs[0]) in plan
    metadata = (work / "2.HoodieRollbackMetadata.out").read_text()
    assert '"totalFilesDeleted": 2' in metadata
    assert f'"commitsRollback": ["{T}"]' in metadata


def _pending_clustering_with_outputs(h: HudiHistory) -> tuple[HudiTable, str, list[str]]:
    """Schedule our plan on a Hudi table, mark it inflight and leave partial output files with markers,
    as a crashed execution would; returns (table, instant, output files)."""
    table = HudiTable.open(str(h.base_path))
    timeline = table.load_timeline()
    config = HoodieConfig.from_mapping(CONFIG, h.table_name).clustering
    outcome = plan_clustering(table.load_view(timeline), config, datetime.now(UTC))
    assert outcome.plan is not None
    instant_time = next_instant_time(timeline, datetime.now(_local_zone()), _local_zone())
    with _lock(h):
        create_instant_file(
            table.storage,
            table.layout,
            Instant(instant_time, Action.REPLACE_COMMIT, State.REQUESTED),
            codecs.encode(requested_metadata(outcome.plan, table.storage)),
        )
    create_instant_file(
        table.storage, table.layout, Instant(instant_time, Action.REPLACE_COMMIT, State.INFLIGHT)
    )
    outputs = []
    for i, group in enumerate(outcome.plan.groups):
        source = group.slices[0].base_file_path
        name = base_file_name(f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd-0", f"{i}-0-0", instant_time)
        out = f"{group.partition_path}/{name}"
        create_marker(table.storage, instant_time, out)
        shutil.copy(h.base_path / source, h.base_path / out)
        outputs.append(out)
    return table, instant_time, outputs


@pytest.mark.hudi
@pytest.mark.spark
@pytest.mark.slow
def test_hudi_accepts_our_rollback_of_pending_clustering(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    h = history_many_commits
    table, instant_time, outputs = _pending_clustering_with_outputs(h)
    assert len(table.load_view().uncommitted_files) == len(outputs)

    outcome = rollback_instant(
        table, instant_time, _lock(h), now=datetime.now(_local_zone()), tz=_local_zone()
    )

    assert not any((h.base_path / p).exists() for p in outputs)
    assert outcome.metadata is not None and outcome.metadata.total_files_deleted == len(outputs)
    assert not [n for n in ht.timeline_files(h.base_path) if n.startswith(instant_time)]
    # Readers are unchanged, and Hudi's timeline takes our rollback: it lists it, and a write succeeds.
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == h.expected_rows()
    with ht.registered_table(spark, h.base_path) as name:
        shown = spark.sql(f"CALL show_rollbacks(table => '{name}')").collect()
    assert [(r["instant"], r["rollback_instant"]) for r in shown] == [(outcome.rollback_time, instant_time)]
    write_time = h.write(spark, ht.generate(spark, range(0, 10), batch=7), "upsert")
    assert write_time > (outcome.rollback_time or "")
    expected = {**dict(h.latest_batch), **dict.fromkeys(range(0, 10), 7)}
    rows = [ht.expected_row(i, b) for i, b in sorted(expected.items())]
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == rows
    assert ht.normalise_rows(ht.hudi_rs_snapshot(h.base_path).to_pylist()) == rows
    # The file groups are free again: Hudi's own planner takes them.
    options = ",".join(f"{k}={v}" for k, v in CONFIG.items())
    scheduled = spark.sql(
        f"CALL run_clustering(path => '{h.base_path}', op => 'schedule', options => '{options}')"
    )
    assert scheduled.collect()[0]["state"] == "REQUESTED"


@pytest.mark.hudi
@pytest.mark.spark
@pytest.mark.slow
def test_we_roll_back_a_failed_hudi_write_with_timeline_server_markers(
    spark: SparkSession, history_many_commits: HudiHistory
) -> None:
    h = history_many_commits
    failed = ht.write_failing(
        spark, h.base_path, ht.generate(spark, range(0, 30), batch=9), "upsert", h.table_name,
        partition_fields=h.partition_fields,
    )  # fmt: skip
    table = HudiTable.open(str(h.base_path))
    markers = list_markers(table.storage, failed)
    assert markers and {m.io_type.value for m in markers} == {"MERGE"}
    written = {m.data_file_path for m in markers}
    assert all((h.base_path / p).exists() for p in written)

    outcome = rollback_instant(table, failed, _lock(h), now=datetime.now(_local_zone()), tz=_local_zone())

    assert outcome.metadata is not None
    assert {table.storage.relativize(f) for f in outcome.deleted_files} == written
    assert not any((h.base_path / p).exists() for p in written)
    assert not marker_dir_exists(table.storage, failed)
    assert table.load_view().uncommitted_files == ()
    assert ht.pending_commit_instants(h.base_path) == []
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == h.expected_rows()
    h.write(spark, ht.generate(spark, range(100, 110), batch=8), "upsert")
    expected = {**dict(h.latest_batch), **dict.fromkeys(range(100, 110), 8)}
    assert ht.normalise_rows(ht.read_snapshot(spark, h.base_path)) == [
        ht.expected_row(i, b) for i, b in sorted(expected.items())
    ]
