"""Daemon replicas as their own processes (`hudi-table-service run`), for tests that SIGKILL them.

A SIGKILLed replica releases nothing: its ZooKeeper nodes live until the server expires its session,
its heartbeats stop, its Spark JVM exits with its parent (PySpark's gateway ends on EOF of stdin).
`ReplicaProcess.held` reads what the replica reports over HTTP (`/readyz`, then the
`hudi_table_service_table_held` gauges), so a test sees the division as an operator would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.paths import REPO_ROOT

HELD = re.compile(r'^hudi_table_service_table_held\{table="([^"]+)"\} 1\.0$', re.M)


class ReplicaProcess:
    """One replica: its config (written by the test), metrics port and log `<config dir>/<id>.log`.

    `wrapper` runs the CLI through a test module instead of `service.cli` (e.g.
    `["tests.support.hang_after_groups", MARKER]`), so a replica can be stopped at a chosen step.
    """

    def __init__(self, replica_id: str, config: Path, port: int, wrapper: list[str] | None = None) -> None:
        self.replica_id = replica_id
        self.config = config
        self.port = port
        self.wrapper = wrapper
        self.log = config.parent / f"{replica_id}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        module = self.wrapper or ["service.cli"]
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
        with self.log.open("ab") as log:  # the child keeps its copy
            self.process = subprocess.Popen(
                [sys.executable, "-m", *module, "run", "--config", str(self.config)],
                cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log,
            )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL (no release, no party leave, no heartbeat stop) and reap."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def terminate(self, timeout_s: float = 60) -> None:
        """SIGTERM, then SIGKILL if it has not ended within `timeout_s`."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def held(self) -> set[str] | None:
        """The tables this replica reports held, if it is up and ready (the division settled)."""
        base = f"http://127.0.0.1:{self.port}"
        try:
            with urllib.request.urlopen(base + "/readyz", timeout=2):
                pass
            with urllib.request.urlopen(base + "/metrics", timeout=2) as response:
                return set(HELD.findall(response.read().decode()))
        except (urllib.error.URLError, OSError):
            return None

    def running(self) -> list[tuple[str, str, str]]:
        """(table, service, phase) of every service this replica runs now on a table it holds, as its
        status API reports them (`/api/v1/tables`); empty when it is down or runs nothing."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/tables", timeout=2) as response:
                tables = json.loads(response.read())["tables"]
        except (urllib.error.URLError, OSError, ValueError):
            return []
        return [
            (table["name"], service, section["phase"])
            for table in tables
            if table["held"]
            for service, section in table["services"].items()
            if section["phase"] is not None
        ]

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"
