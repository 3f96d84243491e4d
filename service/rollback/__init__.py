"""Roll back a failed or pending write instant the way the table's Hudi version does (0.15, 1.0, 1.1).

Steps (`BaseRollbackPlanActionExecutor`, `BaseRollbackActionExecutor`):

1. Plan: a `HoodieRollbackPlan` naming the files the instant wrote. From its markers (one request
   per marker: partition, file id, base instant, the file), as `MarkerBasedRollbackStrategy`; when
   the instant left no markers (a writer that crashed before its timeline-server markers were
   flushed, or markers deleted), as `ListingBasedRollbackStrategy`: a listing of the partitions it
   touched for base files carrying its instant time and log files whose base instant it is (one
   delete request per partition), and for a deltacommit a rollback command block in each file
   group its workload profile says it appended to. An instant still in REQUESTED state wrote
   nothing: its plan has no requests, as in Java. On versions 8 and 9 every log file is named by
   the deltacommit that wrote it and is deleted whole, never voided with a command block
   (`TableFormat.rollback_deletes_log_files`); each has a CREATE marker.
2. Under the table lock (on object stores "create if absent" is exclusive only under it): reload
   the timeline, refuse a T whose heartbeat is alive (unless the caller owns it), write
   `R.rollback.requested` (the Avro plan), start R's heartbeat (`.hoodie/.heartbeat/R`, kept until
   the rollback ends), write an empty `R.rollback.inflight`. A pending rollback of T whose heartbeat
   (R's own) is alive is another process's at work and is refused; one without is resumed.
3. Delete the files. A file already gone counts as deleted, so a re-run after a crash completes; a
   file that cannot be deleted fails the rollback before step 4, leaving it pending for a retry.
4. Under the table lock, after re-checking that R's heartbeat (and the caller's of T) never lapsed:
   mirror R into the metadata table (`service.table.mdt.rollback`), delete `T.<action>.inflight`,
   then `T.<action>.requested` (unless the plan is kept for a retry, as Java's
   `rollbackInflightClustering` does), then write `R.rollback` (Avro `HoodieRollbackMetadata`;
   `R_<completion>.rollback` on timeline layout 2). Java's `finishRollback` uses this order under
   its transaction lock.
5. Delete `.hoodie/.temp/T` (the markers) and, when the instant is gone, its heartbeat file.

Re-running is idempotent: a pending rollback whose plan targets T is completed (never a second one
started), and a T that is gone with a completed rollback naming it is reported as already rolled
back. The caller must know T is dead (its own failed attempt, or a writer whose heartbeat expired):
rolling back a live write breaks it; as a last guard, a T whose heartbeat file is alive is refused
(`InstantOwnedError`) unless the caller passes its own heartbeat of T. The lock is taken here, for
steps 2 and 4: the caller must not hold it (table locks are not re-entrant).
"""

from service.rollback.execute import confine_rollback_plan, execute_rollback_plan, rollback_files_records
from service.rollback.orchestrator import (
    RollbackOutcome,
    find_completed_rollback,
    find_pending_rollback,
    rollback_instant,
)
from service.rollback.plan import ROLLBACK_ACTIONS, affected_partitions, plan_rollback

__all__ = [
    "ROLLBACK_ACTIONS",
    "RollbackOutcome",
    "affected_partitions",
    "confine_rollback_plan",
    "execute_rollback_plan",
    "find_completed_rollback",
    "find_pending_rollback",
    "plan_rollback",
    "rollback_files_records",
    "rollback_instant",
]
