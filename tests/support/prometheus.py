"""A real Prometheus server for tests (Debian's `prometheus` package, `/usr/bin/prometheus`).

`PrometheusServer` writes a `prometheus.yml` scraping the given targets every second into its root
directory, listens on 127.0.0.1:<free port> with its TSDB under the same root, and is killed at
`close()` (and at interpreter exit), whatever happens in the test. `query()` runs an instant query
through the HTTP API; `wait_for()` polls one until it returns series, within a deadline.

Override the binary with `HTS_PROMETHEUS_BIN`.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.ports import free_port

PROMETHEUS_BIN = Path("/usr/bin/prometheus")
SCRAPE_INTERVAL = "1s"
# The environment may name an HTTP proxy; every request here goes to 127.0.0.1.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def prometheus_binary() -> str:
    override = os.environ.get("HTS_PROMETHEUS_BIN")
    if override:
        return override
    if not PROMETHEUS_BIN.exists():
        raise RuntimeError(f"Prometheus missing at {PROMETHEUS_BIN}; run ./run setup (Debian's prometheus)")
    return str(PROMETHEUS_BIN)


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, str]:
    """GET without any proxy; returns (status, body), also for 4xx/5xx answers."""
    try:
        with _DIRECT.open(url, timeout=timeout_s) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)


class PrometheusServer:
    """One Prometheus on 127.0.0.1:<port> scraping `targets` (host:port) as job `job`, data under `root`."""

    def __init__(self, root: Path, job: str, targets: Sequence[str]) -> None:
        self.root = root
        self.job = job
        self.targets = tuple(targets)
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "prometheus.log"

    def _write_config(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "prometheus.yml"
        document = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
            "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": list(self.targets)}]}],
        }
        config.write_text(json.dumps(document, indent=2) + "\n")  # JSON is YAML
        return config

    def start(self, timeout_s: float = 30.0, attempts: int = 3) -> None:
        """Start and wait for `/-/ready`; a port taken between probing and binding gets another try."""
        config = self._write_config()
        for attempt in range(attempts):
            self.port = free_port()
            if self._launch(config, timeout_s):
                return
            if attempt + 1 == attempts or "address already in use" not in self._log_tail():
                break
        raise RuntimeError(f"Prometheus did not become ready on {self.url}:\n{self._log_tail()}")

    def _launch(self, config: Path, timeout_s: float) -> bool:
        command = [
            prometheus_binary(),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.root / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=info",
        ]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.root
            )
        self._finalizer = weakref.finalize(self, _kill, self._process)
        atexit.register(self._finalizer)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.stop()
                return False
            try:
                if http_get(self.url + "/-/ready", timeout_s=1.0)[0] == 200:
                    return True
            except OSError:
                pass  # not listening yet
            time.sleep(0.1)
        self.stop()
        return False

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _kill(process)
        if self._finalizer is not None:
            atexit.unregister(self._finalizer)
            self._finalizer.detach()
            self._finalizer = None

    def close(self) -> None:
        self.stop()

    def query(self, promql: str) -> list[Sample]:
        """An instant query through `/api/v1/query`; the instant-vector result as samples."""
        status, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
        answer: dict[str, Any] = json.loads(body)
        if status != 200 or answer.get("status") != "success":
            raise RuntimeError(f"Prometheus query {promql!r} failed ({status}): {body}")
        data = answer["data"]
        if data["resultType"] != "vector":
            raise RuntimeError(f"Prometheus query {promql!r}: expected a vector, got {data['resultType']}")
        return [Sample(dict(r["metric"]), float(r["value"][1])) for r in data["result"]]

    def wait_for(self, promql: str, timeout_s: float = 20.0, interval_s: float = 0.25) -> list[Sample]:
        """Poll `promql` until it returns a series; AssertionError naming the targets at the deadline."""
        deadline = time.monotonic() + timeout_s
        while True:
            samples = self.query(promql)
            if samples:
                return samples
            if time.monotonic() > deadline:
                targets = http_get(self.url + "/api/v1/targets")[1]
                raise AssertionError(
                    f"Prometheus query {promql!r} empty after {timeout_s} s; targets: {targets}"
                )
            time.sleep(interval_s)

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
