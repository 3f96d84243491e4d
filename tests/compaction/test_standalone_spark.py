"""Compaction on a standalone Spark cluster (master + worker on loopback), through the CLI.

The plan's operations are Spark tasks on the worker's executors (their own JVMs and Python workers),
so this proves a `CompactionJob` ships everything its tasks need (no driver state, storage opened
from the base URI) and that Hudi's snapshot and read-optimized reads, and hudi-rs, agree after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bench.standalone import standalone_cluster
from service.table import codecs
from tests.support import hudi_tables as ht
from tests.support.mor_tables import MorHistoryCache, compacted_snapshot, mor_histories

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# A long variant: CI runs the standalone cluster with clustering (tests/clustering/test_standalone_spark.py).
pytestmark = [pytest.mark.long, pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

__all__ = ["mor_histories"]


def _read(spark: SparkSession, base: Path, query_type: str = "snapshot") -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base, query_type))


def test_cli_compacts_on_a_standalone_cluster(
    spark: SparkSession, mor_histories: MorHistoryCache, tmp_path: Path
) -> None:
    base = tmp_path / "table"
    history = mor_histories.get("mor_partitioned_avro")
    shutil.copytree(history.base_path, base, symlinks=True)
    compacted = compacted_snapshot(
        history, _read(spark, base), ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist())
    )

    with standalone_cluster(tmp_path / "spark-cluster", cores=2) as cluster:
        command = [
            sys.executable, "-m", "service.cli", "--log-level", "WARNING", "compact",
            "--base-path", str(base), "--mode", "scheduleAndExecute",
            "--spark-master", cluster.master_url,
            "--spark-conf", "spark.executor.memory=1g",
            "--spark-conf", f"spark.local.dir={tmp_path / 'driver-scratch'}",
            "--hoodie-conf", "hoodie.compact.inline.max.delta.commits=1",
        ]  # fmt: skip
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "committed" in done.stdout, done.stdout
        # The operations ran in the worker's executors, not in a local driver.
        assert list((tmp_path / "spark-cluster" / "work").glob("app-*/*/stderr"))

    [commit] = list((base / ".hoodie").glob("*.commit"))
    metadata = codecs.decode(codecs.CommitMetadata, commit.read_bytes(), str(commit))
    assert metadata.compacted and len(metadata.write_stats) > 1
    # One task per operation: each file carries its own task's token (partition-stage-attempt).
    tokens = {s.path.rsplit("/", 1)[-1].split("_")[1] for s in metadata.write_stats if s.path}
    assert len(tokens) == len(metadata.write_stats), tokens
    assert _read(spark, base) == compacted
    assert _read(spark, base, "read_optimized") == compacted
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == compacted
