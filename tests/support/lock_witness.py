"""A witness of every instant the table services complete: was the committing thread's ZooKeeper lock
held on the server, before and after the completed instant file was created?

`LockWitness.install(monkeypatch, bases)` wraps `ZookeeperTableLock.__init__` (to know every lock of
the process) and `Storage.create_if_absent` (every completed instant goes through it). For a
completed instant of one of `bases`, it asks ZooKeeper itself, through a client of its own: among
the locks the creating thread holds (`TableLock` records its owner thread), one must be the first
contender of its lock znode (Curator's order) with its ephemeral node owned by its session. Checked
before and after the create with the same node and session, the lock was held throughout: a session
never comes back, and a later contender's sequence number is always higher. ZooKeeper unreachable
counts as not held.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from dataclasses import dataclass

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from service.lock.znodes import ordered_contenders
from service.lock.zookeeper import ZookeeperTableLock
from service.table.storage import Storage

_COMPLETED = re.compile(r"^\.hoodie/(\d+)\.(commit|deltacommit|replacecommit|clean|rollback)$")


@dataclass(frozen=True)
class Witnessed:
    base: str
    instant: str  # the completed instant's file name
    at: float  # time.time() of the create
    held_by: str | None  # the lock node that was first throughout, None if none was


class LockWitness:
    def __init__(self, connect_string: str) -> None:
        self._connect_string = connect_string
        self._locks: weakref.WeakSet[ZookeeperTableLock] = weakref.WeakSet()
        self._guard = threading.Lock()
        self.commits: list[Witnessed] = []

    def install(self, monkeypatch: pytest.MonkeyPatch, bases: list[str]) -> None:
        init, create = ZookeeperTableLock.__init__, Storage.create_if_absent
        witness = self

        def init_and_register(self: ZookeeperTableLock, *args: object, **kwargs: object) -> None:
            init(self, *args, **kwargs)  # type: ignore[arg-type]
            with witness._guard:
                witness._locks.add(self)

        def create_witnessed(self: Storage, rel: str, data: bytes) -> None:
            match = _COMPLETED.match(rel)
            if self._root not in bases or match is None:
                return create(self, rel, data)
            before = witness._held_node()
            create(self, rel, data)
            after = witness._held_node()
            held = before if before is not None and before == after else None
            with witness._guard:
                witness.commits.append(Witnessed(self._root, rel.rsplit("/", 1)[1], time.time(), held))
            return None

        monkeypatch.setattr(ZookeeperTableLock, "__init__", init_and_register)
        monkeypatch.setattr(Storage, "create_if_absent", create_witnessed)

    def unheld(self) -> list[Witnessed]:
        with self._guard:
            return [c for c in self.commits if c.held_by is None]

    def _held_node(self) -> str | None:
        """The node of a lock this thread holds that ZooKeeper confirms first and ours, or None."""
        me = threading.get_ident()
        with self._guard:
            mine = [lock for lock in self._locks if lock._owner_thread == me and lock.node_path is not None]
        if not mine:
            return None
        client = KazooClient(hosts=self._connect_string, timeout=5)
        try:
            client.start(timeout=5)
            for lock in mine:
                node = lock.node_path
                stat = client.exists(node) if node is not None else None
                if node is None or stat is None or stat.owner_session_id != lock._owner_session:
                    continue
                ordered = ordered_contenders(client.get_children(lock.lock_path))
                if ordered and f"{lock.lock_path}/{ordered[0]}" == node:
                    return node
            return None
        except (KazooException, KazooTimeoutError):
            return None  # ZooKeeper unreachable: nothing proves the lock held
        finally:
            client.stop()
            client.close()
