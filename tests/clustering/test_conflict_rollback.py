"""A clustering that loses to a writer's update is given up as Hudi 0.15 gives one up: plan deleted too.

Hudi's writer, told to roll back a pending clustering whose file groups it updates
(`hoodie.clustering.rollback.pending.replacecommit.on.conflict=true`), rolls it back with its instant
files deleted, `.replacecommit.requested` included. `execute_clustering` does the same when its commit
re-check finds such an update; both leave the same timeline: no file of the plan's instant, and a
completed rollback naming it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.clustering import execute_clustering, schedule_clustering
from service.config.hoodie import HoodieConfig
from service.executor import SparkExecutor
from service.lock.in_process import InProcessTableLock
from service.rollback import find_completed_rollback
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

ALLOW_UPDATES = {
    "hoodie.clustering.updates.strategy": (
        "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"
    )
}
ROLL_BACK_ON_CONFLICT = {
    **ALLOW_UPDATES,
    "hoodie.clustering.rollback.pending.replacecommit.on.conflict": "true",
}
UPDATED_IDS = range(0, 30)


def _schedule(table: HudiTable, config: HoodieConfig) -> str:
    lock = InProcessTableLock(table.name)
    instant = schedule_clustering(table, config, lock, now=datetime.now(UTC), zone=UTC).instant_time
    assert instant is not None
    return instant


def _assert_given_up(base: Path, instant: str, expected: list[dict[str, Any]], spark: Any) -> None:
    assert not [p.name for p in (base / ".hoodie").iterdir() if p.name.startswith(f"{instant}.")]
    table = HudiTable.open(str(base))
    assert find_completed_rollback(table, table.load_timeline(), instant) is not None
    assert not list(base.glob(f"*/*_{instant}.parquet"))
    assert ht.normalise_rows(ht.read_snapshot(spark, base)) == expected  # the update survives
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == expected


def test_conflict_rollback_deletes_the_plan_as_hudis_writer_does(
    history_many_commits: HudiHistory, spark: Any, tmp_path: Path
) -> None:
    ours = history_many_commits
    hudis = ours.copy_to(tmp_path / "hudis")
    latest = {**ours.latest_batch, **dict.fromkeys(UPDATED_IDS, 50)}
    expected = [ht.expected_row(i, b) for i, b in sorted(latest.items())]

    # Hudi's writer gives up the pending plan rather than its update.
    table = HudiTable.open(str(hudis.base_path))
    hudis_plan = _schedule(table, HoodieConfig.from_mapping({}, table.name))
    hudis.write(spark, ht.generate(spark, UPDATED_IDS, batch=50), "upsert", ROLL_BACK_ON_CONFLICT)
    _assert_given_up(hudis.base_path, hudis_plan, expected, spark)

    # The update commits first; our commit re-check finds it and gives the plan up the same way.
    table = HudiTable.open(str(ours.base_path))
    config = HoodieConfig.from_mapping({}, table.name)
    our_plan = _schedule(table, config)
    ours.write(spark, ht.generate(spark, UPDATED_IDS, batch=50), "upsert", ALLOW_UPDATES)
    run_group = SparkExecutor(session=spark).run_group
    result = execute_clustering(table, our_plan, config, run_group, InProcessTableLock(table.name), zone=UTC)
    assert result.rolled_back and not result.committed
    _assert_given_up(ours.base_path, our_plan, expected, spark)
