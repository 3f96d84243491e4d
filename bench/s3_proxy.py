"""A counting HTTP proxy on loopback in front of an S3-compatible server (moto), for request counts.

Clients (pyarrow's S3 filesystem for ours, Hadoop's s3a for Hudi) use the proxy as their endpoint with
path-style addressing; each request is forwarded unchanged and counted by kind:

* LIST: `GET /bucket?list-type=2&prefix=...` (ListObjectsV2) or any other bucket-level GET;
* HEAD, GET (object reads), PUT (uploads, copies, multipart parts), DELETE (single deletes, and each
  `POST /bucket?delete` multi-object delete counts once), POST (other, e.g. multipart initiation).

Counts are cumulative; `snapshot()` and `since()` give the requests of one stretch of work.

A subclass may fail requests instead of forwarding them (`fault_for`): an S3 error response
(`Refusal`: 500 InternalError, 503 SlowDown, ...) or a connection dropped without a response
(`DROP`), as the storage-fault tests do (`tests/support/s3_faults.py`).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

KINDS = ("LIST", "HEAD", "GET", "PUT", "DELETE", "POST")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
}


@dataclass(frozen=True)
class Refusal:
    """An S3 error response (HTTP status, S3 error code); status 0: the connection is dropped."""

    status: int
    code: str = ""


DROP = Refusal(0)
INTERNAL_ERROR = Refusal(500, "InternalError")
SERVICE_UNAVAILABLE = Refusal(503, "ServiceUnavailable")
SLOW_DOWN = Refusal(503, "SlowDown")


def request_kind(method: str, target: str) -> str:
    """The S3 operation class of one path-style request."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    bucket_level = parts.path.strip("/").count("/") == 0
    if method == "GET":
        return "LIST" if "list-type" in query or bucket_level else "GET"
    if method == "POST" and "delete" in query:
        return "DELETE"
    return method if method in KINDS else "POST"


class CountingProxy:
    """`with CountingProxy(upstream) as proxy:` then point clients at `proxy.endpoint`."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream  # host:port of the S3 server
        self._counts: Counter[str] = Counter()
        self._log: list[tuple[str, str, str]] = []  # (kind, method, target) of every request, in order
        self._guard = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._connections: set[socket.socket] = set()  # open client connections (kept alive by clients)
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("proxy not started")
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def fault_for(self, kind: str, method: str, target: str) -> Refusal | None:
        """The failure to answer this request with instead of forwarding it (None: forward it)."""
        return None

    def count(self, kind: str, method: str = "", target: str = "") -> None:
        with self._guard:
            self._counts[kind] += 1
            self._log.append((kind, method, target))

    def mark(self) -> int:
        """A position in the request log, for `requests_since`."""
        with self._guard:
            return len(self._log)

    def requests_since(self, mark: int) -> list[tuple[str, str, str]]:
        """(kind, method, target) of each request made after `mark`, in arrival order."""
        with self._guard:
            return list(self._log[mark:])

    def snapshot(self) -> dict[str, int]:
        with self._guard:
            return {kind: self._counts[kind] for kind in KINDS}

    def since(self, before: Mapping[str, int]) -> dict[str, int]:
        now = self.snapshot()
        return {kind: now[kind] - before.get(kind, 0) for kind in KINDS}

    @contextmanager
    def counting(self) -> Iterator[dict[str, int]]:
        """`with proxy.counting() as counts:`; `counts` holds the requests made inside, on exit."""
        before = self.snapshot()
        counts: dict[str, int] = {}
        try:
            yield counts
        finally:
            counts.update(self.since(before))

    def __enter__(self) -> CountingProxy:
        proxy = self
        host, port = self.upstream.rsplit(":", 1)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def setup(self) -> None:
                super().setup()
                with proxy._guard:
                    proxy._connections.add(self.connection)

            def finish(self) -> None:
                with proxy._guard:
                    proxy._connections.discard(self.connection)
                super().finish()

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks: list[bytes] = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _refuse(self, refusal: Refusal) -> None:
                if refusal.status == 0:
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                payload = (
                    '<?xml version="1.0" encoding="UTF-8"?>'
                    f"<Error><Code>{refusal.code}</Code><Message>injected by the test proxy</Message>"
                    f"<Resource>{self.path}</Resource></Error>"
                ).encode()
                self.send_response(refusal.status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _forward(self) -> None:
                kind = request_kind(self.command, self.path)
                proxy.count(kind, self.command, self.path)
                body = self._body()
                refusal = proxy.fault_for(kind, self.command, self.path)
                if refusal is not None:
                    self._refuse(refusal)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                if body or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                upstream = http.client.HTTPConnection(host, int(port), timeout=120)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = upstream.getresponse()
                    payload = response.read()
                    self.send_response(response.status, response.reason)
                    length = response.getheader("Content-Length")
                    for key, value in response.getheaders():
                        if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                            self.send_header(key, value)
                    # A HEAD's Content-Length is the object's size (clients read it), not this body's.
                    head_length = length if self.command == "HEAD" else None
                    self.send_header("Content-Length", head_length or str(len(payload)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(payload)
                finally:
                    upstream.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = False  # `server_close` joins the handler threads
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="s3-counting-proxy", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            # Clients keep connections alive: end them, so that each handler thread returns and
            # `server_close` joins it (no thread outlives the proxy).
            with self._guard:
                connections = list(self._connections)
            for connection in connections:
                with contextlib.suppress(OSError):  # already closed by the client
                    connection.shutdown(socket.SHUT_RDWR)
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
