"""Shared kazoo clients: one ZooKeeper session per connect string, started lazily, closed on shutdown.

A client keeps reconnecting after outages (kazoo opens a new session once the old one expired), so
the daemon never rebuilds it. Each pooled client also owns an "orphan" list: lock nodes we gave up
on (acquire timeout, release during an outage) but could not delete yet. While our session lives, an
undeleted node of ours would block every writer, Java ones included, so orphans are deleted as soon
as the connection is back; they vanish by themselves when the session expires.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.retry import KazooRetry

from service.config.locking import ZookeeperLockSettings
from service.errors import LockError
from service.lock.znodes import find_protected

log = logging.getLogger(__name__)

ClientFactory = Callable[[ZookeeperLockSettings], KazooClient]
PoolKey = tuple[str, int]


def new_kazoo_client(settings: ZookeeperLockSettings) -> KazooClient:
    """An unstarted client with Hudi's session timeout; reconnects forever (backoff <= retry wait)."""
    retry_s = max(settings.retry_wait_time_ms, 100) / 1000
    return KazooClient(
        hosts=settings.connect_string,
        timeout=settings.session_timeout_ms / 1000,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=retry_s),
        command_retry=KazooRetry(
            max_tries=settings.num_retries,
            delay=retry_s,
            max_delay=max(settings.retry_max_wait_time_ms, 100) / 1000,
        ),
    )


class PooledClient:
    """A started kazoo client plus the lock nodes it still has to delete."""

    def __init__(self, client: KazooClient, connect_string: str):
        self.client = client
        self.connect_string = connect_string
        self._orphans: set[tuple[str, str]] = set()
        self._orphans_guard = threading.Lock()
        self._purge_guard = threading.Lock()
        self._started = False
        self._closed = False
        self._failed_start: str | None = None
        self._start_guard = threading.Lock()
        client.add_listener(self._on_state)

    def ensure_started(self, timeout_s: float) -> None:
        with self._start_guard:
            if self._started:
                return
            if self._closed:
                # The pool closed this entry after `get` handed it out: starting it now would leave
                # a client reconnecting in the background that nobody ever stops.
                raise LockError(f"ZooKeeper client pool for {self.connect_string} is closed")
            if self._failed_start is not None:
                # Another caller's start of this client timed out and the pool dropped the entry
                # (`KazooClientPool.get`): started now, the client would run outside the pool and
                # reconnect forever after `KazooClientPool.close`. Fail as that attempt did.
                raise LockError(self._failed_start)
            try:
                self.client.start(timeout=max(timeout_s, 0.001))
            except KazooTimeoutError:
                # `KazooClient.start` stopped and closed the client before raising.
                where = f"ZooKeeper {self.connect_string}"
                self._failed_start = f"cannot connect to {where} within {timeout_s:g} s"
                raise LockError(self._failed_start) from None
            self._started = True

    def close(self) -> None:
        with self._start_guard:
            self._closed = True
            if self._started:
                self.client.stop()
                self._started = False
            self.client.close()

    def discard(self, lock_path: str, prefix: str, timeout_s: float) -> None:
        """Delete our node with `prefix` under `lock_path`: now if connected, else once reconnected."""
        with self._orphans_guard:
            self._orphans.add((lock_path, prefix))
        if self.client.connected:
            self.purge_orphans(timeout_s)

    def orphan_count(self) -> int:
        with self._orphans_guard:
            return len(self._orphans)

    def purge_orphans(self, timeout_s: float) -> None:
        with self._purge_guard:
            with self._orphans_guard:
                pending = sorted(self._orphans)
            for lock_path, prefix in pending:
                if self._purge_one(lock_path, prefix, timeout_s):
                    with self._orphans_guard:
                        self._orphans.discard((lock_path, prefix))

    def _purge_one(self, lock_path: str, prefix: str, timeout_s: float) -> bool:
        try:
            children = self.client.get_children_async(lock_path).get(timeout=timeout_s)
            node = find_protected(children, prefix)
            if node is not None:
                self.client.delete_async(f"{lock_path}/{node}").get(timeout=timeout_s)
                log.info("deleted abandoned lock node %s/%s on %s", lock_path, node, self.connect_string)
            return True
        except (NoNodeError, SessionExpiredError):
            return True  # no node, or its session (and so the node) is gone
        except (KazooException, KazooTimeoutError) as error:
            log.warning("could not delete abandoned lock node %s/%s* yet: %r", lock_path, prefix, error)
            return False

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's connection thread: never block here.
        if state == KazooState.LOST:
            with self._orphans_guard:
                self._orphans.clear()  # ephemeral nodes died with the session
        elif state == KazooState.CONNECTED and self.orphan_count():
            self.client.handler.spawn(self.purge_orphans, 10.0)


class KazooClientPool:
    """Pooled clients keyed by (connect string, session timeout)."""

    def __init__(self, client_factory: ClientFactory = new_kazoo_client):
        self._client_factory = client_factory
        self._entries: dict[PoolKey, PooledClient] = {}
        self._guard = threading.Lock()
        self._closed = False

    def get(self, settings: ZookeeperLockSettings) -> PooledClient:
        """The started client for `settings`; LockError if it cannot connect in `connection_timeout_ms`."""
        key = (settings.connect_string, settings.session_timeout_ms)
        with self._guard:
            if self._closed:
                # A lock that outlives its daemon's shutdown must not open a client nobody closes.
                raise LockError(f"ZooKeeper client pool for {settings.connect_string} is closed")
            entry = self._entries.get(key)
            if entry is None:
                entry = PooledClient(self._client_factory(settings), settings.connect_string)
                self._entries[key] = entry
        try:
            entry.ensure_started(settings.connection_timeout_ms / 1000)
        except LockError:
            with self._guard:  # kazoo closed it after the failed start: build a fresh one next time
                if self._entries.get(key) is entry:
                    del self._entries[key]
            raise
        return entry

    def close(self) -> None:
        """Stop and close every client; held locks are lost (their sessions end)."""
        with self._guard:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            try:
                entry.close()
            except KazooException as error:
                log.warning("closing ZooKeeper client of %s failed: %r", entry.connect_string, error)
