"""Soak (issue 16): three replicas as processes, Hudi's Spark writer upserting into two tables, and a
replica SIGKILLed (and restarted a little later) every `HTS_SOAK_KILL_EVERY` seconds (default 25)
for `HTS_SOAK_SECONDS` (default 80 s: three kills, about 100 s of CI; one kill a minute for 120 s hit
one running clustering in 134 s; the issue's 10 minutes is `HTS_SOAK_SECONDS=600`).

Each kill hits the replica running a clustering (executing or committing, as its status API says),
waiting up to `MID_SERVICE_WAIT_S` for one (issue 31: a kill of an idle replica tests little); only
when none runs by then does it fall back to the scheduled replica. Every run must kill at least one
replica mid-clustering. How long each replica stays down comes from `HTS_SOAK_SEED` (random when
unset); seed and schedule are printed and written to `<tmp>/soak.log`. At the end, after a quiet
period in which the daemon finishes what the dead left: every order the writer committed is read
exactly once with its latest value by Hudi's reader (files listed through the metadata table and
through storage alike), neither timeline holds a requested or inflight instant, and the daemon
clustered and cleaned each table (completed replacecommits and cleans seen on its timeline).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.demo.hudi_writer import demo_batch, demo_writer_options
from service.demo.live import verify_demo_table
from service.table.instant import Action
from service.table.table import HudiTable
from tests.support.ports import free_port
from tests.support.replicas import ReplicaProcess
from tests.support.zookeeper import ZookeeperServer

SOAK_SECONDS = float(os.environ.get("HTS_SOAK_SECONDS", "80"))
KILL_EVERY_S = float(os.environ.get("HTS_SOAK_KILL_EVERY", "25"))
QUIET_SECONDS = 240.0  # at most, after the last kill: the daemon finishes what the dead replicas left
MID_SERVICE_WAIT_S = 45.0  # at most, at each kill time: for a replica to be running a clustering
# pytest-timeout: the soak and the quiet period, plus starting, verifying and stopping (a longer
# HTS_SOAK_SECONDS gets a longer limit).
TIMEOUT_S = int(SOAK_SECONDS + QUIET_SECONDS + 900)
RUNNING = ("executing", "committing")

# A long variant: CI's budget keeps `test_cluster_kill_mid_clustering` (one replica killed mid-clustering,
# the plan taken over and completed once); HTS_LONG_TESTS=1 runs this soak.
pytestmark = [
    pytest.mark.long,
    pytest.mark.spark,
    pytest.mark.hudi,
    pytest.mark.zk,
    pytest.mark.slow,
    pytest.mark.timeout(TIMEOUT_S),
]

ROWS = 200
TABLES = ("soak_a", "soak_b")
LOCKS = "/hudi/soak-locks"
SESSION_TIMEOUT_S = 4.0
HEARTBEAT_MS = 2000


def _replica(root: Path, replica_id: str, zk: ZookeeperServer, members: str) -> ReplicaProcess:
    config, port = root / f"{replica_id}.yaml", free_port()
    tables = "\n".join(f"  - {{name: {t}, base_path: '{root / t}', timezone: UTC}}" for t in TABLES)
    config.write_text(
        f"""
daemon:
  poll_interval_seconds: 1
  shutdown_grace_seconds: 5
  config_watch_seconds: 0
  spark: {{master: "local[1]"}}
  metrics: {{host: 127.0.0.1, port: {port}}}
  cluster: {{enabled: true, path: {members}, replica_id: {replica_id}, settle_seconds: 1}}
  failures: {{backoff_initial_seconds: 1, backoff_max_seconds: 5, quarantine_after: 1000}}
  lock:
    provider: zookeeper
    properties:
      hoodie.write.lock.zookeeper.url: "{zk.connect_string}"
      hoodie.write.lock.zookeeper.base_path: {LOCKS}
      hoodie.write.lock.zookeeper.session_timeout_ms: {int(SESSION_TIMEOUT_S * 1000)}
defaults:
  hoodie.clustering.async.max.commits: 2
  hoodie.layout.optimize.strategy: ZORDER
  hoodie.clustering.plan.strategy.sort.columns: quantity,amount
  hoodie.cleaner.commits.retained: 3
  hoodie.cleaner.policy.failed.writes: LAZY  # the writer's rejected attempts: the daemon's clean rolls back
  hoodie.client.heartbeat.interval_in_ms: {HEARTBEAT_MS}  # the writer's too
tables:
{tables}
"""
    )
    return ReplicaProcess(replica_id, config, port)


class KillSchedule:
    """Every `every_s`: SIGKILL the replica running a clustering (else the scheduled random one) and
    restart it `down_s` (random, 0-15 s) later. `hits` lists the kills that hit a running clustering."""

    def __init__(self, replicas: list[ReplicaProcess], seed: int, duration_s: float, log: Path) -> None:
        rng = random.Random(seed)
        self.replicas = replicas
        kill_times = [n * KILL_EVERY_S for n in range(1, int(duration_s / KILL_EVERY_S) + 1)]
        self.plan = [
            (at, rng.randrange(len(replicas)), rng.uniform(0, 15)) for at in kill_times if at < duration_s
        ]
        self.hits: list[str] = []
        self._log = log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-kills", daemon=True)
        self.say(f"seed {seed}; schedule (s after start, fallback replica, seconds down): {self.plan}")

    def say(self, line: str) -> None:
        print(f"soak: {line}", flush=True)
        with self._log.open("a") as out:
            out.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def _mid_clustering(self) -> tuple[ReplicaProcess, str] | None:
        """The first replica found running a clustering within `MID_SERVICE_WAIT_S`, and what it runs."""
        deadline = time.monotonic() + MID_SERVICE_WAIT_S
        while not self._stop.is_set() and time.monotonic() < deadline:
            for replica in self.replicas:
                for table, service, phase in replica.running():
                    if service == "clustering" and phase in RUNNING:
                        return replica, f"{service} of {table} ({phase})"
            self._stop.wait(0.2)
        return None

    def _run(self) -> None:
        for at, index, down_s in self.plan:
            if self._stop.wait(max(0.0, self._started + at - time.monotonic())):
                return
            found = self._mid_clustering()
            if found is None:
                replica, doing = self.replicas[index], f"no clustering ran within {MID_SERVICE_WAIT_S:g} s"
            else:
                replica, doing = found
                self.hits.append(f"{replica.replica_id}: {doing}")
            replica.kill()
            self.say(f"SIGKILLed {replica.replica_id} ({doing}); restarting it in {down_s:.1f} s")
            if self._stop.wait(down_s):
                return
            replica.start()
            self.say(f"restarted {replica.replica_id}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


@pytest.fixture
def replicas(tmp_path: Path, zookeeper_server: ZookeeperServer) -> Iterator[list[ReplicaProcess]]:
    members = f"/hudi-table-service/{uuid.uuid4().hex[:12]}/members"
    started = [_replica(tmp_path, f"r{i}", zookeeper_server, members) for i in range(3)]
    try:
        yield started
    finally:
        for replica in started:
            replica.terminate(timeout_s=30)


def _write(spark: Any, base: Path, table: str, batch: int, zk: str) -> None:
    opts = demo_writer_options(table, zk, LOCKS)
    opts["hoodie.table.timeline.timezone"] = "UTC"
    opts["hoodie.client.heartbeat.interval_in_ms"] = str(HEARTBEAT_MS)
    operation = "insert" if batch == 0 else "upsert"
    df = demo_batch(spark, batch, ROWS)
    df.write.format("hudi").options(**opts).option("hoodie.datasource.write.operation", operation).mode(
        "append"
    ).save(str(base))


def _completed_commits(base: Path) -> int:
    return len(HudiTable.open(str(base)).load_timeline().by_actions([Action.COMMIT]).completed())


def _services_done(base: Path) -> set[str]:
    """Completed replacecommits (clusterings: only the daemon writes them here) and cleans on the active
    timeline. Hudi's writer archives old instants, so callers collect these as the soak goes."""
    completed = HudiTable.open(str(base)).load_timeline().completed()
    return {i.file_name for i in completed if i.action in (Action.REPLACE_COMMIT, Action.CLEAN)}


def test_soak_replicas_killed_mid_clustering_beside_a_hudi_writer_lose_nothing(
    replicas: list[ReplicaProcess], zookeeper_server: ZookeeperServer, spark: Any, tmp_path: Path
) -> None:
    zk = zookeeper_server.connect_string
    seed = int(os.environ.get("HTS_SOAK_SEED") or random.randrange(2**31))
    kills = KillSchedule(replicas, seed, SOAK_SECONDS, tmp_path / "soak.log")
    written: dict[str, list[int]] = {t: [] for t in TABLES}
    done: dict[str, set[str]] = {t: set() for t in TABLES}
    for table in TABLES:  # the tables exist before the replicas start
        _write(spark, tmp_path / table, table, 0, zk)
        written[table].append(0)
    for replica in replicas:
        replica.start()
    kills.start()
    started = time.monotonic()
    batch, failures = 1, 0
    try:
        while time.monotonic() - started < SOAK_SECONDS:
            for table in TABLES:
                commits = _completed_commits(tmp_path / table)
                try:
                    _write(spark, tmp_path / table, table, batch, zk)
                    written[table].append(batch)
                except Exception as exc:  # e.g. a conflict with a clustering committed meanwhile
                    causes = [line.strip()[:300] for line in str(exc).splitlines() if "Exception" in line]
                    # Only the writer commits `commit` instants: one more completed means it landed.
                    landed = _completed_commits(tmp_path / table) > commits
                    if landed:
                        written[table].append(batch)
                    else:
                        failures += 1
                    kills.say(f"writer: batch {batch} on {table} raised (committed: {landed}): {causes[:3]}")
                done[table] |= _services_done(tmp_path / table)
            batch += 1
    finally:
        kills.stop()
    kills.say(f"writer done: {written}, {failures} failed batches")

    for replica in replicas:  # the quiet period: everyone up, no writer
        if not replica.alive:
            replica.start()
    tables = {t: HudiTable.open(str(tmp_path / t)) for t in TABLES}

    def pending() -> dict[str, list[str]]:
        found = {t: [i.file_name for i in table.load_timeline().pending()] for t, table in tables.items()}
        for t in TABLES:
            done[t] |= _services_done(tmp_path / t)
        return {t: names for t, names in found.items() if names}

    deadline = time.monotonic() + QUIET_SECONDS
    while pending() and time.monotonic() < deadline:
        time.sleep(2)
    left = pending()
    kills.say(f"quiet period over; pending: {left}")
    for replica in replicas:
        replica.terminate()
    for replica in replicas:
        kills.say(f"--- {replica.replica_id} log tail:\n{replica.log_tail(1500)}")
    assert left == {}, f"orphan instants after the quiet period (seed {seed})"
    kills.say(f"kills mid-clustering: {kills.hits}; services done: {done}")
    for table in TABLES:  # the daemon served each table: it clustered and cleaned it
        actions = {name.split(".")[1] for name in done[table]}
        assert actions == {"replacecommit", "clean"}, (table, sorted(done[table]), seed)
    assert kills.hits, (
        f"no kill hit a replica running a clustering (seed {seed}); see {tmp_path / 'soak.log'}"
    )
    for table in TABLES:
        assert verify_demo_table(spark, str(tmp_path / table), written[table], ROWS), (table, seed)
    assert sum(map(len, written.values())) > len(TABLES)  # the writer committed beside the replicas
