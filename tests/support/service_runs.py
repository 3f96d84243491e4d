"""Our clustering and compaction run in the test process, in the test session's shared SparkSession:
clustering scheduled, then executed, as the daemon runs it (an in-process lock stands in for
ZooKeeper's); compaction through its command."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.table import HudiTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Every file of the small test tables is a small file to cluster.
SMALL_FILES = "hoodie.clustering.plan.strategy.small.file.limit=100000000"


def _config(table: HudiTable, **extra: str) -> HoodieConfig:
    key, value = SMALL_FILES.split("=")
    return HoodieConfig.from_mapping({key: value, **extra}, table.name)


def schedule_our_clustering(base: Path) -> str:
    """Our clustering plan, scheduled in this process; its instant."""
    table = HudiTable.open(str(base))
    lock = InProcessTableLock(table.name, key=str(base))
    outcome = schedule_clustering(table, _config(table), lock, now=datetime.now(UTC), zone=UTC)
    assert outcome.instant_time is not None, outcome.reason
    return outcome.instant_time


def execute_our_clustering(spark: SparkSession, base: Path, instant: str, **extra: str) -> bool:
    """Our execution of pending clustering `instant`, in this process's Spark session; committed?"""
    table = HudiTable.open(str(base))
    lock = InProcessTableLock(table.name, key=str(base))
    executor = SparkExecutor(session=spark)
    return execute_clustering(
        table, instant, _config(table, **extra), executor.run_group, lock, zone=UTC
    ).committed


def compact_with_cli(
    base: Path, mode: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    """`compact --mode <mode> --json` in this process (the test session's SparkSession), every log
    file a trigger (`max.delta.commits=1`); its JSON reply."""
    capsys.readouterr()
    args = ["compact", "--base-path", str(base), "--mode", mode, "--timezone", "UTC", "--json"]
    code = main([*args, "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    reply: dict[str, Any] = json.loads(out)
    return reply
