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
import heapq
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


class _Waiter:
    """One `acquire` call: woken alone, by its own event, when a slot is handed to it."""

    __slots__ = ("claim", "granted")

    def __init__(self, claim: SlotClaim) -> None:
        self.claim = claim
        self.granted = threading.Event()


class PrioritySlots:
    """A counting semaphore whose waiters are served by `SlotClaim.sort_key`, not by arrival.

    A freed slot is handed to the best waiter, which alone is woken: with a thousand tables waiting,
    a release costs a heap pop, not a thousand threads waking to sort the queue each (which held a
    core busy and slowed every tick behind the slots)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"slot capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._in_use = 0
        self._heap: list[tuple[tuple[int, int, float], int, _Waiter]] = []  # (sort key, arrival, waiter)
        self._arrivals = itertools.count()
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_use(self) -> int:
        return self._in_use

    def resize(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"slot capacity must be at least 1, got {capacity}")
        with self._lock:
            self._capacity = capacity
            self._hand_out()

    def waiting(self) -> list[SlotClaim]:
        """The claims waiting now, best first."""
        with self._lock:
            return [waiter.claim for _, _, waiter in sorted(self._heap, key=lambda e: e[:2])]

    def _hand_out(self) -> None:
        """Give free slots to the best waiters (the caller holds `_lock`)."""
        while self._in_use < self._capacity and self._heap:
            _, _, waiter = heapq.heappop(self._heap)
            self._in_use += 1
            waiter.granted.set()

    def acquire(self, claim: SlotClaim, stopping: threading.Event | None = None, poll_s: float = 0.5) -> None:
        """Wait for a slot until `claim` is the best waiting one; InterruptedError once `stopping` is set."""
        waiter = _Waiter(claim)
        with self._lock:
            heapq.heappush(self._heap, (claim.sort_key, next(self._arrivals), waiter))
            self._hand_out()
        try:
            while not waiter.granted.wait(timeout=poll_s):
                if stopping is not None and stopping.is_set():
                    raise InterruptedError("daemon is stopping")
        except BaseException:
            with self._lock:
                if waiter.granted.is_set():  # handed a slot while giving up: pass it on
                    self._in_use -= 1
                else:
                    self._heap = [entry for entry in self._heap if entry[2] is not waiter]
                    heapq.heapify(self._heap)
                self._hand_out()
            raise

    def release(self) -> None:
        with self._lock:
            if self._in_use == 0:
                raise ValueError("slot released more often than acquired")
            self._in_use -= 1
            self._hand_out()

    @contextlib.contextmanager
    def hold(self, claim: SlotClaim, stopping: threading.Event | None = None) -> Iterator[None]:
        self.acquire(claim, stopping)
        try:
            yield
        finally:
            self.release()
