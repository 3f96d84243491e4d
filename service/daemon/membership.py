"""Replicas of the daemon dividing the configured tables among themselves through ZooKeeper.

Each replica registers `<path>/replicas/<replica_id>` (ephemeral; its data holds a hash of its table
list). The live members, once unchanged for `settle_seconds`, give every replica the same division
(`service.daemon.assignment.divide`: rendezvous hashing with bounded loads), and a replica serves a
table of its share only while it holds the table's claim, `<path>/claims/<table>`: an ephemeral node
it created in its current session, so no table is ever held by two replicas. A replica runs services
only for the tables it holds (`holds`).

Only the difference moves. When the members change, a replica releases the tables no longer in its
share (it stops holding them first, then deletes their claims) and claims those newly in it, all
requests pipelined; a claim another replica still holds is retried when that node goes (a watch).
A killed replica's claims go with its session, so the survivors claim its tables as soon as ZooKeeper
has expired it and the settle time passed, without letting go of their own. (kazoo's `SetPartitioner`,
used before, released every lock at each change and acquired its new set one lock at a time: at
10,000 tables, minutes of serving nothing.)

Safety does not rest on the claims alone: the table lock (Hudi's `ZookeeperBasedLockProvider`
znode) and the per-instant heartbeats still guard every commit and every execution. The claim
decides who *starts* work; a replica that loses a table mid-run keeps running only while its table
lock proves ownership (`TableLock.check_held` at each commit step), otherwise its instant is left to
the heartbeat rule and completed by the new holder once the heartbeat expires.

Sessions: while the connection is away (SUSPENDED) `holds` is False; the session surviving, the claims
do too. A new session (the old one LOST) holds nothing until it has claimed anew: `holds` compares the
session that made the claims with the current one. Every replica must serve the same table list; a
differing hash is logged and counted (`hudi_table_service_table_list_mismatch`). The member node is
created first, so two live replicas never share an id. Replicas of an older release divided the tables
with kazoo's partitioner (`<path>/party`): while any is a member, this one holds nothing and says so,
so a rolling upgrade never serves a table twice.
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
from kazoo.retry import KazooRetry

from service.config.daemon import ClusterSettings, DaemonConfig
from service.config.hoodie_keys import LOCK_ZK_URL
from service.config.locking import lock_config_from_props
from service.daemon.assignment import share_of
from service.metrics import ServiceMetrics

log = logging.getLogger(__name__)

# How often the loop looks at the members and their table-list hashes when nothing wakes it.
_MEMBER_POLL_S = 2.0
_RETRY_PAUSE_S = 1.0
# A claim another replica holds is tried again when its node goes (a watch) or after this long.
_CLAIM_RETRY_S = 30.0
# The wire format of the division: a replica of an older release has no `protocol` in its node.
PROTOCOL = 2

HeldListener = Callable[[str, frozenset[str]], None]


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
        self._guard = threading.Lock()
        # Under the guard (read by `holds` on tick threads):
        self._tables = frozenset(tables)
        self._tables_changed = False
        self._held: frozenset[str] = frozenset()  # claims confirmed ours, in `_held_session`
        self._held_session: int | None = None
        self._share: frozenset[str] | None = None  # our part of the settled division, once made
        self._waiting: dict[str, float] = {}  # claims another replica holds -> when we last tried
        # The loop's own:
        self._session: int | None = None  # the session our member node belongs to
        self._members: frozenset[str] | None = None
        self._members_since = time.monotonic()
        self._division: tuple[frozenset[str], frozenset[str]] | None = None
        self._unknown: set[str] = set()  # claims sent whose reply was lost: ours or not, to be read
        self._releasing: set[str] = set()  # claims of ours still to delete
        self._counted: frozenset[str] | None = None  # the last share counted as a completed division
        self._older_release: frozenset[str] = frozenset()
        self._mismatched: frozenset[str] = frozenset()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_rebalance = time.monotonic()
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

    def _claim_node(self, table: str) -> str:
        return f"{self._settings.path}/claims/{table}"

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
        """Whether this replica may start work on `table` now: its claim is ours, made in the session
        that is connected now. False at once when the connection goes or the session is lost."""
        with self._guard:
            held, session = self._held, self._held_session
        return table in held and self._connected_session() == session

    @property
    def held(self) -> frozenset[str]:
        with self._guard:
            return self._held

    @property
    def ready(self) -> bool:
        """The division is settled and this replica holds its whole share, connected."""
        with self._guard:
            held, session, share = self._held, self._held_session, self._share
        return share is not None and held == share and self._connected_session() == session

    def set_tables(self, tables: Iterable[str]) -> None:
        """A reload changed the table list: divide the new list (only the difference moves)."""
        new = frozenset(tables)
        with self._guard:
            if new == self._tables:
                return
            self._tables, self._tables_changed = new, True
        self._wake.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop holding, then close the session: ZooKeeper deletes our member node and claims with it."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._set_held(frozenset(), None)
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
                pause = self._step()
            except (KazooException, KazooTimeoutError) as exc:
                log.warning("cluster member %s: ZooKeeper: %r; retrying", self.replica_id, exc)
                pause = _RETRY_PAUSE_S
            except Exception:  # the loop must survive anything: it alone lets go of our tables
                log.exception("cluster member %s: membership step failed; retrying", self.replica_id)
                pause = _RETRY_PAUSE_S
            self._wake.wait(pause)
        self._set_held(frozenset(), None)

    def _step(self) -> float:
        """One look at ZooKeeper; returns how long to wait before the next unless something wakes us."""
        session = self._connected_session()
        if session is None:
            if self._client.state == KazooState.LOST:  # our claims went with the session
                self._set_held(frozenset(), None)
            return _MEMBER_POLL_S  # the session listener wakes us once connected
        with self._guard:
            changed, self._tables_changed = self._tables_changed, False
            tables = self._tables
        if session != self._session:
            self._new_session(session, tables)
        elif changed:
            self._register(session, tables)  # the new list's hash
        if self._unknown:
            self._read_unknown(session)
        if self._older_members():
            self._let_go(self._held, session)
            return _MEMBER_POLL_S
        members = frozenset(self._client.get_children(self._replicas_path, watch=self._on_watch))
        if self.replica_id not in members:  # our node was deleted under a live session: we are no member
            log.warning("cluster member %s: its member node is gone; registering again", self.replica_id)
            self._register(session, tables)
            members |= {self.replica_id}
        now = time.monotonic()
        if members != self._members:
            self._members, self._members_since = members, now
            self._metrics.cluster_members.set(len(members))
        self._check_members(members, tables)
        unsettled = self._members_since + self._settings.settle_seconds - now
        if unsettled > 0:  # a rolling restart divides once, not once per replica
            self._let_go(frozenset(), session)  # only what an earlier release left behind
            return min(unsettled, _MEMBER_POLL_S)
        if (members, tables) != self._division:
            self._division = (members, tables)
            share = share_of(self.replica_id, members, tables)
            with self._guard:
                self._share = share
        with self._guard:
            share = self._share or frozenset()
            held = self._held
        self._let_go(held - share, session)
        self._claim(share - held, session, now)
        self._count_division(share)
        return _MEMBER_POLL_S

    def _new_session(self, session: int, tables: frozenset[str]) -> None:
        """A first session, or one after ours was lost: its claims went with it, we hold nothing."""
        self._set_held(frozenset(), None)
        self._unknown.clear()
        self._releasing.clear()
        with self._guard:
            self._waiting.clear()
            self._share = None
        self._members = self._division = self._counted = None
        self._register(session, tables)  # raises while another live session has our id
        self._client.ensure_path(f"{self._settings.path}/claims")
        self._session = session
        self._set_held(frozenset(), session)

    def _claim(self, tables: frozenset[str], session: int, now: float) -> None:
        """Create the claims of `tables`, pipelined; those held by another replica are watched and tried
        again when their node goes (or after `_CLAIM_RETRY_S`, a watch being lost with a connection)."""
        with self._guard:
            waiting = self._waiting
            todo = sorted(t for t in tables if now - waiting.get(t, -_CLAIM_RETRY_S) >= _CLAIM_RETRY_S)
        if not todo:
            return
        data = self.replica_id.encode()
        got: list[str] = []
        self._unknown.update(todo)
        try:
            create = self._client.create_async
            requests = [(t, create(self._claim_node(t), data, ephemeral=True)) for t in todo]
            busy = []
            for table, request in requests:
                try:
                    request.get()
                    got.append(table)
                except NodeExistsError:
                    busy.append(table)
                self._unknown.discard(table)
            for table, stat in self._claim_stats(busy, watch=self._on_claim_watch):
                if stat is not None and stat.owner_session_id == session:
                    got.append(table)  # made by us in this session, its reply lost
                elif stat is not None:
                    with self._guard:
                        self._waiting[table] = now
                else:
                    self._wake.set()  # gone meanwhile: try it again at once
        finally:
            if got:
                with self._guard:
                    for table in got:
                        self._waiting.pop(table, None)
                    held = self._held | frozenset(got)
                self._set_held(held, session)

    def _read_unknown(self, session: int) -> None:
        """Claims whose create's reply was lost with the connection: ours if our session owns the node
        (then held, and let go by the step if not in our share), else forgotten."""
        stats = self._claim_stats(sorted(self._unknown))
        self._unknown.clear()
        ours = frozenset(t for t, stat in stats if stat is not None and stat.owner_session_id == session)
        if ours:
            self._set_held(self.held | ours, session)

    def _claim_stats(
        self, tables: Iterable[str], watch: Callable[[Any], None] | None = None
    ) -> list[tuple[str, Any]]:
        """Each claim node's stat (None: no node), requests pipelined; `watch` set on each."""
        checks = [(t, self._client.exists_async(self._claim_node(t), watch=watch)) for t in tables]
        return [(table, check.get()) for table, check in checks]

    def _let_go(self, tables: frozenset[str], session: int) -> None:
        """Stop holding `tables` (at once), then delete their claims, pipelined; a delete that fails is
        tried again at the next step."""
        if tables:
            self._set_held(self.held - tables, session)
            self._releasing.update(tables)
        if not self._releasing:
            return
        requests = [(t, self._client.delete_async(self._claim_node(t))) for t in sorted(self._releasing)]
        for table, request in requests:
            with contextlib.suppress(NoNodeError):
                request.get()
            self._releasing.discard(table)

    def _older_members(self) -> bool:
        """Whether replicas of an older release (kazoo's partitioner, `<path>/party`) are members: they
        divide the tables among themselves, not with us, so we hold nothing until they are gone."""
        try:
            party = frozenset(self._client.get_children(f"{self._settings.path}/party", watch=self._on_watch))
        except NoNodeError:
            party = frozenset()
        if party != self._older_release:
            self._older_release = party
            if party:
                log.error(
                    "cluster member %s: %d replicas of an older release divide the tables with kazoo's "
                    "partitioner (%s/party); this replica holds nothing until they have stopped",
                    self.replica_id, len(party), self._settings.path,
                )  # fmt: skip
            else:
                log.info("cluster member %s: no replica of an older release is left", self.replica_id)
        return bool(party)

    def _count_division(self, share: frozenset[str]) -> None:
        with self._guard:
            complete = self._held == share
        if not complete or share == self._counted:
            return
        self._counted = share
        self._last_rebalance = time.monotonic()
        self._metrics.cluster_rebalances.inc()
        names = sorted(share)
        shown = ", ".join(names[:20]) + (f", ... ({len(names) - 20} more)" if len(names) > 20 else "")
        log.info(
            "cluster member %s holds %d of %d tables among %d replicas: %s",
            self.replica_id, len(share), len(self._tables), len(self._members or ()), shown or "(none)",
        )  # fmt: skip

    def _connected_session(self) -> int | None:
        client_id = self._client.client_id
        if client_id is None or self._client.state != KazooState.CONNECTED:
            return None
        return int(client_id[0])

    def _set_held(self, share: frozenset[str], session: int | None) -> None:
        with self._guard:
            changed = share != self._held
            self._held, self._held_session = share, session
        if not changed:
            return
        if self._on_held is not None:
            self._on_held(self.replica_id, share)
        self._publish_held(share)

    def _publish_held(self, share: frozenset[str]) -> None:
        with self._guard:
            tables = self._tables
        for table in tables:
            self._metrics.table_held.labels(table).set(int(table in share))

    def _register(self, session: int, tables: frozenset[str]) -> None:
        """Create (or update) our member node; another live session's node with our id is an error
        worth a loud log."""
        data = json.dumps(
            {
                "replica_id": self.replica_id,
                "tables": len(tables),
                "tables_hash": table_list_hash(tables),
                "protocol": PROTOCOL,
            }
        ).encode()
        self._client.ensure_path(self._replicas_path)
        try:
            self._client.create(self._member_node, data, ephemeral=True)
        except NodeExistsError:
            _, stat = self._client.get(self._member_node)
            if stat.owner_session_id != session:
                raise KazooException(
                    f"replica id {self.replica_id!r} is in use by another live ZooKeeper session "
                    f"({self._member_node}); waiting for it to end"
                ) from None
            self._client.set(self._member_node, data)

    def _check_members(self, members: frozenset[str], tables: frozenset[str]) -> None:
        ours = table_list_hash(tables)
        mismatched = set()
        for child in members:
            try:
                data, _ = self._client.get(f"{self._replicas_path}/{child}")
                theirs = json.loads(data.decode()).get("tables_hash")
            except NoNodeError:
                continue
            except ValueError:
                theirs = None
            if theirs != ours:
                mismatched.add(child)
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

    # ------------------------------------------------------------------ kazoo's threads: never block
    def _on_session(self, state: str) -> None:
        if state != KazooState.CONNECTED:
            log.warning("cluster member %s: ZooKeeper session %s; no new work starts", self.replica_id, state)
        self._wake.set()

    def _on_watch(self, event: Any) -> None:
        self._wake.set()

    def _on_claim_watch(self, event: Any) -> None:
        table = str(event.path).rsplit("/", 1)[-1]
        with self._guard:
            self._waiting.pop(table, None)  # its holder let go: try it at once
        self._wake.set()
