"""A real standalone Spark cluster on loopback: one master and one worker, from the pyspark install.

Executors then run in their own JVMs and Python workers in their own working directories, as on a
cluster, which local mode hides (one JVM, shared scratch). The Hudi clustering benchmark runs on it
with `--standalone`; the distributed-executor tests start it too.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass(frozen=True)
class StandaloneCluster:
    master_url: str
    master_ui: str
    log_dir: Path

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=2) as response:
            state = json.load(response)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _env(log_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(log_dir), SPARK_NO_DAEMONIZE="1")
    return env


@contextmanager
def standalone_cluster(root: Path, cores: int = 2, memory: str = "2g") -> Iterator[StandaloneCluster]:
    """Start a master and a worker on 127.0.0.1; stop both on exit."""
    root.mkdir(parents=True, exist_ok=True)
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", root)
    env = _env(root)
    launcher = str(spark_class())
    processes: list[subprocess.Popen[bytes]] = []
    try:
        daemons = {
            "master": ["org.apache.spark.deploy.master.Master",
                       "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
            "worker": ["org.apache.spark.deploy.worker.Worker", cluster.master_url,
                       "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                       "--webui-port", str(worker_ui), "--work-dir", str(root / "work")],
        }  # fmt: skip
        for name, arguments in daemons.items():
            with open(root / f"{name}.log", "wb") as log:
                processes.append(
                    subprocess.Popen([launcher, *arguments], env=env, stdout=log, stderr=subprocess.STDOUT)
                )
        deadline = time.monotonic() + 90
        while True:
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark standalone daemon exited early; see logs in {root}")
            try:
                if cluster.alive_workers() >= 1:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no ALIVE Spark worker within 90 s; see logs in {root}")
            time.sleep(0.5)
        yield cluster
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
