"""Concurrency slots of one table service, handed to the waiting table that gains most.

`daemon.max_concurrent_clusterings` caps clusterings across tables (`max_concurrent_cleans` and
`max_concurrent_compactions` cap the other services, whose claims carry no benefit: served in the
order they asked). When more tables are due than
there are slots, a freed slot goes to the best waiting claim (`SlotClaim.sort_key`): the table's
`clustering.priority` first (higher first), then the expected benefit, the bytes in small files
(more first), then the age of the oldest small file (older first); equal claims are served in the
order they asked. A resize (config reload) takes effect at once; holders release into the same pool.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from strategies.clustering.small_files import SmallFiles


@dataclass(frozen=True)
class SlotClaim:
    """A table asking for a slot, and what running it is expected to gain."""

    table: str
    priority: int = 0
    small_file_bytes: int = 0
    oldest_small_file_age_seconds: float = 0.0

    @property
    def sort_key(self) -> tuple[int, int, float]:
        """Smaller is served first."""
        return (-self.priority, -self.small_file_bytes, -self.oldest_small_file_age_seconds)

    @classmethod
    def of(cls, table: str, priority: int, small: SmallFiles | None, now: datetime) -> SlotClaim:
        """`now` in the writers' time zone (the small files' instant times are in it)."""
        if small is None:
            return cls(table, priority)
        return cls(table, priority, small.total_bytes, small.oldest_age(now).total_seconds())


def serve_order(claims: list[SlotClaim]) -> list[SlotClaim]:
    """The order in which `claims`, all waiting, would be given slots (stable for equal claims)."""
    return sorted(claims, key=lambda c: c.sort_key)


class PrioritySlots:
    """A counting semaphore whose waiters are served by `SlotClaim.sort_key`, not by arrival."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"slot capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._in_use = 0
        self._waiting: dict[int, SlotClaim] = {}  # arrival number -> claim
        self._arrivals = itertools.count()
        self._changed = threading.Condition()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_use(self) -> int:
        return self._in_use

    def resize(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"slot capacity must be at least 1, got {capacity}")
        with self._changed:
            self._capacity = capacity
            self._changed.notify_all()

    def waiting(self) -> list[SlotClaim]:
        """The claims waiting now, best first."""
        with self._changed:
            return [self._waiting[n] for n in self._queue()]

    def _queue(self) -> list[int]:
        return sorted(self._waiting, key=lambda n: (self._waiting[n].sort_key, n))

    def acquire(self, claim: SlotClaim, stopping: threading.Event | None = None, poll_s: float = 0.5) -> None:
        """Wait for a slot until `claim` is the best waiting one; InterruptedError once `stopping` is set."""
        with self._changed:
            arrival = next(self._arrivals)
            self._waiting[arrival] = claim
            try:
                while not (self._in_use < self._capacity and self._queue()[0] == arrival):
                    if stopping is not None and stopping.is_set():
                        raise InterruptedError("daemon is stopping")
                    self._changed.wait(timeout=poll_s)
            except BaseException:
                del self._waiting[arrival]
                self._changed.notify_all()  # the next best may be free to go now
                raise
            del self._waiting[arrival]
            self._in_use += 1
            self._changed.notify_all()  # another slot may be free for the next best

    def release(self) -> None:
        with self._changed:
            if self._in_use == 0:
                raise ValueError("slot released more often than acquired")
            self._in_use -= 1
            self._changed.notify_all()

    @contextlib.contextmanager
    def hold(self, claim: SlotClaim, stopping: threading.Event | None = None) -> Iterator[None]:
        self.acquire(claim, stopping)
        try:
            yield
        finally:
            self.release()
