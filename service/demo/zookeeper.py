"""A throwaway ZooKeeper server on loopback for the demo (Debian's `zookeeper` package)."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from service.errors import HudiTableServiceError

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")


def zookeeper_available() -> bool:
    return ZOOKEEPER_JAR.exists()


class LoopbackZookeeper:
    """`with LoopbackZookeeper() as zk: zk.connect_string` — started on 127.0.0.1, stopped on exit."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="hts-demo-zk-"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackZookeeper:
        config = self._dir / "zoo.cfg"
        config.write_text(
            f"dataDir={self._dir / 'data'}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "tickTime=2000\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n"
        )
        # The jar's manifest names its dependencies; Debian ships them in /usr/share/java.
        classpath = f"{ZOOKEEPER_JAR}:/usr/share/java/*"
        self._proc = subprocess.Popen(
            ["java", "-cp", classpath, "org.apache.zookeeper.server.ZooKeeperServerMain", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not self._healthy():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise HudiTableServiceError(f"ZooKeeper did not start on {self.connect_string}")
            time.sleep(0.2)
        return self

    def _healthy(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"ruok")
                return s.recv(4) == b"imok"
        except OSError:
            return False

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
