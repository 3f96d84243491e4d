"""Waiting on observable state in tests that run threads or processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0, what: str = "condition") -> None:
    """Poll observable state (never a blind sleep) until `condition()` holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def read_until(read: Callable[[], T], settled: Callable[[T], bool], timeout_s: float = 30.0) -> T:
    """`read()` once `settled` holds of it, else its last value at the deadline, for the caller's
    assertion to show (where `wait_until` would say only that it timed out)."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not settled(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value
