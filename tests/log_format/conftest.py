"""Fixtures of the log-format tests: MOR histories written by real Hudi (built once per session)."""

from tests.support.mor_tables import mor_histories

__all__ = ["mor_histories"]
