"""Free loopback ports for the servers tests start."""

from __future__ import annotations

from bench.standalone import free_port

__all__ = ["free_port"]
