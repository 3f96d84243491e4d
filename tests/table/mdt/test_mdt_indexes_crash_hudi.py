"""SIGKILL at each step of completing our clustering on a table with `column_stats` and `bloom_filters`.

Our clustering completes Tc under one lock hold: the MDT deltacommit Tc (requested, inflight, a log
file of `files-0000-0`, one per receiving file group of `column_stats` and `bloom_filters`, the
completed deltacommit), then `Tc.replacecommit`. A process killed right after each of those files was
created must leave Hudi's readers unaffected (MDT-on = MDT-off = the rows before; Hudi's MDT reader
still serves every live file's footer stats); the next run takes the dead attempt over (its heartbeat
expired), rolls it back (Tc's blocks leave every MDT partition) and completes Tc, after which the
listings agree, Hudi reads our new files' stats, and no block of the dead attempt is left.
"""

from __future__ import annotations

import json
import time
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from service.clustering import execute_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.table.mdt.files_listing import parse_log_file_name
from service.table.mdt.log_blocks import read_log_blocks
from service.table.mdt.timeline import MDT_BASE
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.crash_at import run_killed_at
from tests.support.histories import HudiHistory
from tests.table.mdt.test_mdt_indexes_write_hudi import assert_hudi_reads_footer_stats
from tests.table.mdt.test_mdt_write_hudi import _our_mdt_deltacommit, _rows, assert_mdt_agrees

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "1000"}  # x 2 misses: expired after 2 s
SORT = {"hoodie.clustering.plan.strategy.sort.columns": "id"}
# The index partitions' steps (a kill after the `files` log file is test_mdt_crash_hudi.py's case).
KILL_POINTS = {
    "mdt_index_log": r"^\.hoodie/metadata/bloom_filters/\.bloom-filters-.*\.log\.",
    "mdt_completed": r"^\.hoodie/metadata/\.hoodie/\d{17}\.deltacommit$",
}


@pytest.fixture
def history(mdt_indexes_built: HudiHistory, tmp_path: Path) -> HudiHistory:
    return mdt_indexes_built.copy_to(tmp_path / "mdt_indexes")


def _blocks_of(base: Path, instant: str) -> set[str]:
    """MDT-relative log files of the index partitions holding a block of `instant`."""
    out = set()
    for partition in ("column_stats", "bloom_filters"):
        for path in (base / MDT_BASE / partition).iterdir():
            if parse_log_file_name(path.name) is None:
                continue
            if any(b.instant_time == instant for b in read_log_blocks(path.read_bytes(), str(path))):
                out.add(f"{partition}/{path.name}")
    return out


# A kill after the MDT deltacommit is the fault matrix's too (tests/faults): a long variant.
@pytest.mark.long(step="mdt_completed")
@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_clustering_killed_at_each_mdt_step_leaves_readers_unaffected_and_the_next_run_completes(
    spark: Any, history: HudiHistory, step: str, tmp_path: Path
) -> None:
    base = history.base_path
    rows = _rows(spark, base, mdt=False)
    replaces_before = ht.instants_with_action(base, "replacecommit")
    conf = [a for k, v in {**HEARTBEAT, **SORT}.items() for a in ("--hoodie-conf", f"{k}={v}")]
    cluster = ["cluster", "--base-path", str(base), "--timezone", "UTC", "--mode", "scheduleAndExecute",
               "--spark-master", "local[1]", *conf]  # fmt: skip
    run_killed_at(KILL_POINTS[step], cluster, tmp_path / "killed.log", timeout=600)
    assert ht.instants_with_action(base, "replacecommit") == replaces_before, "the killed run completed"
    names = {p.name for p in (base / ".hoodie").iterdir()}
    [instant] = [n.split(".")[0] for n in names if n.endswith(".replacecommit.inflight")
                 and n.replace(".inflight", "") not in names]  # fmt: skip
    assert _blocks_of(base, instant)

    # Killed between two steps: Hudi's readers see the rows as before, and the stats of live files.
    assert _rows(spark, base, mdt=True) == rows
    assert _rows(spark, base, mdt=False) == rows
    assert_hudi_reads_footer_stats(spark, base)

    # The next run takes the dead attempt over, rolls it back and completes Tc.
    time.sleep(2.5)
    table = HudiTable.open(str(base))
    config = HoodieConfig.from_mapping({**HEARTBEAT, **SORT}, table.name)
    result = execute_clustering(
        table,
        instant,
        config,
        SparkExecutor(session=spark).run_group,
        InProcessTableLock(table.name),
        zone=UTC,
    )
    assert result.committed
    assert ht.instants_with_action(base, "replacecommit") == [*replaces_before, instant]
    assert_mdt_agrees(spark, base)
    assert _rows(spark, base, mdt=True) == rows
    assert_hudi_reads_footer_stats(spark, base)
    # Only the completing attempt's blocks of Tc remain: the dead one's left with its rollback.
    commit = json.loads(_our_mdt_deltacommit(base, instant).read_text())
    written = {
        s["path"] for p, stats in commit["partitionToWriteStats"].items() if p != "files" for s in stats
    }
    assert written and _blocks_of(base, instant) == written
