"""The README's main job: the daemon beside Hudi's writer, sharing a real ZooKeeper lock."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from service.demo.live import add_demo_arguments, run_demo
from service.table.instant import Action
from service.table.mdt.timeline import load_mdt_timeline
from service.table.table import HudiTable
from tests.support.ports import free_port

# Each run: the demo's duration below, Hudi's writer and the daemon starting, the final reads.
pytestmark = [
    pytest.mark.spark,
    pytest.mark.hudi,
    pytest.mark.zk,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]


# Merge-on-read runs longer: the writer's updates wait (Hudi rejects updates to groups under a pending
# clustering) while the clustering merges log files.
_DURATION = {"COPY_ON_WRITE": "45", "MERGE_ON_READ": "75"}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_live_demo_clusters_cleans_and_keeps_every_order(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], table_type: str
) -> None:
    parser = argparse.ArgumentParser()
    add_demo_arguments(parser)
    args = parser.parse_args(
        ["--work-dir", str(tmp_path), "--duration", _DURATION[table_type], "--batch-interval", "1",
         "--rows-per-batch", "200", "--metrics-port", str(free_port()), "--table-type", table_type]
    )  # fmt: skip
    assert run_demo(args) == 0  # the demo's own check: Hudi reads every order once, latest value
    out = capsys.readouterr().out
    assert "(Hudi's reader, metadata table): " in out
    assert "(Hudi's reader, storage listing): " in out
    assert "MISMATCH" not in out
    assert "every order exactly once with its latest value" in out
    assert "verify (metadata table vs storage listing): the same rows from the same files" in out
    [table_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    table = HudiTable.open(str(table_dir))
    assert table.config.table_type.name == table_type
    # Hudi's defaults: the writer built the metadata table with its files partition only.
    assert table.config.metadata_partitions == ["files"]
    # What the daemon did, as the demo reported it while running: Hudi's writer archives early instants
    # (hoodie.keep.max.commits), so the active timeline at the end no longer shows them all.
    assert "daemon: clustering committed at" in out, "the daemon clustered"
    timeline = table.load_timeline().completed()
    ours = [i for i in timeline if i.action in (Action.REPLACE_COMMIT, Action.CLEAN)]
    if table_type == "COPY_ON_WRITE":
        # On merge-on-read a clean needs 3 deltacommits after the first clustering, which a loaded
        # machine does not always reach in the run; MOR cleaning is proven in tests/clean.
        assert "daemon: clean completed at" in out, "the daemon cleaned"
    if table_type == "MERGE_ON_READ":
        assert any(i.action is Action.DELTA_COMMIT for i in timeline), "Hudi wrote deltacommits"
        # Batch 1 updates half of batch 0's orders into log files: the daemon's clustering (after 4
        # commits) or its compaction (Hudi's trigger: 5 deltacommits), whichever comes first, merges them.
        # (As the demo reported each clustering: Hudi's writer may have archived the first ones since.)
        reported = re.findall(r"clustering committed at \d+ \(\d+ file slices, (\d+) with log", out)
        merged = [int(n) for n in reported]
        compacted = "daemon: compaction committed at" in out
        assert any(merged) or compacted, "the daemon merged the writer's log files (clustering or compaction)"
        ours += [i for i in timeline if i.action is Action.COMMIT]
    # Every instant the daemon completed was mirrored into the MDT as a deltacommit of the same time.
    mdt_done = {i.timestamp for i in load_mdt_timeline(table.storage).completed()}
    assert {i.timestamp for i in ours} <= mdt_done
