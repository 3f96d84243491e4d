"""In-process table lock: one mutex per table key, shared by every TableLock of this Python process.

WARNING: THIS LOCK DOES NOT EXCLUDE HUDI'S JAVA WRITERS (Spark, Flink, Hudi Streamer), NOR ANY OTHER
PROCESS. It is only correct for a daemon that is the table's SOLE committer: no Java writer commits
to the table while the daemon runs. With concurrent writers use the ZooKeeper provider on the
writers' `base_path`/`lock_key`: this lock is only for a sole committer.

Like Hudi's `InProcessLockProvider`, a thread that already holds a table's lock and asks for it again
gets a LockError at once instead of deadlocking.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from service.errors import LockError
from service.lock.base import Clock, TableLock


@dataclass
class _KeyMutex:
    mutex: threading.Lock = field(default_factory=threading.Lock)
    owner_thread: int | None = None


_REGISTRY: dict[str, _KeyMutex] = {}
_REGISTRY_GUARD = threading.Lock()


def _key_mutex(key: str) -> _KeyMutex:
    with _REGISTRY_GUARD:
        return _REGISTRY.setdefault(key, _KeyMutex())


class InProcessTableLock(TableLock):
    """Mutual exclusion among the threads of this process only (see the module warning)."""

    def __init__(
        self,
        table_name: str,
        key: str | None = None,
        default_timeout_s: float = 60.0,
        clock: Clock = time.monotonic,
    ):
        self.key = key or table_name
        super().__init__(table_name, f"in-process:{self.key}", default_timeout_s, clock)
        self._shared = _key_mutex(self.key)

    def _acquire_backend(self, remaining_s: float, timeout_s: float) -> None:
        if self._shared.owner_thread == threading.get_ident():
            raise LockError(f"lock of {self.describe()} is already held by this thread (not re-entrant)")
        if not self._shared.mutex.acquire(timeout=min(remaining_s, threading.TIMEOUT_MAX)):
            raise self.timeout_error(timeout_s, "held by another lock object of this process")
        self._shared.owner_thread = threading.get_ident()

    def _release_backend(self) -> None:
        self._shared.owner_thread = None
        self._shared.mutex.release()

    def _backend_intact(self) -> bool:
        return True

    def _verify_backend(self) -> None:
        return None
