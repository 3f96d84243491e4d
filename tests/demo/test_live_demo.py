"""The README's main job: the daemon beside Hudi's writer, sharing a real ZooKeeper lock."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from service.demo.live import add_demo_arguments, run_demo
from service.table.instant import Action
from service.table.mdt.timeline import load_mdt_timeline
from service.table.table import HudiTable
from tests.support.paths import REPO_ROOT
from tests.support.ports import free_port

# Each run: the demo's duration below, Hudi's writer and the daemon starting, the final reads.
pytestmark = [
    pytest.mark.spark,
    pytest.mark.hudi,
    pytest.mark.zk,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]


# Every batch after the first updates the previous batch's orders, so a batch Hudi rejects (an update
# to a file group under pending clustering) waits for the clustering; a clean needs a clustering and 3
# more commits. Merge-on-read runs longer: its clusterings merge log files, and two must commit. The
# demo stops as soon as it has shown that (`--until-serviced`); the duration is its limit.
_DURATION = "150"


# CI: copy-on-write; merge-on-read and Hudi 1.1's writer with HTS_LONG_TESTS=1.
@pytest.mark.long(table_type="MERGE_ON_READ")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_live_demo_clusters_cleans_and_keeps_every_order(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], table_type: str
) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)
    args = parser.parse_args(
        ["--work-dir", str(tmp_path), "--duration", _DURATION, "--until-serviced", "--batch-interval", "2",
         "--rows-per-batch", "200", "--metrics-port", str(free_port()), "--table-type", table_type]
    )  # fmt: skip
    assert run_demo(args) == 0  # the demo's own check: Hudi reads every order once, latest value
    out = capsys.readouterr().out
    assert "(Hudi's reader, metadata table): " in out
    assert "(Hudi's reader, storage listing): " in out
    assert "MISMATCH" not in out
    assert "every order exactly once with its latest value" in out
    assert "verify (metadata table vs storage listing): the same rows from the same files" in out
    # The last line: the rows written, how many updated an order, every order at its latest value.
    verified = r"verify: (\d+) rows written in (\d+) batches, (\d+) of them updates, (\d+) orders: (.*)$"
    last = re.search(verified, out, re.MULTILINE)
    assert last is not None, out
    rows, batches, updates, orders = (int(n) for n in last.groups()[:4])
    assert last.group(5) == "every order holds its latest value, read both ways"
    assert batches >= 2 and rows == batches * 200
    assert updates == (batches - 1) * 100 and orders == rows - updates  # half of every later batch
    [table_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    table = HudiTable.open(str(table_dir))
    assert table.config.table_type.name == table_type
    # Hudi's defaults: the writer built the metadata table with its files partition only.
    assert table.config.metadata_partitions == ["files"]
    # What the daemon did, as the demo reported it while running: the daemon archives early instants
    # (hoodie.keep.max.commits), so the active timeline at the end no longer shows them all.
    assert "daemon: clustering committed at" in out, "the daemon clustered"
    assert "the daemon has clustered, cleaned and archived the table: stopping" in out
    assert "  daemon: archived (active timeline: " in out
    assert re.search(r"verify \(archival\): .*: within hoodie.keep.max.commits=6", out), out
    timeline = table.load_timeline().completed()
    ours = [i for i in timeline if i.action in (Action.REPLACE_COMMIT, Action.CLEAN)]
    # A clean needs 3 commits after the first clustering, and the writer's attempts Hudi rejected
    # meanwhile rolled back (their heartbeats expire 10 s after they stop).
    assert "daemon: clean completed at" in out, "the daemon cleaned"
    if table_type == "MERGE_ON_READ":
        assert any(i.action is Action.DELTA_COMMIT for i in timeline), "Hudi wrote deltacommits"
        # Every batch after the first updates half of the previous batch's orders, so their updates
        # keep landing in log files: the daemon's clusterings (as the demo reported each one: Hudi's
        # writer may have archived the first ones since) merged slices with log files, more than once.
        reported = re.findall(r"clustering committed at \d+ \(\d+ file slices, (\d+) with log files", out)
        merged = [int(n) for n in reported]
        assert sum(1 for n in merged if n > 0) >= 2, f"clusterings merging log files: {merged}"
        ours += [i for i in timeline if i.action is Action.COMMIT]
    # Every instant the daemon completed was mirrored into the MDT as a deltacommit of the same time.
    mdt_done = {i.timestamp for i in load_mdt_timeline(table.storage).completed()}
    assert {i.timestamp for i in ours} <= mdt_done


@pytest.mark.long
def test_live_demo_with_hudi_1_1s_writer_keeps_every_order_on_a_version_9_table(tmp_path: Path) -> None:
    """`./run demo --hudi 1.1`: Hudi 1.1.1's writer (its own process: one bundle per JVM) creates a
    version-9 table with its defaults and the record index, which it uses to locate the orders it
    updates; the daemon clusters and cleans beside it and every order is read once, at its latest."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    argv = [sys.executable, "-m", "service.cli", "--log-level", "WARNING", "demo", "--hudi", "1.1",
            "--work-dir", str(tmp_path), "--duration", _DURATION, "--until-serviced", "--batch-interval",
            "2", "--rows-per-batch", "200", "--metrics-port", str(free_port())]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, timeout=900, check=False)
    out = done.stdout.decode()
    assert done.returncode == 0, out[-3000:] + done.stderr.decode()[-3000:]
    assert "Hudi 1.1.1's writer" in out and "MISMATCH" not in out
    assert "daemon: clustering committed at" in out and "daemon: clean completed at" in out
    assert "daemon: archived (active timeline: " in out and "verify (archival): " in out
    assert re.search(r"verify: \d+ rows written in \d+ batches.*every order holds its latest value", out)
    [table_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    table = HudiTable.open(str(table_dir))
    assert table.config.version == 9
    assert {"files", "column_stats", "partition_stats", "record_index"} <= set(
        table.config.metadata_partitions
    )
