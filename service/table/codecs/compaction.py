"""`T.compaction.requested`: HoodieCompactionPlan, read (Hudi's plans and ours) and written (ours).

Java writes version 2 (`CompactionUtils.LATEST_COMPACTION_METADATA_VERSION`: base and log file
*names*, not paths); a version 1 plan holds full paths, which `CompactionPlanMigrator` turns into names.
The schema is Hudi 1.x's (1.0.2 and 1.1.1 write the same), which added `missingSchedulePartitions`;
plans of version-6 tables are written in 0.15's (`COMPACTION_PLAN_SCHEMA_0_15`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from service.table.codecs.avro_file import AvroModel, AvroRootModel, Int32

COMPACTION_PLAN_SCHEMA_0_15 = "HoodieCompactionPlan-0.15"
# `CompactionUtils.LATEST_COMPACTION_METADATA_VERSION` (CompactionV2MigrationHandler.VERSION).
LATEST_COMPACTION_PLAN_VERSION = 2


class CompactionOperation(AvroModel):
    """HoodieCompactionOperation: one file slice to compact."""

    base_instant_time: str | None  # no Avro default
    delta_file_paths: tuple[str, ...] | None = None
    data_file_path: str | None = None
    file_id: str | None  # no Avro default
    partition_path: str | None = None
    metrics: Mapping[str, float] | None = None
    bootstrap_file_path: str | None = None


class CompactionStrategy(AvroModel):
    """HoodieCompactionStrategy."""

    compactor_class_name: str | None = None
    strategy_params: Mapping[str, str] | None = None
    version: Int32 | None = 1


class CompactionPlan(AvroRootModel):
    """HoodieCompactionPlan."""

    AVRO_NAME: ClassVar[str] = "HoodieCompactionPlan"

    operations: tuple[CompactionOperation, ...] | None = None
    extra_metadata: Mapping[str, str] | None = None
    version: Int32 | None = 1
    strategy: CompactionStrategy | None = None
    preserve_hoodie_metadata: bool | None = False
    # Hudi 1.x: partitions the plan's strategy left out, for its incremental scheduler to revisit.
    missing_schedule_partitions: tuple[str, ...] | None = None
