"""The Spark side: one lazily created, reused SparkSession per process; clustering groups and
compaction plans as jobs.

Groups run in threads sharing the session (PySpark pins each Python thread to a JVM thread, so job
groups and scheduler pools are per thread). Each group's jobs, and each compaction's (its operations
as the tasks of one job), carry a job group and a description naming table, instant and work, and
run in a FAIR pool named after the table, so the Spark UI shows what each job is and one table
cannot starve another.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from service.command_context import parse_key_values
from service.executor.clustering_job import GroupJob, run_group
from service.executor.compaction_job import CompactionJob, run_compaction
from service.table import codecs
from service.table.base_file_writer import BaseFileWriteResult

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

# Packages the executors' Python workers never import.
_DRIVER_ONLY = ("service/demo/",)


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
                from pyspark import SparkContext
                from pyspark.sql import SparkSession

                if SparkContext._active_spark_context is not None:
                    # A process that has a session already (a notebook, a test run) lends it: joined,
                    # never stopped here.
                    self._owns_session = False
                builder = SparkSession.builder.master(self._master)
                for key, value in self._conf.items():
                    builder = builder.config(key, value)
                self._session = builder.getOrCreate()
                if not self._master.startswith("local"):
                    self._session.sparkContext.addPyFile(str(_project_zip()))
            return self._session

    def run_group(self, job: GroupJob) -> list[BaseFileWriteResult]:
        """One clustering group as Spark jobs labelled for the UI, in the table's FAIR pool."""
        group_id = f"{job.table_name}-{job.instant_time}-{job.group_index}"
        description = (
            f"clustering {job.table_name} {job.instant_time} group {job.group_index}: "
            f"{len(job.input_paths)} files in partition '{job.partition_path}'"
        )
        with self._labelled(job.table_name, group_id, description):
            return run_group(self.session, job)

    def run_compaction(self, job: CompactionJob) -> list[codecs.WriteStat]:
        """A compaction plan's operations as the tasks of one Spark job, labelled like a group's."""
        description = (
            f"compaction {job.table_name} {job.instant_time}: {len(job.slices)} file slices, "
            f"{sum(len(s.log_files) for s in job.slices)} log files"
        )
        with self._labelled(job.table_name, f"{job.table_name}-{job.instant_time}", description):
            return run_compaction(self.session, job)

    @contextlib.contextmanager
    def _labelled(self, table_name: str, group_id: str, description: str) -> Iterator[None]:
        """This thread's jobs under `group_id` with `description`, in the table's FAIR pool."""
        sc = self.session.sparkContext
        sc.setJobGroup(group_id, description, interruptOnCancel=True)
        sc.setLocalProperty("spark.scheduler.pool", table_name)
        try:
            yield
        finally:
            sc.setLocalProperty("spark.scheduler.pool", None)  # type: ignore[arg-type]

    def stop(self) -> None:
        with self._lock:
            if self._session is not None and self._owns_session:
                self._session.stop()
            self._session = None


def add_spark_arguments(parser: argparse.ArgumentParser) -> None:
    """The CLI's Spark options of the commands that execute (`cluster`, `compact`)."""
    parser.add_argument("--spark-master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument(
        "--spark-conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )


def executor_from_args(args: argparse.Namespace) -> SparkExecutor:
    return SparkExecutor(args.spark_master, parse_key_values(args.spark_conf, "--spark-conf"))


def _project_zip() -> Path:
    """This project's packages as a zip for executors' Python workers.

    On a cluster, group jobs run in Python workers on other machines (or other working
    directories): shipping the code means only the dependencies (pyarrow, numpy) must be
    installed there, not this project, and never a different version of it. The demo's Hudi
    writer (`service/demo/`) runs on the driver only, so it is not shipped.
    """
    import service
    import strategies

    target = Path(tempfile.mkdtemp(prefix="hts-pyfiles-")) / "hudi_table_service.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in (service, strategies):
            root = Path(package.__file__ or "").parent
            for path in sorted(root.rglob("*")):
                name = path.relative_to(root.parent).as_posix()
                shipped = path.suffix in (".py", ".avsc") and "__pycache__" not in path.parts
                if shipped and not name.startswith(_DRIVER_ONLY):
                    archive.write(path, name)
    return target
