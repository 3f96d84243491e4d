"""SIGKILL mid-compaction, then restart: the compaction is rolled back or completed, never half
visible.

The plan is ours, scheduled beforehand; a CLI process executing it (its operations as Spark tasks)
is killed right after it claims the plan (`C.compaction.inflight`), right before `C.commit` (every
new base file written and finalized, nothing committed), and right after `C.commit`. At each point
Hudi's snapshot and read-optimized reads, and hudi-rs, show the table as before the kill, or (killed
after `C.commit`) as compacted (`compacted_snapshot`: the same rows, as Hudi reads them). The next
execution (once the dead one's heartbeat expired) rolls the attempt back by its markers and
completes the plan: afterwards the only files of `C` on storage are the commit's, and every reader
sees the compacted snapshot, the read-optimized read included. (A rollback that kept the dead
attempt's files fails it: two base files of `C` in a group.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from service.table import codecs
from tests.support import hudi_tables as ht
from tests.support.crash_at import run_killed_at
from tests.support.mor_tables import (
    MorHistoryCache,
    compacted_snapshot,
    copy_and_schedule_ours,
    mor_histories,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

__all__ = ["mor_histories"]

# Heartbeats of 1 s x 2 misses: the restarted run takes over the dead one's attempt after 2 s.
HEARTBEAT = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]

# (kill mode: just `before` the file or `after` it, the path the kill is placed at)
KILL_POINTS = {
    "claimed": ("after", r"^\.hoodie/\d{17}\.compaction\.inflight$"),
    "files_written": ("before", r"^\.hoodie/\d{17}\.commit$"),
    "committed": ("after", r"^\.hoodie/\d{17}\.commit$"),
}


def _reads(spark: SparkSession, base: Path) -> tuple[list[dict[str, Any]], ...]:
    return (
        ht.normalise_rows(ht.read_snapshot(spark, base)),
        ht.normalise_rows(ht.read_snapshot(spark, base, "read_optimized")),
        ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()),
    )


# The fault matrix (tests/faults) kills compaction at these steps and more, on a table with the MDT:
# long variants here.
@pytest.mark.long
@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_compaction_killed_is_never_half_visible_and_the_next_run_completes_it(
    spark: SparkSession,
    mor_histories: MorHistoryCache,
    step: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path / "table"
    history = mor_histories.get("mor_partitioned_avro")
    instant = copy_and_schedule_ours(history, base, capsys)
    before = _reads(spark, base)
    compacted = compacted_snapshot(history, before[0], before[2])

    kill_mode, pattern = KILL_POINTS[step]
    compact = ["compact", "--base-path", str(base), "--mode", "execute", "--instant-time", instant,
               "--spark-master", "local[2]", *HEARTBEAT]  # fmt: skip
    run_killed_at(pattern, compact, tmp_path / "killed.log", mode=kill_mode, timeout=600)
    committed = (base / ".hoodie" / f"{instant}.commit").exists()
    assert committed == (step == "committed")
    if step == "files_written":
        assert list(base.rglob(f"*_{instant}.parquet")), "the attempt wrote its base files"
    # Killed between two steps: either nothing of the compaction is visible, or all of it.
    assert _reads(spark, base) == ((compacted,) * 3 if committed else before)

    time.sleep(2.5)
    assert main(["compact", "--base-path", str(base), "--mode", "execute", *HEARTBEAT]) == 0
    path = base / ".hoodie" / f"{instant}.commit"
    metadata = codecs.decode(codecs.CommitMetadata, path.read_bytes(), str(path))
    stats = {str(base / s.path) for s in metadata.write_stats if s.path}
    # No file of an attempt survives beside the commit's: Hudi's view would pick one base file of
    # the instant per file group, hudi-rs might read both.
    assert {str(p) for p in base.rglob(f"*_{instant}.parquet")} == stats
    # Killed after `C.commit`, its marker folder stays, as a killed Java writer's does: markers of a
    # completed instant are never rolled back (the archiver deletes them, `deleteAnyLeftOverMarkers`).
    assert (base / ".hoodie" / ".temp" / instant).exists() == committed
    assert _reads(spark, base) == (compacted,) * 3
