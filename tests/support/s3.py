"""An S3-compatible server (moto) on 127.0.0.1 for storage tests: the benchmark's starter, and our options."""

from __future__ import annotations

from bench.moto_server import moto_server

__all__ = ["moto_server", "s3_options"]


def s3_options(endpoint: str) -> dict[str, str]:
    return {
        "endpoint_override": endpoint,
        "endpoint_scheme": "http",
        "access_key": "testing",
        "secret_key": "testing",
        "region": "us-east-1",
        "allow_bucket_creation": "true",
    }
