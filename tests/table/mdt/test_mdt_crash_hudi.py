"""SIGKILL at each step of completing an instant on a table with the metadata table (issue 13).

Our clean completes in Hudi's order under one lock hold: `T.clean.requested`, `T.clean.inflight`,
the deletes, then the MDT deltacommit T (requested, inflight, a log file of `files-0000-0`, the
completed deltacommit), then `T.clean`. A process killed right after each of those files was created
must leave Hudi's readers unaffected (MDT-on snapshot = MDT-off snapshot = the rows before), and the
next run must complete the clean and leave the MDT's listing equal to storage, as Hudi reads both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from tests.support import hudi_tables as ht
from tests.support.crash_at import run_killed_at
from tests.support.histories import HudiHistory
from tests.table.mdt.test_mdt_write_hudi import _rows, assert_mdt_agrees

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

# Heartbeats of 1 s x 2 misses: the restarted run takes over the dead one's clean after 2 s.
HEARTBEAT = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]
CLEAN = ["--timezone", "UTC", "--force", "--hoodie-conf", "hoodie.cleaner.commits.retained=1", *HEARTBEAT]

KILL_POINTS = {
    "clean_inflight": r"^\.hoodie/\d{17}\.clean\.inflight$",
    "mdt_requested": r"^\.hoodie/metadata/\.hoodie/\d{17}\.deltacommit\.requested$",
    "mdt_log_file": r"^\.hoodie/metadata/files/\.files-0000-0_.*\.log\.",
    "mdt_completed": r"^\.hoodie/metadata/\.hoodie/\d{17}\.deltacommit$",
}


# The kills before and after the MDT deltacommit are the fault matrix's too (tests/faults): long variants.
@pytest.mark.long(step=("clean_inflight", "mdt_completed"))
@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_clean_killed_at_each_step_leaves_readers_unaffected_and_the_next_run_repairs(
    spark: Any, mdt_history: HudiHistory, step: str, tmp_path: Path
) -> None:
    base = mdt_history.base_path
    rows = _rows(spark, base, mdt=False)
    cleans_before = ht.instants_with_action(base, "clean")
    run_killed_at(KILL_POINTS[step], ["clean", "--base-path", str(base), *CLEAN], tmp_path / "killed.log")
    assert ht.instants_with_action(base, "clean") == cleans_before, "the killed run completed its clean"

    # Killed between two steps: Hudi's readers, with the MDT and without, see the rows as before.
    assert _rows(spark, base, mdt=True) == rows
    assert _rows(spark, base, mdt=False) == rows

    # The next run completes the dead run's clean (its heartbeat expired) and the MDT agrees again.
    time.sleep(2.5)
    assert main(["clean", "--base-path", str(base), *CLEAN]) == 0
    cleans = ht.instants_with_action(base, "clean")
    assert len(cleans) == len(cleans_before) + 1, cleans
    pending = (".clean.requested", ".clean.inflight")
    leftovers = [f.name for f in (base / ".hoodie").iterdir() if f.name.endswith(pending)]
    assert all(name.split(".")[0] in cleans for name in leftovers), leftovers
    assert_mdt_agrees(spark, base)
    assert _rows(spark, base, mdt=True) == rows
