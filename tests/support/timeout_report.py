"""A pytest plugin for `tests/harness/test_timeouts.py`: after collection, print each test's
pytest-timeout limit (its `timeout` marker, else the ini's `timeout`) as `TIMEOUT <seconds> <nodeid>`."""

from __future__ import annotations

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    default = session.config.getini("timeout")
    for item in session.items:
        marker = item.get_closest_marker("timeout")
        seconds = marker.args[0] if marker is not None and marker.args else (default or 0)
        print(f"TIMEOUT {float(seconds):g} {item.nodeid}")
