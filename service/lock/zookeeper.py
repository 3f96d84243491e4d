"""ZooKeeper table lock, mutually exclusive with Hudi 0.14/0.15's `ZookeeperBasedLockProvider`.

Hudi's writers take a Curator `InterProcessMutex` on `<base_path>/<lock_key>`; we join the same queue
with Curator's node names and ordering (see `znodes`), built on plain kazoo primitives:

1. create an EPHEMERAL_SEQUENTIAL child `_c_<uuid>-lock-` (missing parents are created persistent,
   as Curator 2.7 does);
2. list the children in Curator's order: first holds the lock, otherwise watch the predecessor and
   list again when it goes;
3. release (or an acquire that times out) deletes our node.

Failure semantics:
- Connection loss while creating: the create may have happened, so we look for our `_c_<uuid>`
  prefix before creating again (Curator's "protection").
- Session SUSPENDED or LOST while held: the lock must be presumed lost (another writer may hold it once
  the session expires). `is_held` turns False and `check_held()` raises for the rest of this hold,
  even if the connection comes back; the committer aborts and releases.
- A node we could not delete (outage) is deleted on reconnection, or dies with its session.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, WatchedEvent

from service.config.locking import ZookeeperLockSettings
from service.errors import LockError
from service.lock.base import Clock, TableLock
from service.lock.kazoo_pool import KazooClientPool, PooledClient
from service.lock.znodes import find_protected, new_protected_prefix, ordered_contenders

__all__ = [
    "KazooClientPool",
    "ZookeeperLockSettings",
    "ZookeeperTableLock",
    "close_default_pool",
    "default_pool",
]

log = logging.getLogger(__name__)

_TRANSIENT = (ConnectionLoss, OperationTimeoutError)
_RETRY_PAUSE_S = 0.1
_MIN_ROUND_TRIP_S = 1.0


class ZookeeperTableLock(TableLock):
    """A Curator-compatible InterProcessMutex on `settings.lock_path` (see the module docstring)."""

    def __init__(
        self,
        settings: ZookeeperLockSettings,
        table_name: str,
        pool: KazooClientPool | None = None,
        clock: Clock = time.monotonic,
    ):
        super().__init__(table_name, settings.lock_path, settings.wait_time_ms / 1000, clock)
        self.settings = settings
        self._pool = pool if pool is not None else default_pool()
        self._entry: PooledClient | None = None
        self._prefix: str | None = None
        self._node: str | None = None
        self._owner_session: int | None = None
        self._wake = threading.Event()
        self._disruptions = 0  # SUSPENDED/LOST transitions seen; a hold is valid while unchanged
        self._held_generation = -1
        self._session_lost = False  # LOST while held: the server already deleted our node

    def describe(self) -> str:
        where = f"znode {self.lock_path} on ZooKeeper {self.settings.connect_string}"
        return f"table '{self.table_name}' at {where}"

    @property
    def node_path(self) -> str | None:
        """Our contender znode while held."""
        return None if self._node is None else f"{self.lock_path}/{self._node}"

    @property
    def _op_timeout_s(self) -> float:
        return self.settings.connection_timeout_ms / 1000

    def _acquire_backend(self, remaining_s: float, timeout_s: float) -> None:
        entry = self._pool.get(self.settings)  # connecting is bounded by connection_timeout_ms, not the wait
        deadline = self._clock() + remaining_s
        if entry.orphan_count():
            entry.purge_orphans(min(max(deadline - self._clock(), _MIN_ROUND_TRIP_S), self._op_timeout_s))
        self._entry = entry
        self._session_lost = False
        self._prefix = new_protected_prefix()
        entry.client.add_listener(self._on_state)
        try:
            self._queue_until_first(entry.client, self._prefix, deadline, timeout_s)
        except BaseException:
            entry.client.remove_listener(self._on_state)
            entry.discard(self.lock_path, self._prefix, self._op_timeout_s)
            self._node = None
            raise

    def _queue_until_first(self, client: KazooClient, prefix: str, deadline: float, timeout_s: float) -> None:
        node: str | None = None
        create_tried = False
        holder = ""
        attempted = False  # even a zero timeout gets one full attempt, as Curator's acquire(0)
        while True:
            if attempted and deadline - self._clock() <= 0:
                raise self.timeout_error(timeout_s, f"held by node {holder}" if holder else "")
            attempted = True
            # Each round trip may outlive a short wait a little, so a try-lock still gets its answer.
            remaining = max(deadline - self._clock(), _MIN_ROUND_TRIP_S)
            generation = self._disruptions
            self._wake.clear()
            try:
                if node is None:
                    look_first, create_tried = create_tried, True  # set before: the create may raise
                    node = self._create_or_find(client, prefix, look_first, remaining)
                ordered = ordered_contenders(client.get_children_async(self.lock_path).get(timeout=remaining))
                if node not in ordered:
                    node = None  # deleted with an expired session: queue up again
                    continue
                index = ordered.index(node)
                holder = ordered[0]
                if index == 0:
                    stat = client.exists_async(f"{self.lock_path}/{node}").get(timeout=remaining)
                    session = client.client_id
                    if stat is None or session is None or stat.owner_session_id != session[0]:
                        node = None
                        continue
                    if generation != self._disruptions:
                        continue  # the session wobbled meanwhile: confirm again
                    self._node, self._owner_session, self._held_generation = node, session[0], generation
                    return
                if deadline - self._clock() <= 0:
                    continue  # reported at the top
                predecessor = f"{self.lock_path}/{ordered[index - 1]}"
                if client.exists_async(predecessor, watch=self._on_watch).get(timeout=remaining) is not None:
                    self._wake.wait(max(0.0, deadline - self._clock()))
            except ConnectionClosedError as error:
                message = f"ZooKeeper client closed while acquiring the lock of {self.describe()}"
                raise LockError(message) from error
            except (SessionExpiredError, NoNodeError):
                node = None  # our ephemeral node is gone with the session, or the lock znode was removed
            except _TRANSIENT:
                self._wake.wait(min(_RETRY_PAUSE_S, max(0.0, deadline - self._clock())))
            except KazooTimeoutError:
                continue  # the deadline check at the top reports it
            except KazooException as error:
                raise LockError(f"ZooKeeper refused the lock of {self.describe()}: {error!r}") from error

    def _create_or_find(self, client: KazooClient, prefix: str, look_first: bool, timeout_s: float) -> str:
        base = f"{self.lock_path}/"
        if look_first:  # an earlier create may have succeeded without us hearing back
            try:
                children = client.get_children_async(self.lock_path).get(timeout=timeout_s)
                found = find_protected(children, prefix)
            except NoNodeError:
                found = None
            if found is not None:
                return found
        created: str = client.create_async(
            base + prefix, _node_data(), ephemeral=True, sequence=True, makepath=True
        ).get(timeout=timeout_s)
        return created[len(base) :]

    def _release_backend(self) -> None:
        entry, prefix = self._entry, self._prefix
        self._node = self._owner_session = None
        if entry is None or prefix is None:
            return
        entry.client.remove_listener(self._on_state)
        if self._session_lost:
            return
        entry.discard(self.lock_path, prefix, self._op_timeout_s)
        if entry.orphan_count():
            log.warning(
                "lock of %s released locally; its znode is deleted once ZooKeeper is reachable",
                self.describe(),
            )

    def _backend_intact(self) -> bool:
        entry = self._entry
        return entry is not None and self._disruptions == self._held_generation and entry.client.connected

    def _verify_backend(self) -> None:
        entry, node = self._entry, self.node_path
        if entry is None or node is None or self._disruptions != self._held_generation:
            raise self._lost_error()
        try:
            stat = entry.client.exists_async(node).get(timeout=self._op_timeout_s)
            children = entry.client.get_children_async(self.lock_path).get(timeout=self._op_timeout_s)
        except (KazooException, KazooTimeoutError) as error:
            message = f"cannot confirm the lock of {self.describe()} is still held: {error!r}"
            raise LockError(message) from error
        if stat is None or stat.owner_session_id != self._owner_session:
            raise LockError(f"lock node {node} of {self.describe()} is gone: the session expired")
        ordered = ordered_contenders(children)
        if not ordered or ordered[0] != self._node:
            first = ordered[0] if ordered else "?"
            raise LockError(f"lock of {self.describe()} is held by node {first}, not ours")
        if self._disruptions != self._held_generation:
            raise self._lost_error()

    def _lost_error(self) -> LockError:
        return LockError(
            f"ZooKeeper session of the lock of {self.describe()} was suspended or lost while held; "
            "another writer may hold the lock now, so the operation must abort"
        )

    def _on_state(self, state: str) -> None:
        # kazoo's connection thread: record and wake, never block.
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self._disruptions += 1
        if state == KazooState.LOST and self._node is not None:
            self._session_lost = True
        self._wake.set()

    def _on_watch(self, event: WatchedEvent) -> None:
        self._wake.set()


def _node_data() -> bytes:
    # Curator stores the local IP; nothing reads it. Ours says who we are, for operators.
    return f"hudi-table-service host={socket.gethostname()} pid={os.getpid()}".encode()


_default_pool: KazooClientPool | None = None
_default_pool_guard = threading.Lock()


def default_pool() -> KazooClientPool:
    """The process-wide client pool, closed at interpreter exit (or by `close_default_pool`)."""
    global _default_pool
    with _default_pool_guard:
        if _default_pool is None:
            _default_pool = KazooClientPool()
            atexit.register(close_default_pool)
        return _default_pool


def close_default_pool() -> None:
    """Close the shared ZooKeeper clients (daemon shutdown, after locks were released)."""
    global _default_pool
    with _default_pool_guard:
        pool, _default_pool = _default_pool, None
    if pool is not None:
        pool.close()
