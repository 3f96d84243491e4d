"""What ZooKeeper shows of a table's lock, read-only, for `check`.

The services and Hudi's writers exclude each other only when both lock the same znode,
`<hoodie.write.lock.zookeeper.base_path>/<lock_key>` on the same ensemble (`ZookeeperBasedLockProvider`:
a Curator `InterProcessMutex` there). The writers' settings are not stored with the table, so the
next best evidence is the ensemble itself: the lock znode exists once anyone has locked it (Curator
creates it as a parent of its contenders' nodes), its children are the contenders now, and the other
znodes under the base path are locks taken under other keys (other tables, or writers whose
`lock_key` or `hoodie.table.name` differs from ours). Nothing is created, and the session is closed
before returning.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from service.config.locking import ZookeeperLockSettings


@dataclass(frozen=True)
class ZookeeperLockProbe:
    connect_string: str
    lock_path: str
    reachable: bool
    error: str | None = None
    lock_node_exists: bool = False
    contenders: int = 0  # children of the lock znode: the holder and those waiting, now
    other_locks: tuple[str, ...] = ()  # other znodes under the base path

    @property
    def verdict(self) -> str:
        where = f"{self.lock_path} on {self.connect_string}"
        if not self.reachable:
            return f"ZooKeeper not reachable ({self.error}): the services could not lock {where}"
        if self.lock_node_exists:
            held = f"{self.contenders} holding or waiting now" if self.contenders else "free now"
            return f"{where} has been locked before ({held}): writers using these settings are excluded"
        if self.other_locks:
            others = ", ".join(self.other_locks)
            return (
                f"nobody has locked {where} yet; locks under its base path: {others}: if one is this "
                "table's, the writers use another hoodie.write.lock.zookeeper.lock_key (default: "
                "hoodie.table.name) and the services would not exclude them"
            )
        return (
            f"nobody has locked {where} or anything under its base path yet: the writers use another "
            "hoodie.write.lock.zookeeper.base_path or url, or have not locked since it was created "
            "(a single writer takes no lock)"
        )


def probe_zookeeper_lock(settings: ZookeeperLockSettings, timeout_s: float = 5.0) -> ZookeeperLockProbe:
    path = settings.lock_path
    client = KazooClient(
        hosts=settings.connect_string,
        timeout=settings.session_timeout_ms / 1000,
        connection_retry=KazooRetry(max_tries=0),
        command_retry=KazooRetry(max_tries=1),
    )
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        error = f"no session within {timeout_s:g} s"
        return ZookeeperLockProbe(settings.connect_string, path, reachable=False, error=error)
    try:
        exists = client.exists(path) is not None
        contenders = len(_children(client, path))
        others = tuple(sorted(c for c in _children(client, settings.base_path) if c != settings.lock_key))
        return ZookeeperLockProbe(settings.connect_string, path, True, None, exists, contenders, others)
    except KazooException as exc:
        error = f"{type(exc).__name__}: {exc}"
        return ZookeeperLockProbe(settings.connect_string, path, reachable=False, error=error)
    finally:
        client.stop()
        client.close()


def _children(client: KazooClient, path: str) -> list[str]:
    try:
        return list(client.get_children(path))
    except NoNodeError:  # never created, or gone since (Curator containers are deleted when empty)
        return []
