"""The object-store benchmark at its small size, in its own process (its JVM needs hadoop-aws and the
AWS SDK on the classpath, which the session's SparkSession lacks): both contenders run on moto through
the counting proxy, Hudi reads both clusterings back, both cleans leave the same files, and an idle
daemon tick writes and deletes nothing (no timings asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hudi_s3 import Options
from bench.s3_proxy import KINDS
from tests.support.paths import REPO_ROOT

# pytest-timeout above the benchmark process's own 1800 s limit, so that limit reports first.
# A long variant (CI's budget): the product's S3 behaviour is tested in tests/clean/test_s3_requests.py
# and tests/faults/test_storage_faults.py; this checks the benchmark's request counting.
pytestmark = [
    pytest.mark.long,
    pytest.mark.spark,
    pytest.mark.hudi,
    pytest.mark.slow,
    pytest.mark.timeout(2400),
]


def test_hudi_s3_bench_counts_both_contenders_requests(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
    }
    command = [
        sys.executable,
        "-m",
        "bench",
        "hudi-s3",
        "--work-dir",
        str(tmp_path),
        "--results-dir",
        str(tmp_path),
    ]
    done = subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    document = json.loads((tmp_path / "hudi-s3.json").read_text(encoding="utf-8"))
    rows = Options().rows
    for name in ("hudi", "ours"):
        run = document["clustering"][name]
        assert set(run["requests"]) == set(KINDS)
        assert run["rows_read_by_hudi"] == rows, name
        assert run["requests"]["PUT"] > 0 and run["requests"]["LIST"] > 0, name
    cleaning = document["cleaning"]
    assert cleaning["same_files_left"]
    planning = cleaning["ours_planning_only"]["requests"]
    assert planning["PUT"] == planning["DELETE"] == planning["POST"] == 0  # a dry run writes nothing
    # Incremental planning lists the partitions of the commits since the last clean, no others.
    window = cleaning["partitions_in_incremental_window"]
    assert cleaning["ours_planning_only"]["partitions_listed"] == window < cleaning["partitions"]
    assert cleaning["ours"]["partitions_listed"] == window
    assert cleaning["hudi"]["files_deleted"] == cleaning["ours"]["files_deleted"] > 0
    assert cleaning["hudi"]["requests"]["DELETE"] > 0 and cleaning["ours"]["requests"]["DELETE"] > 0
    ticks = document["idle_daemon_ticks"]
    assert set(ticks) == {"cleaning_cold", "cleaning_warm", "clustering_cold", "clustering_warm"}
    for key, tick in ticks.items():
        assert tick["outcome"] == "done", key
        assert tick["requests"]["PUT"] == tick["requests"]["DELETE"] == tick["requests"]["POST"] == 0, key
        assert tick["requests"]["LIST"] >= 1, key  # every tick looks at the timeline
