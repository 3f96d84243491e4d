"""An S3-compatible server (moto) on 127.0.0.1 for storage tests: the benchmark's starter, and our options."""

from __future__ import annotations

import pyarrow.fs as pafs

from bench.moto_server import moto_server

__all__ = ["moto_server", "s3_filesystem", "s3_options"]


def s3_filesystem(endpoint: str) -> pafs.S3FileSystem:
    """A pyarrow client of the server at `endpoint` (moto's credentials; buckets may be created)."""
    return pafs.S3FileSystem(
        access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
        endpoint_override=endpoint, allow_bucket_creation=True,
    )  # fmt: skip


def s3_options(endpoint: str) -> dict[str, str]:
    return {
        "endpoint_override": endpoint,
        "endpoint_scheme": "http",
        "access_key": "testing",
        "secret_key": "testing",
        "region": "us-east-1",
        "allow_bucket_creation": "true",
    }
