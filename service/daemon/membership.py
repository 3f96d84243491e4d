"""Replicas of the daemon dividing the configured tables among themselves through ZooKeeper.

Each replica joins kazoo's `SetPartitioner` over the configured table names under `<path>` (its
`party` and `locks` children): the live members agree on who serves which table, and each table's
partition lock (`<path>/locks/<table>`) is held by one member at a time, so no table is ever held
by two replicas. A replica runs services only for the tables it holds (`holds`).

Safety does not rest on the partition alone: the table lock (Hudi's `ZookeeperBasedLockProvider`
znode) and the per-instant heartbeats still guard every commit and every execution. The partition
decides who *starts* work; a replica that loses a table mid-run keeps running only while its table
lock proves ownership (`TableLock.check_held` at each commit step), otherwise its instant is left to
the heartbeat rule and completed by the new holder once the heartbeat expires.

State changes (kazoo calls back on its own threads):
- party changed (a member joined or left), or the session SUSPENDED: the partitioner goes RELEASE;
  `holds` is False at once, then the loop releases the set and the partitioner re-allocates after
  the members were stable for `settle_seconds`;
- session LOST: the partitioner FAILS; a new one is created once the client has a new session;
- a config reload changing the table list: the partitioner is finished and created anew.

Each member also publishes `<path>/replicas/<replica_id>` (ephemeral), whose data holds a hash of
its table list: every replica must serve the same list, a differing hash is logged and counted
(`hudi_table_service_table_list_mismatch`). The node is created before joining the party, so two
live replicas never share an id (the partitioner would hand both the same share).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState
from kazoo.recipe.partitioner import SetPartitioner
from kazoo.retry import KazooRetry

from service.config.daemon import ClusterSettings, DaemonConfig
from service.config.hoodie_keys import LOCK_ZK_URL
from service.config.locking import lock_config_from_props
from service.metrics import ServiceMetrics

log = logging.getLogger(__name__)

# How often the loop looks at the members' table-list hashes when nothing wakes it.
_MEMBER_POLL_S = 2.0
_RETRY_PAUSE_S = 1.0

HeldListener = Callable[[str, frozenset[str]], None]


class _SetPartitioner(SetPartitioner):
    """kazoo's `SetPartitioner` whose lock release cannot race itself. `finish()` (the membership
    thread, when the table list changes) and an allocation kazoo aborts (its `_allocate_transition`
    thread, when the party changes) may release at once; kazoo's `_release_locks` then removes one
    lock from its list twice and its thread dies with a ValueError (seen in CI under load)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._release_guard = threading.Lock()
        super().__init__(*args, **kwargs)

    def _release_locks(self) -> None:
        with self._release_guard:
            self._acquire_event.clear()
            for lock in list(self._locks):
                try:
                    lock.release()
                except KazooException:
                    continue  # kazoo keeps what it could not release (its session's end frees it)
                with contextlib.suppress(ValueError):
                    self._locks.remove(lock)


@dataclass(frozen=True)
class ClusterZookeeper:
    """Where the members meet and how their session behaves (the lock's ZooKeeper keys)."""

    connect_string: str
    session_timeout_s: float
    connection_timeout_s: float

    @classmethod
    def of(cls, config: DaemonConfig) -> ClusterZookeeper:
        props = {
            k: str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in config.cluster_lock_properties.items()
        }
        lock = lock_config_from_props(props, "daemon.cluster")
        url = config.daemon.cluster.zookeeper_url or props.get(LOCK_ZK_URL)
        assert url, "checked by DaemonFile._cluster_zookeeper"
        return cls(url, lock.zookeeper_session_timeout_ms / 1000, lock.zookeeper_connection_timeout_ms / 1000)

    def new_client(self) -> KazooClient:
        return KazooClient(
            hosts=self.connect_string,
            timeout=self.session_timeout_s,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=2.0),
            command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
        )


def table_list_hash(tables: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(tables)).encode()).hexdigest()[:16]


class Membership:
    """This replica's share of the tables (see the module docstring); `start`, then `holds`, `stop`."""

    def __init__(
        self,
        settings: ClusterSettings,
        zookeeper: ClusterZookeeper,
        tables: Iterable[str],
        metrics: ServiceMetrics,
        on_held: HeldListener | None = None,
    ) -> None:
        self.replica_id = settings.effective_replica_id()
        self._settings = settings
        self._zookeeper = zookeeper
        self._metrics = metrics
        self._on_held = on_held
        self._client = zookeeper.new_client()
        self._tables = frozenset(tables)
        self._tables_changed = False
        self._partitioner: SetPartitioner | None = None
        self._held: frozenset[str] = frozenset()
        self._guard = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_rebalance = time.monotonic()
        self._mismatched: frozenset[str] = frozenset()
        self._acquired_state: int | None = None  # the partitioner's state_id when last seen ACQUIRED
        metrics.cluster_seconds_since_last_rebalance.set_function(
            lambda: time.monotonic() - self._last_rebalance
        )
        self._publish_held(frozenset())

    @property
    def _replicas_path(self) -> str:
        return f"{self._settings.path}/replicas"

    @property
    def _member_node(self) -> str:
        return f"{self._replicas_path}/{self.replica_id}"

    # ------------------------------------------------------------------ public
    def start(self) -> None:
        self._client.add_listener(self._on_session)
        # Connecting is retried by the loop: a replica started while ZooKeeper is down waits for it.
        self._client.start_async()
        self._thread = threading.Thread(target=self._loop, name=f"membership-{self.replica_id}", daemon=True)
        self._thread.start()
        log.info(
            "cluster member %s on ZooKeeper %s at %s: %d tables",
            self.replica_id, self._zookeeper.connect_string, self._settings.path, len(self._tables),
        )  # fmt: skip

    def holds(self, table: str) -> bool:
        """Whether this replica may start work on `table` now: the partition is acquired, the session
        is connected and the table is in our share. False at once on release, failure or suspension."""
        with self._guard:
            partitioner, held = self._partitioner, self._held
        return (
            table in held
            and partitioner is not None
            and partitioner.acquired
            and self._client.state == KazooState.CONNECTED
        )

    @property
    def held(self) -> frozenset[str]:
        with self._guard:
            return self._held

    @property
    def ready(self) -> bool:
        """The partition is settled (ACQUIRED) and the session connected."""
        partitioner = self._partitioner
        return partitioner is not None and partitioner.acquired and self._client.state == KazooState.CONNECTED

    def set_tables(self, tables: Iterable[str]) -> None:
        """A reload changed the table list: divide the new set (the partitioner is created anew)."""
        new = frozenset(tables)
        with self._guard:
            if new == self._tables:
                return
            self._tables, self._tables_changed = new, True
        self._wake.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Release our share, leave the party and close the session."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._client.remove_listener(self._on_session)
        try:
            self._client.stop()
        finally:
            self._client.close()
        self._metrics.cluster_members.set(0)

    # ------------------------------------------------------------------ the loop
    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                self._step()
            except (KazooException, KazooTimeoutError) as exc:
                log.warning("cluster member %s: ZooKeeper: %r; retrying", self.replica_id, exc)
                self._wake.wait(_RETRY_PAUSE_S)
                continue
            except Exception:  # the loop must survive anything: it alone releases our tables
                log.exception("cluster member %s: membership step failed; retrying", self.replica_id)
                self._wake.wait(_RETRY_PAUSE_S)
                continue
            self._wake.wait(_MEMBER_POLL_S)
        self._finish()

    def _step(self) -> None:
        partitioner = self._partitioner
        with self._guard:
            changed, self._tables_changed = self._tables_changed, False
        if partitioner is not None and (changed or partitioner.failed):
            if changed:
                log.info("cluster member %s: table list changed; dividing the new list", self.replica_id)
            else:
                log.warning(
                    "cluster member %s: partition failed (session lost); joining anew", self.replica_id
                )
            self._finish()
            partitioner = None
        if partitioner is None:
            if not self._client.connected:
                return  # the session listener wakes us once connected
            self._register()
            self._delete_stale_nodes()
            self._acquired_state = None
            self._partitioner = partitioner = self._new_partitioner()
        if partitioner.release:
            self._set_held(frozenset())  # before the locks go: nobody else can hold them yet
            partitioner.release_set()
        elif partitioner.acquired and partitioner.state_id != self._acquired_state:
            self._acquired_state = partitioner.state_id  # one allocation completed: one rebalance
            share = frozenset(partitioner)
            self._last_rebalance = time.monotonic()
            self._metrics.cluster_rebalances.inc()
            self._set_held(share)
            log.info(
                "cluster member %s holds %d of %d tables: %s",
                self.replica_id, len(share), len(self._tables), ", ".join(sorted(share)) or "(none)",
            )  # fmt: skip
        self._check_members()

    def _new_partitioner(self) -> SetPartitioner:
        with self._guard:
            tables = sorted(self._tables)
        return _SetPartitioner(
            self._client,
            self._settings.path,
            tables,
            identifier=self.replica_id,
            time_boundary=self._settings.settle_seconds,
            state_change_event=_WakeEvent(self._wake),
        )

    def _finish(self) -> None:
        """Stop holding (notified first), then release the partition locks and leave the party."""
        self._set_held(frozenset())
        partitioner, self._partitioner = self._partitioner, None
        if partitioner is not None:
            try:
                partitioner.finish()
            except (KazooException, KazooTimeoutError) as exc:  # the session's end removes them anyway
                log.warning("cluster member %s: releasing its partition failed: %r", self.replica_id, exc)

    def _set_held(self, share: frozenset[str]) -> None:
        with self._guard:
            if share == self._held:
                return
            self._held = share
        if self._on_held is not None:
            self._on_held(self.replica_id, share)
        self._publish_held(share)

    def _publish_held(self, share: frozenset[str]) -> None:
        with self._guard:
            tables = self._tables
        for table in tables:
            self._metrics.table_held.labels(table).set(int(table in share))

    def _register(self) -> None:
        """Create our member node; another live session's node with our id is an error worth a loud log."""
        with self._guard:
            tables = self._tables
        data = json.dumps(
            {"replica_id": self.replica_id, "tables": len(tables), "tables_hash": table_list_hash(tables)}
        )
        self._client.ensure_path(self._replicas_path)
        try:
            self._client.create(self._member_node, data.encode(), ephemeral=True)
        except NodeExistsError:
            _, stat = self._client.get(self._member_node)
            session = self._client.client_id
            if session is None or stat.owner_session_id != session[0]:
                raise KazooException(
                    f"replica id {self.replica_id!r} is in use by another live ZooKeeper session "
                    f"({self._member_node}); waiting for it to end"
                ) from None
            self._client.set(self._member_node, data.encode())

    def _delete_stale_nodes(self) -> None:
        """Delete party and partition-lock nodes our session still owns from a partitioner that failed
        to clean up (its release ran while the connection was down, the session survived): left in
        place, our old party node would count us twice and our old lock nodes would block our own
        new partitioner."""
        session = self._client.client_id
        if session is None:
            return
        parents = [f"{self._settings.path}/party"]
        locks = f"{self._settings.path}/locks"
        with contextlib.suppress(NoNodeError):
            parents += [f"{locks}/{table}" for table in self._client.get_children(locks)]
        for parent in parents:
            try:
                children = self._client.get_children(parent)
            except NoNodeError:
                continue
            for child in children:
                node = f"{parent}/{child}"
                stat = self._client.exists(node)
                if stat is not None and stat.owner_session_id == session[0]:
                    log.info("cluster member %s: deleting its stale node %s", self.replica_id, node)
                    with contextlib.suppress(NoNodeError):
                        self._client.delete(node)

    def _check_members(self) -> None:
        with self._guard:
            ours = table_list_hash(self._tables)
        mismatched = set()
        children = self._client.get_children(self._replicas_path)
        for child in children:
            try:
                data, _ = self._client.get(f"{self._replicas_path}/{child}")
                theirs = json.loads(data.decode()).get("tables_hash")
            except NoNodeError:
                continue
            except ValueError:
                theirs = None
            if theirs != ours:
                mismatched.add(child)
        self._metrics.cluster_members.set(len(children))
        self._metrics.table_list_mismatch.set(int(bool(mismatched)))
        if frozenset(mismatched) != self._mismatched:
            self._mismatched = frozenset(mismatched)
            if mismatched:
                log.error(
                    "cluster member %s: replicas %s serve a different table list (hash != %s); every "
                    "replica must be given the same tables, or some tables are served by nobody",
                    self.replica_id, ", ".join(sorted(mismatched)), ours,
                )  # fmt: skip
            else:
                log.info("cluster member %s: every replica serves the same table list", self.replica_id)

    def _on_session(self, state: str) -> None:
        # kazoo's connection thread: never block. `holds` already reads the state itself.
        if state != KazooState.CONNECTED:
            log.warning("cluster member %s: ZooKeeper session %s; no new work starts", self.replica_id, state)
        self._wake.set()


class _WakeEvent(threading.Event):
    """The partitioner's state-change event: also wakes the membership loop."""

    def __init__(self, wake: threading.Event) -> None:
        super().__init__()
        self._wake_loop = wake

    def set(self) -> None:
        super().set()
        self._wake_loop.set()
