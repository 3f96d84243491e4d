"""An S3-compatible server (moto) on 127.0.0.1 for storage tests."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.ports import free_port


@contextmanager
def moto_server() -> Iterator[str]:
    """Start `moto_server` on a free loopback port; yields its endpoint (`127.0.0.1:port`)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://{endpoint}/", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def s3_options(endpoint: str) -> dict[str, str]:
    return {
        "endpoint_override": endpoint,
        "endpoint_scheme": "http",
        "access_key": "testing",
        "secret_key": "testing",
        "region": "us-east-1",
        "allow_bucket_creation": "true",
    }
