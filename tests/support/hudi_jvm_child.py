"""The child side of `tests.support.hudi_jvm`: one SparkSession with one Hudi bundle, serving calls.

Run as `python -m tests.support.hudi_jvm_child ADDRESS BUNDLE WORK_DIR`; it listens at the Unix socket ADDRESS
(authkey from `HTS_CHILD_AUTHKEY`) for its one parent, starts Spark, says "ready", and answers each
`(name, kwargs)` with `("ok", result)` or `("error", traceback text)` until it receives `("stop", {})`.
One bundle per JVM: Hudi 0.15.0, 1.0.2 and 1.1.1 cannot share a classpath, so a test that needs a Hudi
other than the session's 0.15.0 talks to such a child.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any

from tests.support.spark import spark_conf


def _session(bundle: Path, work_dir: Path) -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    conf = spark_conf(work_dir)
    conf["spark.jars"] = str(bundle)
    conf["spark.app.name"] = f"hudi-table-service-tests-{bundle.stem}"
    # Tests' toy tables need little; the benchmark's 100,000-file table asks for more.
    conf["spark.driver.memory"] = os.environ.get("HTS_CHILD_DRIVER_MEMORY", "1g")
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


class _Calls:
    """What the parent may ask: write rows through the datasource, run SQL, read a table."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def write(
        self, base_path: str, rows: list[dict[str, Any]], schema: str, options: dict[str, str], mode: str
    ) -> None:
        df = self.spark.createDataFrame(rows, schema)
        df.write.format("hudi").options(**options).mode(mode).save(base_path)

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return [row.asDict(recursive=True) for row in self.spark.sql(statement).collect()]

    def forget_session_state(self) -> None:
        """Drop every catalog table (external: their files stay), unset every `SET` option, uncache."""
        for table in self.spark.sql("show tables in default").collect():
            if not table.isTemporary:
                self.spark.sql(f"drop table if exists default.`{table.tableName}`")
        self.spark.sql("reset")
        self.spark.catalog.clearCache()

    def read(self, base_path: str, options: dict[str, str], where: str | None = None) -> list[dict[str, Any]]:
        frame = self.spark.read.format("hudi").options(**options).load(base_path)
        if where is not None:
            frame = frame.where(where)  # pushed down: what data skipping prunes files by
        return [row.asDict(recursive=True) for row in frame.collect()]

    def schedule_compaction_at(self, base_path: str, instant: str, options: dict[str, str]) -> bool:
        """Hudi's write client schedules a compaction at `instant` (`scheduleCompactionAtInstant`):
        what a compaction scheduled while an earlier deltacommit was still running leaves behind."""
        jvm = self.spark.sparkContext._jvm
        props = jvm.java.util.Properties()
        for key, value in options.items():
            props.setProperty(key, value)
        config = jvm.org.apache.hudi.config.HoodieWriteConfig.newBuilder().withPath(base_path)
        context = jvm.org.apache.hudi.client.common.HoodieSparkEngineContext(self.spark.sparkContext._jsc)
        client = jvm.org.apache.hudi.client.SparkRDDWriteClient(context, config.withProperties(props).build())
        try:
            return bool(
                client.scheduleCompactionAtInstant(instant, jvm.org.apache.hudi.common.util.Option.empty())
            )
        finally:
            client.close()

    def archived_instants(self, base_path: str) -> list[tuple[str, str, str | None, str | None]]:
        """(requested time, action, completion time of the archived timeline, completion time Hudi's
        `CompletionTimeQueryViewV2` answers) of every instant in the table's archived timeline."""
        jvm = self.spark.sparkContext._jvm
        conf = jvm.org.apache.hudi.hadoop.fs.HadoopFSUtils.getStorageConf(
            self.spark.sparkContext._jsc.hadoopConfiguration()
        )
        meta = jvm.org.apache.hudi.common.table.HoodieTableMetaClient.builder()
        meta = meta.setConf(conf).setBasePath(base_path).build()
        view = jvm.org.apache.hudi.common.table.timeline.versioning.v2.CompletionTimeQueryViewV2(meta)
        out = []
        for instant in meta.getArchivedTimeline().getInstants():
            requested = str(instant.requestedTime())
            queried = view.getCompletionTime(requested)
            out.append(
                (
                    requested,
                    str(instant.getAction()),
                    instant.getCompletionTime(),
                    str(queried.get()) if queried.isPresent() else None,
                )
            )
        return out

    def version(self) -> str:
        jvm = self.spark.sparkContext._jvm
        return str(jvm.org.apache.hudi.common.table.HoodieTableVersion.current().versionCode())


def main(argv: list[str]) -> int:
    address, bundle, work_dir = argv
    with Listener(address, family="AF_UNIX", authkey=os.environ["HTS_CHILD_AUTHKEY"].encode()) as listener:
        conn = listener.accept()
    spark = _session(Path(bundle), Path(work_dir))
    calls = _Calls(spark)
    conn.send(("ready", None))
    try:
        while True:
            name, kwargs = conn.recv()
            if name == "stop":
                conn.send(("ok", None))
                return 0
            try:
                method: Callable[..., Any] = getattr(calls, name)
                conn.send(("ok", method(**kwargs)))
            except Exception:  # the parent raises it, with this traceback, in the calling test
                conn.send(("error", traceback.format_exc()))
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
