"""Schedule a compaction: Hudi's `ScheduleCompactionActionExecutor.execute`, under the table lock.

Under the lock (Java schedules under it too, `BaseHoodieTableServiceClient.scheduleTableServiceInternal`):
reload the timeline, choose the instant (after every instant on it: Java's
`HoodieTable.validateForLatestTimestamp`), apply the trigger (`needCompact`, which `HoodieCompactor`'s
schedule mode and `run_compaction` apply too), plan over the file-system view, and write
`C.compaction.requested` only when the plan has operations. From that moment Java writers append to
the new slice `C` of every planned file group, and any Java writer running pending compactions may
execute it: the plan is complete when it is written. Steps are logged at DEBUG: the CLI prints its
outcome, the daemon logs one line per run (`service.daemon.run_log`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, tzinfo

from service.cleaning.records import files_of_pending_cleans
from service.compaction.records import compaction_plan
from service.config.hoodie import HoodieConfig
from service.errors import HudiTableServiceError
from service.lock.base import TableLock
from service.table import codecs
from service.table.instant import Action, Instant, State
from service.table.listing_check import check_mdt_listing
from service.table.table import HudiTable
from service.table.timeline import create_instant_file, next_instant_time
from strategies.compaction import (
    CompactionTriggerDecision,
    PlannedCompaction,
    compaction_due,
    plan_compaction,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompactionScheduleOutcome:
    """What scheduling did: the instant written (None if nothing was) and why."""

    instant_time: str | None
    plan: PlannedCompaction | None
    reason: str
    trigger: CompactionTriggerDecision | None = None

    @property
    def written(self) -> bool:
        return self.instant_time is not None


def schedule_compaction(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    *,
    now: datetime,
    zone: tzinfo,
    instant_time: str | None = None,
    dry_run: bool = False,
) -> CompactionScheduleOutcome:
    """Plan over a fresh snapshot under the lock and write `C.compaction.requested`.

    `instant_time` (HoodieCompactor's `--instant-time`) must sort after every instant on the
    timeline; by default it is `now`, bumped past them. Nothing is written when the trigger says
    not yet, nothing is to be compacted, or `dry_run` is set (the outcome still holds the plan).
    """
    config.compaction.require_strategy()  # a strategy we do not reproduce: refuse before locking
    with lock:
        timeline = table.load_timeline()
        latest = timeline.max_timestamp
        if instant_time is None:
            instant_time = next_instant_time(timeline, now, zone)
        elif latest is not None and instant_time <= latest:
            raise HudiTableServiceError(
                f"table {table.name!r} at {table.base_uri}: compaction instant {instant_time} must be "
                f"after every instant on the timeline (the latest is {latest}), as Hudi requires"
            )
        trigger = compaction_due(timeline, config.compaction, instant_time, zone)
        if not trigger.due:
            log.debug("table %s: no compaction scheduled: %s", table.name, trigger.reason)
            return CompactionScheduleOutcome(None, None, trigger.reason, trigger)
        # Layout 2: only logs whose deltacommit completed before the compaction instant are taken.
        by_completion = table.layout.slices_logs_by_completion_time
        outcome = plan_compaction(
            table.iter_views(timeline),  # a batch of partitions at a time, not the table's view
            config.compaction,
            config.parquet.max_file_size_bytes,
            logs_completed_before=instant_time if by_completion else None,
        )
        if outcome.plan is None:
            log.debug("table %s: no compaction scheduled: %s", table.name, outcome.reason)
            return CompactionScheduleOutcome(None, None, outcome.reason, trigger)
        # Planned on the MDT's listing when the table has one: written only once storage agrees on
        # the plan's partitions (the plan names files an executor, Hudi's too, will read).
        partitions = {op.partition_path for op in outcome.plan.operations}
        check_mdt_listing(table, timeline, partitions, files_of_pending_cleans(table, timeline))
        if dry_run:
            return CompactionScheduleOutcome(
                None, outcome.plan, f"dry run, nothing written: {outcome.reason}", trigger
            )
        lock.check_held()
        create_instant_file(
            table.storage,
            table.layout,
            Instant(instant_time, Action.COMPACTION, State.REQUESTED),
            codecs.encode(compaction_plan(outcome.plan), table.format.compaction_plan_schema),
        )
    log.debug(
        "table %s: scheduled compaction %s: %d file slices (%s)",
        table.name, instant_time, len(outcome.plan.operations), trigger.reason,
    )  # fmt: skip
    return CompactionScheduleOutcome(instant_time, outcome.plan, outcome.reason, trigger)
