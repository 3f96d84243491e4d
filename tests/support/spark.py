"""One local SparkSession with real Hudi 0.15.0 for the whole test session.

Starting the JVM is the expensive part (seconds), so `tests/conftest.py` exposes this as a
session-scoped fixture and every Spark test shares it. Stop it only at the end of the session.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tests.support.jvm import JAVA_OPENS
from tests.support.paths import HUDI_BUNDLE

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class SparkStart:
    """A started session and how long `getOrCreate` took (reported by the harness tests)."""

    session: SparkSession
    start_seconds: float


def spark_conf(work_dir: Path) -> dict[str, str]:
    """The session's configuration; `work_dir` holds the warehouse, Derby and local scratch dirs."""
    driver_java_options = " ".join([*JAVA_OPENS, f"-Dderby.system.home={work_dir / 'derby'}"])
    return {
        "spark.master": "local[2]",
        "spark.app.name": "hudi-table-service-tests",
        "spark.jars": str(HUDI_BUNDLE),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.local.dir": str(work_dir / "local"),
        "spark.driver.extraJavaOptions": driver_java_options,
        "spark.executor.extraJavaOptions": " ".join(JAVA_OPENS),
        "spark.driver.memory": "2g",
    }


def start_spark(work_dir: Path) -> SparkStart:
    """Start (or join) the process's SparkSession with the Hudi bundle on its classpath."""
    if not HUDI_BUNDLE.exists():
        raise RuntimeError(f"Hudi bundle missing at {HUDI_BUNDLE}; run ./run setup")
    # Spark binds to the machine's hostname otherwise, which may not resolve in CI containers.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    work_dir.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder
    for key, value in spark_conf(work_dir).items():
        builder = builder.config(key, value)
    started = time.monotonic()
    session = builder.getOrCreate()
    elapsed = time.monotonic() - started
    session.sparkContext.setLogLevel("WARN")
    return SparkStart(session=session, start_seconds=elapsed)
