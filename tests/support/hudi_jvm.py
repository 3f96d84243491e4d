"""Real Hudi 1.x (and any other bundle) in a child process: one SparkSession per bundle.

The test session's own SparkSession carries Hudi 0.15.0 (table version 6). Hudi 1.0.2 writes table
version 8 and Hudi 1.1.1 version 9; their bundles cannot share a JVM with 0.15.0, so a `HudiJvm` starts
`tests.support.hudi_jvm_child` with the chosen bundle and forwards calls to it over a local socket.
Rows cross as plain Python values (pickled), so tests compare them exactly as they would local rows.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

from tests.support.paths import JARS_DIR, REPO_ROOT

# Table version each bundle writes by default (`HoodieTableVersion.current()`).
HUDI_VERSIONS = {"0.15.0": 6, "1.0.2": 8, "1.1.1": 9, "1.2.0": 9}
START_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 600.0


def hudi_bundle(version: str) -> Path:
    """The Spark bundle `./run setup` fetched for Hudi `version`."""
    if version not in HUDI_VERSIONS:
        raise ValueError(f"no Hudi bundle {version!r} in the test set-up; known: {sorted(HUDI_VERSIONS)}")
    path = JARS_DIR / f"hudi-spark3.5-bundle_2.12-{version}.jar"
    if not path.exists():
        raise RuntimeError(f"Hudi bundle {version} missing at {path}; run ./run setup")
    return path


class HudiJvmError(AssertionError):
    """A call failed inside the child; carries the child's Python traceback (with Java's message)."""


class HudiJvm:
    """A SparkSession with one Hudi bundle in a child process."""

    def __init__(self, version: str, conn: Connection, process: subprocess.Popen[bytes]) -> None:
        self.version = version
        self.table_version = HUDI_VERSIONS[version]
        self._conn = conn
        self._process = process

    def _call(self, name: str, **kwargs: Any) -> Any:
        self._conn.send((name, kwargs))
        if not self._conn.poll(CALL_TIMEOUT_S):
            raise HudiJvmError(f"Hudi {self.version} child: {name} gave no answer in {CALL_TIMEOUT_S}s")
        status, value = self._conn.recv()
        if status != "ok":
            raise HudiJvmError(f"Hudi {self.version} child: {name} failed:\n{value}")
        return value

    def write(
        self,
        base_path: str | Path,
        rows: Sequence[Mapping[str, Any]],
        schema: str,
        options: Mapping[str, str],
        mode: str = "append",
    ) -> None:
        """`spark.createDataFrame(rows, schema).write.format("hudi").options(...).mode(mode).save(path)`."""
        self._call(
            "write", base_path=str(base_path), rows=[dict(r) for r in rows], schema=schema,
            options=dict(options), mode=mode,
        )  # fmt: skip

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return list(self._call("sql", statement=statement))

    def read(
        self, base_path: str | Path, options: Mapping[str, str] | None = None, where: str | None = None
    ) -> list[dict[str, Any]]:
        """Rows of a Hudi read (meta columns included) with the given reader options, filtered by the
        SQL condition `where` when given."""
        return list(self._call("read", base_path=str(base_path), options=dict(options or {}), where=where))

    def schedule_compaction_at(self, base_path: str | Path, instant: str, options: Mapping[str, str]) -> bool:
        """Hudi's write client (`options` its write config) schedules a compaction at `instant`;
        False when it planned none."""
        return bool(
            self._call(
                "schedule_compaction_at", base_path=str(base_path), instant=instant, options=dict(options)
            )
        )

    def archived_instants(self, base_path: str | Path) -> list[tuple[str, str, str | None, str | None]]:
        """(requested time, action, completion time, completion time `CompletionTimeQueryViewV2` gives)
        of each instant Hudi's archived timeline holds."""
        return [tuple(i) for i in self._call("archived_instants", base_path=str(base_path))]

    def forget_session_state(self) -> None:
        """Drop the session's catalog tables (their files stay) and `SET` options: what one test module
        leaves for the next on a shared child."""
        self._call("forget_session_state")

    def current_table_version(self) -> int:
        return int(self._call("version"))

    def close(self) -> None:
        try:
            self._call("stop")
        except (HudiJvmError, EOFError, OSError):
            pass
        finally:
            self._conn.close()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


@contextmanager
def hudi_jvm(version: str, work_dir: Path, driver_memory: str = "1g") -> Iterator[HudiJvm]:
    """Start a child SparkSession with Hudi `version`'s bundle; stops it on exit."""
    bundle = hudi_bundle(version)
    work_dir.mkdir(parents=True, exist_ok=True)
    authkey = secrets.token_hex(16)
    # AF_UNIX paths are short (108 bytes): the socket lives in its own short temporary directory.
    socket_dir = Path(tempfile.mkdtemp(prefix="hts-jvm-"))
    address = str(socket_dir / "child.sock")
    env = dict(
        os.environ,
        HTS_CHILD_AUTHKEY=authkey,
        HTS_CHILD_DRIVER_MEMORY=driver_memory,
        PYTHONPATH=str(REPO_ROOT),
    )
    with (work_dir / "child.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.hudi_jvm_child", address, str(bundle), str(work_dir)],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        conn = _connect(address, authkey, process, version, work_dir)
    except BaseException:
        process.kill()
        process.wait()
        shutil.rmtree(socket_dir, ignore_errors=True)
        raise
    jvm = HudiJvm(version, conn, process)
    try:
        yield jvm
    finally:
        jvm.close()
        shutil.rmtree(socket_dir, ignore_errors=True)


def _connect(
    address: str, authkey: str, process: subprocess.Popen[bytes], version: str, work_dir: Path
) -> Connection:
    """Connect to the child's listener (it listens before starting Spark) and wait for its session."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise HudiJvmError(
                f"Hudi {version} child exited ({process.returncode}); see {work_dir / 'child.log'}"
            )
        try:
            conn = Client(address, family="AF_UNIX", authkey=authkey.encode())
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                raise HudiJvmError(
                    f"Hudi {version} child never listened; see {work_dir / 'child.log'}"
                ) from None
            time.sleep(0.2)
    if not conn.poll(max(1.0, deadline - time.monotonic())) or conn.recv()[0] != "ready":
        conn.close()
        raise HudiJvmError(f"Hudi {version} child did not start Spark; see {work_dir / 'child.log'}")
    return conn
