"""Another lock contender in a separate process (our Python lock, or Hudi's Java provider), driven by lines.

Both speak the protocol of `tests/support/java/HudiZkLock.java`: commands `LOCK <ms>`, `UNLOCK`,
`QUIT` on stdin; replies `READY`, `ACQUIRED`, `TIMEOUT ...`, `RELEASED`, `BYE` on stdout. Tests
synchronise on these replies instead of sleeping. Other stdout lines (Java logging) are kept aside.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from pathlib import Path
from types import TracebackType

from tests.support.jvm import JAVA_OPENS, classpath, compile_program
from tests.support.paths import PYTHON, REPO_ROOT

REPLIES = ("READY", "ACQUIRED", "TIMEOUT", "HELD", "RELEASED", "BYE", "LOST", "UNKNOWN")


class Contender:
    """A running contender process; always killed on close."""

    def __init__(self, command: list[str], log_path: Path, cwd: Path = REPO_ROOT):
        self.command = command
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                bufsize=1,
            )
        self.other_lines: list[str] = []
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            if line.split(" ", 1)[0] in REPLIES:
                self._replies.put(line)
            else:
                self.other_lines.append(line)
        self._replies.put(None)

    def expect(self, timeout_s: float = 30.0) -> str:
        """The next protocol reply; AssertionError (with the process log) on EOF or timeout."""
        try:
            line = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            message = f"no reply within {timeout_s} s from {self.command[-4:]}\n{self._log()}"
            raise AssertionError(message) from None
        if line is None:
            raise AssertionError(f"contender exited ({self.process.poll()})\n{self._log()}")
        return line

    def request(self, command: str, timeout_s: float = 30.0) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.expect(timeout_s)

    def send(self, command: str) -> None:
        """Send without waiting (e.g. a LOCK that will block); read the reply later with expect()."""
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def _log(self) -> str:
        tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
        return "\n".join(self.other_lines[-20:]) + "\n" + tail

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send("QUIT")
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdin is not None:
            self.process.stdin.close()
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> Contender:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def python_contender(connect_string: str, base_path: str, lock_key: str, log_path: Path) -> Contender:
    """Our ZooKeeper lock in another Python process (`tests.lock.lock_holder`)."""
    command = [PYTHON, "-m", "tests.lock.lock_holder", connect_string, base_path, lock_key]
    return Contender(command, log_path)


def hudi_contender(connect_string: str, base_path: str, lock_key: str, log_path: Path) -> Contender:
    """Hudi 0.15.0's ZookeeperBasedLockProvider in a JVM (`tests/support/java/HudiZkLock.java`)."""
    classes = compile_program("HudiZkLock")
    command = [
        "java", *JAVA_OPENS, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-cp", classpath([classes]), "HudiZkLock", connect_string, base_path, lock_key,
    ]  # fmt: skip
    return Contender(command, log_path)
