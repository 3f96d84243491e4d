"""`check` names what holds a table Hudi 0.15 wrote back (`service.blockers`): a writer that failed
mid-commit under LAZY failed-writes cleaning (its heartbeat left to expire), a clustering plan Hudi
scheduled and nobody executes, and a savepoint; each with its age, owner, heartbeat and way out.
The heartbeat window is made short (`hoodie.client.heartbeat.*`) so that instants written seconds ago
count as old. Then our `clean` rolls the failed write back (LAZY), and `check` no longer names it."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from service.cli import main
from tests.support import hudi_tables as ht

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NAME = "blocked"
LAZY = {
    "hoodie.table.services.enabled": "false",
    "hoodie.metadata.enable": "false",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
    # Hudi 0.15 refuses LAZY without a lock provider for several writers; one writer, one process.
    "hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "hoodie.client.heartbeat.interval_in_ms": "1000",
    "hoodie.client.heartbeat.tolerable.misses": "1",
}
SHORT_WINDOW = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000",
                "--hoodie-conf", "hoodie.client.heartbeat.tolerable.misses=1",
                "--hoodie-conf", "hoodie.cleaner.policy.failed.writes=LAZY"]  # fmt: skip


def _blockers(base: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    main(["check", "--base-path", str(base), "--timezone", "UTC", "--json", *SHORT_WINDOW])
    return {b["kind"]: b for b in json.loads(capsys.readouterr().out)["blockers"]}


def test_check_names_a_failed_write_a_stale_clustering_plan_and_a_savepoint(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, fields = tmp_path / NAME, [ht.PARTITION_FIELD]
    write = lambda op, ids, batch: ht.write(  # noqa: E731
        spark, base, ht.generate(spark, ids, batch), op, NAME, partition_fields=fields, extra_opts=LAZY
    )
    write("insert", range(0, 60), 0)
    savepoint = write("upsert", range(0, 60, 3), 1)
    with ht.registered_table(spark, base) as name:
        assert spark.sql(f"CALL create_savepoint(table => '{name}', commit_time => '{savepoint}')").collect()
        [plan] = spark.sql(f"CALL run_clustering(table => '{name}', op => 'schedule')").collect()
    # New keys: the pending plan's file groups take no updates (HoodieClusteringUpdateException).
    failed = ht.write_failing(spark, base, ht.generate(spark, range(1000, 1020), 2), "insert", NAME,
                              partition_fields=fields, extra_opts=LAZY)  # fmt: skip
    time.sleep(3)  # beyond the one-second window: the failed writer's heartbeat has expired
    found = _blockers(base, capsys)
    assert set(found) >= {"pending_write", "pending_clustering", "savepoint"}
    dead = found["pending_write"]
    assert (dead["instant"], dead["owner"], dead["heartbeat"]) == (failed, "a Hudi writer", "expired")
    assert dead["age_seconds"] >= 3 and "LAZY" in dead["way_out"] and "archival" in dead["services"]
    stale = found["pending_clustering"]
    assert (stale["instant"], stale["owner"], stale["heartbeat"]) == (
        plan["timestamp"],
        "a Hudi writer",
        "none",
    )
    assert found["savepoint"]["instant"] == savepoint and "delete_savepoint" in found["savepoint"]["way_out"]
    kept = r"keeps the [1-9]\d* files it references \(in 3 partitions\)"  # what the savepoint retains
    assert re.search(kept, found["savepoint"]["effect"])
    # The way out the check names: our clean rolls the failed write back under LAZY.
    assert main(["clean", "--base-path", str(base), "--timezone", "UTC", *SHORT_WINDOW]) == 0
    assert "pending_write" not in _blockers(base, capsys)
    assert failed not in ht.pending_commit_instants(base)


def test_check_names_compaction_debt_on_a_merge_on_read_table_until_it_is_compacted(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hudi 0.15 writes a merge-on-read table whose writers compact nothing: past twice the trigger
    (`hoodie.compact.inline.max.delta.commits`, 2 here) `check` names the debt from the first delta
    commit since; our `compact` pays it and `check` no longer names it."""
    base, fields = tmp_path / "debt", [ht.PARTITION_FIELD]
    mor = {"hoodie.table.services.enabled": "false", "hoodie.metadata.enable": "false",
           "hoodie.datasource.write.table.type": "MERGE_ON_READ"}  # fmt: skip
    rows = ht.generate(spark, range(0, 30), 0)
    first = ht.write(spark, base, rows, "insert", "debt", partition_fields=fields, extra_opts=mor)
    for batch in range(1, 5):
        ht.write(spark, base, ht.generate(spark, range(0, 30, 2), batch), "upsert", "debt",
                 partition_fields=fields, extra_opts=mor)  # fmt: skip
    trigger = ["--hoodie-conf", "hoodie.compact.inline.max.delta.commits=2"]
    capsys.readouterr()
    main(["check", "--base-path", str(base), "--timezone", "UTC", "--json", *trigger])
    found = {b["kind"]: b for b in json.loads(capsys.readouterr().out)["blockers"]}
    debt = found["compaction_debt"]
    assert debt["instant"] == first and debt["services"] == ["compaction"]
    assert "5 delta commits since it began" in debt["effect"] and "compact" in debt["way_out"]
    # `check` counts each file group's log files from a listing too: the upserts' groups have four.
    assert re.search(
        r"now up to [1-4] log files in one file group, \d+ groups with more than 2", debt["effect"]
    )
    compact = ["compact", "--base-path", str(base), "--timezone", "UTC", "--mode", "scheduleAndExecute"]
    assert main([*compact, *trigger]) == 0
    capsys.readouterr()
    main(["check", "--base-path", str(base), "--timezone", "UTC", "--json", *trigger])
    assert "compaction_debt" not in {b["kind"] for b in json.loads(capsys.readouterr().out)["blockers"]}


def test_check_names_a_write_killed_under_eager_until_the_writers_next_commit_rolls_it_back(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hudi's default EAGER failed-writes policy keeps no heartbeat: a write that failed mid-commit is
    named with heartbeat `none` and the EAGER way out, and Hudi's next write rolls it back."""
    base, fields = tmp_path / "eager", [ht.PARTITION_FIELD]
    eager = {"hoodie.table.services.enabled": "false", "hoodie.metadata.enable": "false"}
    ht.write(spark, base, ht.generate(spark, range(0, 30), 0), "insert", "eager", partition_fields=fields,
             extra_opts=eager)  # fmt: skip
    failed = ht.write_failing(spark, base, ht.generate(spark, range(0, 30, 3), 1), "upsert", "eager",
                              partition_fields=fields, extra_opts=eager)  # fmt: skip
    time.sleep(3)  # older than the one-second window `check` is given
    dead = _blockers(base, capsys)["pending_write"]
    assert (dead["instant"], dead["heartbeat"]) == (failed, "none") and "EAGER" in dead["way_out"]
    ht.write(spark, base, ht.generate(spark, range(0, 30, 5), 2), "upsert", "eager", partition_fields=fields,
             extra_opts=eager)  # fmt: skip
    assert "pending_write" not in _blockers(base, capsys)
    assert failed not in ht.pending_commit_instants(base)


def test_check_names_an_archived_incremental_clean_anchor_until_the_next_clean(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hudi cleans once, then archives past that clean's earliest commit to retain (its archiver
    bounds the window by the cleaner's settings now, not by the last clean): the next incremental
    clean has no anchor and lists every partition. `check` names it; after our clean it is gone."""
    base, fields = tmp_path / "anchor", [ht.PARTITION_FIELD]
    opts = {"hoodie.table.services.enabled": "false", "hoodie.metadata.enable": "false"}

    def upsert(batch: int) -> str:
        rows = ht.generate(spark, range(0, 30, 1 + batch % 3), batch)
        return ht.write(spark, base, rows, "upsert", "anchor", partition_fields=fields, extra_opts=opts)

    for batch in range(3):
        upsert(batch)
    with ht.registered_table(spark, base) as name:
        [cleaned] = spark.sql(f"CALL run_clean(table => '{name}', retain_commits => 1)").collect()
        for batch in range(3, 10):
            upsert(batch)
        args = "min_commits => 2, max_commits => 3, retain_commits => 1"
        spark.sql(f"CALL archive_commits(table => '{name}', {args})").collect()
    anchor = _blockers(base, capsys)["clean_anchor_archived"]
    assert anchor["instant"] == cleaned["start_clean_time"] and anchor["services"] == ["cleaning"]
    assert cleaned["earliest_commit_to_retain"] in anchor["effect"] and "every partition" in anchor["effect"]
    retain_one = "--hoodie-conf=hoodie.cleaner.commits.retained=1"
    assert main(["clean", "--base-path", str(base), "--timezone", "UTC", retain_one]) == 0
    assert "clean_anchor_archived" not in _blockers(base, capsys)
