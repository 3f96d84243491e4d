"""The compaction plan as written to `C.compaction.requested` (pure). Hudi reading and executing
it: `tests/compaction/test_schedule_vs_hudi.py`."""

from __future__ import annotations

from service.compaction.records import compaction_plan
from service.table import codecs
from strategies.compaction import PlannedCompaction, PlannedOperation

METRICS = {
    "TOTAL_IO_READ_MB": 1.0,
    "TOTAL_IO_WRITE_MB": 120.0,
    "TOTAL_IO_MB": 121.0,
    "TOTAL_LOG_FILES_SIZE": 2048.0,
    "TOTAL_LOG_FILES": 2.0,
}


def test_plan_is_version_2_with_names_and_metrics_on_every_operation() -> None:
    ops = (
        PlannedOperation(
            "p", "a", "001", "a_0-1-0_001.parquet", (".a_001.log.1_0-1-0", ".a_001.log.2_0-1-0"), METRICS
        ),
        PlannedOperation("", "b", "002", None, (".b_002.log.1_0-1-0",), METRICS),
    )
    plan = compaction_plan(PlannedCompaction(ops))
    decoded = codecs.decode(codecs.CompactionPlan, codecs.encode(plan), "test")
    assert decoded == plan
    assert decoded.version == 2 and decoded.extra_metadata is None and decoded.strategy is None
    assert decoded.preserve_hoodie_metadata is False
    first, log_only = decoded.operations or ()
    assert first.data_file_path == "a_0-1-0_001.parquet"
    assert first.delta_file_paths == (".a_001.log.1_0-1-0", ".a_001.log.2_0-1-0")
    assert (log_only.data_file_path, log_only.partition_path, log_only.bootstrap_file_path) == (
        None,
        "",
        None,
    )
    assert all(op.metrics == METRICS for op in decoded.operations or ())
