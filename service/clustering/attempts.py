"""Which pending clustering plans are ours, and how many times their execution failed.

A failed attempt is visible on the timeline itself, so the count survives restarts and is the
same for every process: `execute_clustering` rolls a failed (or interrupted) attempt back with
`keep_requested`, which writes a completed rollback whose `commitsRollback` names the clustering
instant while `T.replacecommit.requested` stays. Every such rollback of a still-pending plan is a
failed attempt in a row (a successful attempt completes the plan; a conflict removes it).

Plans are marked as ours in the `extraMetadata` of `HoodieRequestedReplaceMetadata`, the map a
writer passes to `scheduleClustering(extraMetadata)` (`ClusteringPlanActionExecutor` copies it
there; executing the plan never reads it). Only plans carrying the mark are ever purged after
repeated failures: a plan scheduled by a Hudi writer is that writer's (its own async clustering
may retry it), so the daemon only keeps reporting and retrying it.
"""

from __future__ import annotations

from service.table import codecs
from service.table.instant import Action, Instant
from service.table.table import HudiTable
from service.table.timeline import Timeline

SCHEDULER_KEY = "hudi-table-service.scheduled-by"
SCHEDULER_NAME = "hudi-table-service"


def mark_as_ours(requested: codecs.RequestedReplaceMetadata) -> codecs.RequestedReplaceMetadata:
    """`requested` with the mark that the daemon may purge it after repeated failures."""
    extra = {**(requested.extra_metadata or {}), SCHEDULER_KEY: SCHEDULER_NAME}
    return requested.model_copy(update={"extra_metadata": extra})


def is_our_plan(table: HudiTable, instant: Instant) -> bool:
    """Whether the clustering plan of `instant` was scheduled by this service."""
    requested = table.facts_reader.requested_plan(instant, codecs.RequestedReplaceMetadata)
    extra = (requested.extra_metadata if requested is not None else None) or {}
    return extra.get(SCHEDULER_KEY) == SCHEDULER_NAME


def failed_attempts(table: HudiTable, timeline: Timeline, instant_time: str) -> int:
    """Completed rollbacks naming `instant_time`: each undid one failed attempt of the plan."""
    count = 0
    for rollback in timeline.by_actions([Action.ROLLBACK]).completed().instants:
        metadata = table.facts_reader.metadata(rollback, codecs.RollbackMetadata)
        if instant_time in metadata.commits_rollback:
            count += 1
    return count
