"""Clustering on a standalone Spark cluster (master + worker on loopback), through the CLI.

Executors run in their own JVMs and Python workers in the worker's directories, so this proves the
group jobs ship everything they need (no driver state, storage opened from the base URI, local
scratch on the executor) and that the result reads the same through Hudi and hudi-rs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bench.standalone import standalone_cluster
from service.executor.clustering_job import compressed_data_bytes
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support import hudi_tables as ht

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


def _rows(rows: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return sorted(tuple(str(r.get(k)) for k in sorted(r) if k != "_hoodie_file_name") for r in rows)


def test_cli_clusters_on_a_standalone_cluster_with_two_writer_tasks(spark: Any, tmp_path: Path) -> None:
    base = tmp_path / "standalone"
    for batch in range(2):
        ids = range(batch * 100_000, (batch + 1) * 100_000)
        ht.write(spark, base, ht.generate(spark, ids, batch=batch), "insert", "standalone")
    before = (_rows(ht.read_snapshot(spark, base)), _rows(ht.hudi_rs_snapshot(base).to_pylist()))
    data_bytes = sum(compressed_data_bytes(pq.read_metadata(p)) for p in base.rglob("*.parquet"))
    target = data_bytes // 20  # two writer tasks of >= 8 files' worth each

    with standalone_cluster(tmp_path / "spark-cluster", cores=2) as cluster:
        command = [
            sys.executable, "-m", "service.cli", "--log-level", "WARNING", "cluster",
            "--base-path", str(base), "--mode", "scheduleAndExecute",
            "--spark-master", cluster.master_url,
            "--spark-conf", "spark.executor.memory=1g",
            "--spark-conf", f"spark.local.dir={tmp_path / 'driver-scratch'}",
            "--hoodie-conf", f"hoodie.clustering.plan.strategy.target.file.max.bytes={target}",
            "--hoodie-conf", "hoodie.clustering.plan.strategy.sort.columns=qty,id",
            "--hoodie-conf", "hoodie.bloom.index.filter.type=SIMPLE",
            "--hoodie-conf", "hoodie.index.bloom.num_entries=2000",
        ]  # fmt: skip
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        # The work ran in the worker's executors, not in a local driver.
        assert list((tmp_path / "spark-cluster" / "work").glob("app-*/*/stderr"))

    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    replaces = [i for i in timeline.instants if i.action is Action.REPLACE_COMMIT]
    assert [i.state for i in replaces] == [State.COMPLETED]
    assert (_rows(ht.read_snapshot(spark, base)), _rows(ht.hudi_rs_snapshot(base).to_pylist())) == before
    written = [p for p in base.rglob(f"*_{replaces[0].timestamp}.parquet")]
    tokens = {p.name.split("_")[1].split("-")[0] for p in written}
    assert len(tokens) == 2, sorted(p.name for p in written)
    sizes = sorted(p.stat().st_size for p in written)
    assert sizes[-1] <= target and sum(s < 0.8 * target for s in sizes) <= 1, sizes
