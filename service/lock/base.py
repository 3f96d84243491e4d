"""The table lock interface: one mutex per Hudi table, held while instants are planned and completed.

Hudi's transaction boundaries (its `TransactionManager`; docs/format.md, "What Hudi does under the
table lock") decide when it is taken: while a plan's
`.requested` file is written, and while a completed instant is written after the conflict re-check.
The committer calls `check_held()` immediately before writing the completed instant, so a lock that
was lost meanwhile (ZooKeeper session suspended or expired) aborts the commit instead of racing a
Java writer.

Contract shared by every provider:
- `acquire(timeout_s)` waits for the lock at most `timeout_s` seconds (the provider's default when
  None; a provider may add its connection set-up and one round trip) and raises `LockError` naming
  the table and the lock path when it times out. A zero timeout is a try-lock.
- A second `acquire` from the thread that already holds the lock raises `LockError` at once
  (Hudi's providers refuse re-entry too); other threads sharing the object wait for it.
- `release()` is idempotent and never raises for connectivity reasons: a lock whose backing state is
  unreachable is cleaned up by the provider later.
- `last_wait_seconds` / `last_hold_seconds` report the latest acquire wait and hold; `on_wait` /
  `on_hold`, when set, are called with every wait (a failed acquire's too) and every hold, for metrics.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from service.errors import LockError

Clock = Callable[[], float]


class TableLock(ABC):
    """A mutex for one table; usable as a context manager (`with lock: ...`)."""

    def __init__(
        self, table_name: str, lock_path: str, default_timeout_s: float, clock: Clock = time.monotonic
    ):
        self.table_name = table_name
        self.lock_path = lock_path
        self.default_timeout_s = default_timeout_s
        self._clock = clock
        # Guards this object's state: threads sharing one TableLock exclude each other here first.
        self._gate = threading.Lock()
        self._owner_thread: int | None = None
        self._acquired_at: float | None = None
        self.last_wait_seconds: float | None = None
        self.last_hold_seconds: float | None = None
        self.on_wait: Callable[[float], None] | None = None
        self.on_hold: Callable[[float], None] | None = None

    def describe(self) -> str:
        """`table 'x' at <lock path>`: how errors and logs name this lock."""
        return f"table '{self.table_name}' at {self.lock_path}"

    def acquire(self, timeout_s: float | None = None) -> None:
        timeout = self.default_timeout_s if timeout_s is None else timeout_s
        if timeout < 0:
            raise ValueError(f"lock timeout must be >= 0 seconds, got {timeout}")
        if self._owner_thread == threading.get_ident():
            raise LockError(f"lock of {self.describe()} is already held by this thread (not re-entrant)")
        started = self._clock()
        if not self._gate.acquire(timeout=min(timeout, threading.TIMEOUT_MAX)):
            self._waited(self._clock() - started)
            raise self.timeout_error(timeout, "another thread of this process holds it")
        try:
            self._acquire_backend(max(0.0, timeout - (self._clock() - started)), timeout)
        except BaseException:
            self._gate.release()
            self._waited(self._clock() - started)
            raise
        self._owner_thread = threading.get_ident()
        self._acquired_at = self._clock()
        self._waited(self._acquired_at - started)

    def _waited(self, seconds: float) -> None:
        self.last_wait_seconds = seconds
        if self.on_wait is not None:
            self.on_wait(seconds)

    def release(self) -> None:
        """Release if held (from any thread); a no-op otherwise."""
        if self._acquired_at is None:
            return
        try:
            self._release_backend()
        finally:
            held = self.last_hold_seconds = self._clock() - self._acquired_at
            self._acquired_at = None
            self._owner_thread = None
            self._gate.release()
            if self.on_hold is not None:
                self.on_hold(held)

    @property
    def is_held(self) -> bool:
        """Held and, as far as known without a round trip, not lost."""
        return self._acquired_at is not None and self._backend_intact()

    @property
    def held_seconds(self) -> float | None:
        """How long the current hold has lasted, or None when not held."""
        return None if self._acquired_at is None else self._clock() - self._acquired_at

    def check_held(self) -> None:
        """Raise LockError unless the lock is held and provably not lost; call before each commit write."""
        if self._acquired_at is None:
            raise LockError(f"lock of {self.describe()} is not held")
        self._verify_backend()

    def timeout_error(self, timeout_s: float, detail: str = "") -> LockError:
        suffix = f" ({detail})" if detail else ""
        return LockError(f"timed out after {timeout_s:g} s waiting for the lock of {self.describe()}{suffix}")

    def __enter__(self) -> TableLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    @abstractmethod
    def _acquire_backend(self, remaining_s: float, timeout_s: float) -> None:
        """Take the provider's lock within `remaining_s`; raise `self.timeout_error(timeout_s)` if not."""

    @abstractmethod
    def _release_backend(self) -> None:
        """Give the provider's lock back; must not raise for connectivity reasons."""

    @abstractmethod
    def _backend_intact(self) -> bool:
        """Cheap local check that the held lock has not been lost."""

    @abstractmethod
    def _verify_backend(self) -> None:
        """Authoritative check that the held lock is still ours; raise LockError if not."""
