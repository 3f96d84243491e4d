"""A compaction plan on disk (`T.compaction.requested`, Avro) from the typed plan.

`compaction_plan` writes what Java's `ScheduleCompactionActionExecutor` writes for a plan of
`HoodieCompactionPlanGenerator`: version 2 (`CompactionUtils.buildFromFileSlice` /
`buildHoodieCompactionOperation`: the base file and log files by *name*, logs in
`HoodieLogFile.getLogFileComparator` order), `dataFilePath` null for a log-only slice, the
strategy's metrics on every operation (Java's executor reads `TOTAL_LOG_FILES_SIZE` without a null
check), no bootstrap path, no strategy (that field is log compaction's), and extra metadata null
(`HoodieCompactor` and `run_compaction` schedule with none).
"""

from __future__ import annotations

from service.table import codecs
from strategies.compaction import PlannedCompaction, PlannedOperation


def compaction_plan(plan: PlannedCompaction) -> codecs.CompactionPlan:
    return codecs.CompactionPlan(
        operations=tuple(_operation(op) for op in plan.operations),
        extra_metadata=None,
        version=codecs.LATEST_COMPACTION_PLAN_VERSION,
        strategy=None,
        preserve_hoodie_metadata=False,
        missing_schedule_partitions=plan.missing_partitions,
    )


def _operation(op: PlannedOperation) -> codecs.CompactionOperation:
    return codecs.CompactionOperation(
        base_instant_time=op.base_instant_time,
        delta_file_paths=op.log_file_names,
        data_file_path=op.base_file_name,
        file_id=op.file_id,
        partition_path=op.partition_path,
        metrics=dict(op.metrics),
        bootstrap_file_path=None,
    )
