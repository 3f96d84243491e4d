"""A class-data archive for the Spark driver JVMs the tests start: each starts about 3 s sooner.

The suite starts a hundred-odd Spark drivers: the session's own, each Hudi 1.x child, and every
service, daemon, demo and benchmark child a test runs (the fault matrix alone kills and restarts
dozens). Most of a cold driver's first seconds go to loading Spark's classes. A dynamic CDS archive
(`-XX:ArchiveClassesAtExit`, Java 13+) recorded once by a driver that wrote and read a Hudi table
lets later drivers map those classes instead (measured here: start-up and first jobs 8.8 s -> 5.2 s).
Nothing about what a driver does changes; a JVM that cannot use the archive (another JDK, changed
jars) ignores it, as the JVM does by default (`-Xshare:auto`), and its warning is off.

The archive reaches every driver through `SPARK_SUBMIT_OPTS`, which `spark-submit` adds to the driver
JVM's options beside (never instead of) `spark.driver.extraJavaOptions`, and which child processes
inherit. It lives in `$HTS_HOME/class-data/`, keyed by the JDK, pyspark and the Hudi bundle.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.paths import HTS_HOME, HUDI_BUNDLE, REPO_ROOT, pyspark_jars_dir

ARCHIVE_DIR = HTS_HOME / "class-data"
CREATE_TIMEOUT_S = 300


def archive_path() -> Path:
    """Where the archive for this JDK, pyspark's jars and the Hudi bundle lives."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True).stderr
    digest = hashlib.sha256(java.encode())
    for jar in [*sorted(pyspark_jars_dir().glob("*.jar")), HUDI_BUNDLE]:
        stat = jar.stat()
        digest.update(f"{jar.name} {stat.st_size} {int(stat.st_mtime)}\n".encode())
    return ARCHIVE_DIR / f"spark-driver-{digest.hexdigest()[:16]}.jsa"


def ensure_archive() -> Path:
    """The archive, recorded first when missing (about 20 s, once per machine and version set)."""
    path = archive_path()
    if path.exists():
        return path
    ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hts-cds-") as scratch:
        partial = Path(scratch) / path.name
        env = dict(
            os.environ,
            SPARK_SUBMIT_OPTS=f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off",
            PYTHONPATH=str(REPO_ROOT),
        )
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.jvm_archive", scratch],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=CREATE_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not partial.exists():
            raise RuntimeError(
                f"recording the class-data archive failed ({done.returncode}):\n{done.stderr[-3000:]}"
            )
        shutil.move(partial, path)  # whole or not at all: a reader never maps a half-written archive
    for stale in ARCHIVE_DIR.glob("spark-driver-*.jsa"):  # another JDK's or jars' (150 MB each)
        if stale != path:
            stale.unlink(missing_ok=True)
    return path


def use_archive(path: Path) -> None:
    """Every Spark driver started from now on by this process or its children maps `path`."""
    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{options} -XX:SharedArchiveFile={path} -Xlog:cds*=off".strip()


def _record(work_dir: Path) -> None:
    """What a test's driver does first: start with the session's configuration (the Hudi 0.15.0
    bundle), write a Hudi table with its metadata table, read it back."""
    from tests.support.spark import start_spark

    spark = start_spark(work_dir / "spark").session
    frame = spark.createDataFrame([(i, f"p{i % 2}", i) for i in range(20)], "id long, part string, ts long")
    options = {
        "hoodie.table.name": "archive",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.metadata.enable": "true",
    }
    base = str(work_dir / "table")
    frame.write.format("hudi").options(**options).mode("overwrite").save(base)
    assert spark.read.format("hudi").load(base).count() == 20
    spark.read.parquet(*[str(p) for p in (work_dir / "table").rglob("*.parquet")]).count()
    # The JVM writes the archive as it exits, which it does when its stdin closes
    # (`PythonGatewayServer`): wait for that, so the parent finds the archive whole.
    jvm_process = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
    spark.stop()
    jvm_process.stdin.close()
    jvm_process.wait(timeout=CREATE_TIMEOUT_S)


if __name__ == "__main__":
    _record(Path(sys.argv[1]))
