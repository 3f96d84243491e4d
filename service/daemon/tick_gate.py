"""The gate that caps how many ticks do their own work at once, across tables and services.

Every (table, service) job has a thread of its own, so a long clustering never holds up another
table's tick. Without a cap, a daemon starting with a thousand tables had three thousand first ticks
(each opening its table, rebuilding its run history, measuring its files) runnable at once: threads
contending for the interpreter lock spent more time handing it over than working, the first round took
from 43 s to 170 s on the same machine, and the rounds after it never caught up with the poll interval.
A tick holds the gate while it reads and plans, and leaves it when it starts waiting for a slot:
what runs in a slot is capped by the slots (`service.daemon.slots`), and a tick waiting for one must
not keep others from planning.
"""

from __future__ import annotations

import os
import threading


def default_capacity() -> int:
    """Two ticks per core: one may wait on storage while the other computes."""
    return max(2, 2 * (os.cpu_count() or 1))


class TickGate:
    """A semaphore whose holder is the calling thread, left at most once per entry."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"tick gate capacity must be at least 1, got {capacity}")
        self._permits = threading.BoundedSemaphore(capacity)
        self._held = threading.local()

    def enter(self, stopping: threading.Event, poll_s: float = 0.5) -> bool:
        """Wait for a place; False once `stopping` is set first."""
        while not self._permits.acquire(timeout=poll_s):
            if stopping.is_set():
                return False
        self._held.value = True
        return True

    def leave(self) -> None:
        """Give the place back if this thread holds one (a tick leaves when it waits for a slot, and
        again, as a no-op, when it ends)."""
        if getattr(self._held, "value", False):
            self._held.value = False
            self._permits.release()
