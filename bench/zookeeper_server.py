"""A real standalone ZooKeeper server for tests and benchmarks (Debian's `zookeeper` package, run with java).

`ZookeeperServer` serves 127.0.0.1:<port> with its data in a temp dir. It can be stopped and started
again on the same port and data (sessions survive a restart, as in production), and it can expire a
client's session on demand. The process is killed at `close()`, at interpreter exit, and by the
fixtures' teardown, whatever happens in the test.

Clients reach the server through a small gated TCP proxy on the public port. ZooKeeper 3.8.0 binds its
port before loading its database, and a client connecting in that window hits an NPE in the server
(`zkDb is null`) that leaves the connection hanging until the client's handshake timeout, which on a
loaded machine made restart tests flaky. The gate only opens once the server answers `srvr`; while
the server is down or starting, connections are refused at once, as after a crash.

Classpath: `/usr/share/java/zookeeper.jar` names its dependencies in its manifest `Class-Path`
(netty, jute, slf4j-api, metrics, jetty, ...); we only add an slf4j binding so its log goes to
`<root>/zookeeper.log`. Override with `HTS_ZOOKEEPER_CLASSPATH`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import socket
import subprocess
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

from bench.standalone import free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
SLF4J_BINDING = Path("/usr/share/java/slf4j-simple.jar")
SERVER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
TICK_TIME_MS = 500  # minimum session timeout is 2 ticks: short sessions make expiry tests fast


def zookeeper_classpath() -> str:
    override = os.environ.get("HTS_ZOOKEEPER_CLASSPATH")
    if override:
        return override
    if not ZOOKEEPER_JAR.exists():
        raise RuntimeError(f"ZooKeeper missing at {ZOOKEEPER_JAR}; run ./run setup (Debian's zookeeper)")
    return ":".join(str(p) for p in (ZOOKEEPER_JAR, SLF4J_BINDING) if p.exists())


def four_letter_word(port: int, word: str, timeout_s: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command (`ruok`, `srvr`); returns the reply ('' if none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as conn:
        conn.sendall(word.encode())
        chunks = []
        while chunk := conn.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


class _GatedProxy:
    """Forwards 127.0.0.1:<port> to the server's private port while open; refuses connections otherwise."""

    def __init__(self, port: int):
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._backend_port: int | None = None
        self._guard = threading.Lock()
        self._links: set[socket.socket] = set()
        threading.Thread(target=self._accept_loop, name=f"zk-proxy-{self.port}", daemon=True).start()

    def open(self, backend_port: int) -> None:
        with self._guard:
            self._backend_port = backend_port

    def cut(self) -> None:
        """Close the gate and drop every proxied connection, both ends (clients see a broken socket)."""
        with self._guard:
            self._backend_port = None
            links, self._links = self._links, set()
        for link in links:
            _drop(link)

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # listener closed
            with self._guard:
                backend_port = self._backend_port
            backend = None
            if backend_port is not None:
                try:
                    backend = socket.create_connection(("127.0.0.1", backend_port), timeout=2)
                    backend.settimeout(None)
                except OSError:
                    backend = None
            with self._guard:
                if backend is None or self._backend_port is None:
                    _drop(client)
                    if backend is not None:
                        _drop(backend)
                    continue
                self._links.update((client, backend))
            for source, target in ((client, backend), (backend, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            with self._guard:
                self._links.difference_update((source, target))
            _drop(source)
            _drop(target)


def _drop(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv on it
    sock.close()


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)


class ZookeeperServer:
    """One standalone ZooKeeper on 127.0.0.1:<port>, data under `root`."""

    def __init__(self, root: Path, port: int | None = None, max_session_timeout_ms: int = 60_000):
        self.root = root
        self.port = port or free_port()
        self.server_port = free_port()  # the JVM's own port, behind the gate
        self.max_session_timeout_ms = max_session_timeout_ms
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None
        self._proxy: _GatedProxy | None = None

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _write_config(self) -> Path:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.root / "zoo.cfg"
        config.write_text(
            "\n".join(
                [
                    f"tickTime={TICK_TIME_MS}",
                    f"dataDir={data}",
                    f"clientPort={self.server_port}",
                    "clientPortAddress=127.0.0.1",
                    "admin.enableServer=false",
                    f"maxSessionTimeout={self.max_session_timeout_ms}",
                    "4lw.commands.whitelist=ruok,srvr",
                    "",
                ]
            )
        )
        return config

    def start(self, timeout_s: float = 30.0) -> None:
        """Start (or restart, same port and data) and wait until it serves requests."""
        if self.running:
            return
        if self._proxy is None:
            self._proxy = _GatedProxy(self.port)
        config = self._write_config()
        log = (self.root / "zookeeper.log").open("ab")
        command = [
            "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false",
            "-cp", zookeeper_classpath(), SERVER_MAIN, str(config),
        ]  # fmt: skip
        with log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self._finalizer = weakref.finalize(self, _kill, self._process)
        atexit.register(self._finalizer)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                raise RuntimeError(f"ZooKeeper exited with {code}; see {self.root}/zookeeper.log")
            if self._serving():
                self._proxy.open(self.server_port)
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not serve on {self.connect_string} within {timeout_s} s")

    def _serving(self) -> bool:
        try:
            return "Mode: standalone" in four_letter_word(self.server_port, "srvr", timeout_s=0.5)
        except OSError:
            return False

    def stop(self) -> None:
        """Kill the server (a crash, as clients see it); start() brings it back on the same port and data."""
        if self._proxy is not None:
            self._proxy.cut()
        process, self._process = self._process, None
        if process is not None:
            _kill(process)
        if self._finalizer is not None:
            atexit.unregister(self._finalizer)
            self._finalizer.detach()
            self._finalizer = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    def expire_session(self, client: KazooClient, timeout_s: float = 15.0) -> None:
        """Expire `client`'s session server-side (a twin connection on the same session closes it),
        then wait until `client` has seen it as LOST."""
        client_id = client.client_id
        if client_id is None:
            raise RuntimeError("client is not connected")
        lost = threading.Event()

        def on_state(state: str) -> bool:
            if state == KazooState.LOST:
                lost.set()
                return True  # remove this listener
            return False

        client.add_listener(on_state)
        session_timeout_s = client._session_timeout / 1000
        twin = KazooClient(hosts=self.connect_string, client_id=client_id, timeout=session_timeout_s)
        twin.start(timeout=timeout_s)
        twin.stop()
        twin.close()
        if not lost.wait(timeout_s):
            client.remove_listener(on_state)
            raise RuntimeError(f"client never saw its session {client_id[0]:#x} expire")

    def __enter__(self) -> ZookeeperServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
