"""The Spark side: one lazily created, reused SparkSession per process, and clustering groups as jobs.

Groups run in threads sharing the session (PySpark pins each Python thread to a JVM thread, so job
groups and scheduler pools are per thread). Each group's jobs carry a job group and a description
naming table, instant and group, and run in a FAIR pool named after the table, so the Spark UI shows
what each job is and one table cannot starve another.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from service.table.base_file_writer import BaseFileWriteResult
from strategies.execution.spark_group import GroupJob, run_group

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_SPARK_CONF = {
    "spark.app.name": "hudi-table-service",
    "spark.scheduler.mode": "FAIR",
    "spark.sql.session.timeZone": "UTC",
    # Range partitions of a clustering group are its writer tasks; adaptive coalescing would merge them.
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


class SparkExecutor:
    def __init__(
        self,
        master: str = "local[*]",
        conf: Mapping[str, str] | None = None,
        session: SparkSession | None = None,
    ) -> None:
        self._master = master
        self._conf = {**DEFAULT_SPARK_CONF, **(conf or {})}
        self._session = session
        self._owns_session = session is None
        self._lock = threading.Lock()

    @property
    def session(self) -> SparkSession:
        with self._lock:
            if self._session is None:
                # Python workers must run this interpreter: it has pyarrow and the project installed.
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
                from pyspark.sql import SparkSession

                builder = SparkSession.builder.master(self._master)
                for key, value in self._conf.items():
                    builder = builder.config(key, value)
                self._session = builder.getOrCreate()
            return self._session

    def run_group(self, job: GroupJob) -> list[BaseFileWriteResult]:
        """One clustering group as Spark jobs labelled for the UI, in the table's FAIR pool."""
        sc = self.session.sparkContext
        group_id = f"{job.table_name}-{job.instant_time}-{job.group_index}"
        description = (
            f"clustering {job.table_name} {job.instant_time} group {job.group_index}: "
            f"{len(job.input_paths)} files in partition '{job.partition_path}'"
        )
        sc.setJobGroup(group_id, description, interruptOnCancel=True)
        sc.setLocalProperty("spark.scheduler.pool", job.table_name)
        try:
            return run_group(self.session, job)
        finally:
            sc.setLocalProperty("spark.scheduler.pool", None)  # type: ignore[arg-type]

    def stop(self) -> None:
        with self._lock:
            if self._session is not None and self._owns_session:
                self._session.stop()
            self._session = None
