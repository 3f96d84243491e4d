"""Compaction of merge-on-read tables: schedule a plan Hudi can execute (`T.compaction.requested`)."""

from service.compaction.scheduler import CompactionScheduleOutcome, schedule_compaction

__all__ = ["CompactionScheduleOutcome", "schedule_compaction"]
