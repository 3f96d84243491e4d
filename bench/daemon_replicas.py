"""The daemon benchmark's replica phase: the same idle tables served by several replicas sharing them
through a real ZooKeeper (`daemon.cluster`), then one replica SIGKILLed.

Each replica is `bench.daemon.serve` in a process of its own, configured as a deployment would be
(`cluster.enabled`, the ZooKeeper lock, Hudi's default session timeout of 60 s, which is the lease a
dead replica's tables wait for). What is measured:
- the division: from launch until every table is served by exactly one replica and each replica has
  ticked every service of its share (a replica serves a table when its tick ran, not `not_held`);
- each replica's memory and CPU over a steady window of whole poll intervals;
- the takeover: after the SIGKILL (nothing released, no party left), from the kill until each of the
  dead replica's tables is ticked by a survivor, read afterwards from the survivors' tick records. The
  bound is the lease (the session timeout, after which ZooKeeper drops the dead member and its locks),
  the members' settle time and one poll interval: a table cannot move before the lease ends.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from bench.common import print_table
from bench.daemon import (
    TARGET_FLEET_RSS_MB,
    Child,
    Shape,
    _Sampler,
    launch,
    sample_process,
    services_per_table,
    wait_until,
    write_config,
)
from bench.standalone import free_port
from bench.zookeeper_server import ZookeeperServer

SESSION_TIMEOUT_S = 60.0  # hoodie.write.lock.zookeeper.session_timeout_ms's default
SETTLE_S = 5.0  # daemon.cluster.settle_seconds's default
T = TypeVar("T")


def replica_config(zookeeper: str, members: str, replica_id: str, session_timeout_s: float) -> dict[str, Any]:
    """The `daemon` sections that make a replica of the benchmark's config."""
    return {
        "metrics": {"host": "127.0.0.1", "port": free_port()},
        "cluster": {"enabled": True, "path": members, "replica_id": replica_id, "settle_seconds": SETTLE_S},
        "lock": {
            "provider": "zookeeper",
            "properties": {
                "hoodie.write.lock.zookeeper.url": zookeeper,
                "hoodie.write.lock.zookeeper.base_path": "/hudi/bench-locks",
                "hoodie.write.lock.zookeeper.session_timeout_ms": int(session_timeout_s * 1000),
            },
        },
    }


def _divided(children: Sequence[Child], tables: set[str]) -> list[set[str]] | None:
    """Each child's share once every table is served by exactly one of them; None before."""
    shares = [child.served() for child in children]
    if sum(len(share) for share in shares) != len(tables) or set().union(*shares) != tables:
        return None
    return shares


def _ticked_whole_share(child: Child, share: set[str]) -> bool:
    return int(child.progress_now().get("keys", 0)) >= services_per_table() * len(share)


def _wait(condition: Callable[[], T], timeout: float, what: str, children: Sequence[Child]) -> T:
    """`wait_until`, failing at once when one of `children` has exited."""

    def checked() -> T:
        value = condition()
        if not value:
            for child in children:
                if child.process.poll() is not None:
                    raise RuntimeError(
                        f"bench.daemon: a replica exited ({child.process.returncode}); see {child.log}"
                    )
        return value

    return wait_until(checked, timeout, what, every=0.5)


def measure(
    work: Path,
    shape: Shape,
    tables: Sequence[str],
    replicas: int,
    report: Callable[[str], None],
    session_timeout_s: float = SESSION_TIMEOUT_S,
) -> dict[str, Any]:
    """Run `replicas` replicas over the tables the caller built and registered; see the module."""
    wanted = set(tables)
    members = f"/hudi-table-service/bench-{uuid.uuid4().hex[:8]}/members"
    children: list[Child] = []
    samplers: list[_Sampler] = []
    stats: dict[int, dict[str, Any]] = {}
    failures: list[RuntimeError] = []
    killed_wall: float | None = None
    with ZookeeperServer(work / "zookeeper") as zookeeper:
        try:
            launched = time.monotonic()
            for r in range(replicas):
                config = work / f"replica-r{r}.yaml"
                sections = replica_config(zookeeper.connect_string, members, f"r{r}", session_timeout_s)
                write_config(config, work, shape, sections)
                children.append(launch(work, config, f"r{r}"))
                samplers.append(_Sampler(children[-1].process.pid, 1.0))
                samplers[-1].start()
            cold_timeout = 120 + len(tables) * 0.2
            shares = _wait(lambda: _divided(children, wanted), cold_timeout, "the division", children)
            divided_s = time.monotonic() - launched
            _wait(
                lambda: all(_ticked_whole_share(c, s) for c, s in zip(children, shares, strict=True)),
                cold_timeout, "every replica's first round", children,
            )  # fmt: skip
            shares = _wait(lambda: _divided(children, wanted), 60, "the division", children)
            served_s = time.monotonic() - launched
            report(
                f"replicas: {len(tables):,} tables divided {[len(s) for s in shares]} "
                f"after {divided_s:.1f}s, "
                f"each share ticked after {served_s:.1f}s"
            )
            time.sleep(min(shape.poll_seconds, 5.0))
            starts = [sample_process(c.process.pid) for c in children]
            time.sleep(2 * shape.poll_seconds)
            ends = [sample_process(c.process.pid) for c in children]
            victim, survivors = children[0], children[1:]
            victim_share = shares[0]
            killed_wall, killed = time.time(), time.monotonic()
            victim.process.kill()
            victim.process.wait()
            bound_s = session_timeout_s + SETTLE_S + shape.poll_seconds
            _wait(
                lambda: set().union(*(c.served() for c in survivors)) >= wanted,
                bound_s + 120, "the survivors to serve every table", survivors,
            )  # fmt: skip
            report(
                f"replicas: the survivors serve every table {time.monotonic() - killed:.1f}s after the kill"
            )
        finally:
            stopping = time.monotonic()  # a child then dumps its tick records: not the daemon's memory
            for n, child in enumerate(children):
                if n == 0 and killed_wall is not None:
                    continue  # SIGKILLed: no stats
                try:
                    stats[n] = child.stop()
                except RuntimeError as exc:
                    failures.append(exc)
            for sampler in samplers:
                sampler.halt.set()
                sampler.join()
    if failures:
        raise failures[0]
    assert killed_wall is not None
    summary = _summary(
        shares, stats, samplers, starts, ends, victim_share, killed_wall, divided_s, served_s, bound_s, shape,
        stopping,
    )  # fmt: skip
    return summary | {"session_timeout_s": session_timeout_s}


def _summary(
    shares: list[set[str]],
    stats: dict[int, dict[str, Any]],
    samplers: list[_Sampler],
    starts: list[Any],
    ends: list[Any],
    victim_share: set[str],
    killed_wall: float,
    divided_s: float,
    served_s: float,
    bound_s: float,
    shape: Shape,
    stopping: float,
) -> dict[str, Any]:
    first_after_kill: dict[str, float] = {}
    for n, replica_stats in stats.items():
        if n == 0:
            continue
        for tick in replica_stats["ticks"]:
            table = tick["table"]
            if table in victim_share and tick["outcome"] != "not_held" and tick["start_wall"] > killed_wall:
                at = tick["start_wall"]
                if table not in first_after_kill or at < first_after_kill[table]:
                    first_after_kill[table] = at
    delays = sorted(at - killed_wall for at in first_after_kill.values())
    per_replica = []
    for n, (share, start, end, sampler) in enumerate(zip(shares, starts, ends, samplers, strict=True)):
        window = (end.at - start.at) if start and end else None
        cpu = (end.cpu_s - start.cpu_s) if start and end else None
        peak_kb = max([s.hwm_kb for s in sampler.samples if s.at < stopping], default=0)
        per_replica.append(
            {
                "replica": f"r{n}",
                "tables": len(share),
                "peak_rss_mb": peak_kb / 1024,
                "rss_mb_end_of_window": end.rss_kb / 1024 if end else None,
                "cpu_share_of_one_core": cpu / window if cpu is not None and window else None,
                "cpu_ms_per_table_round": (
                    cpu / (window / shape.poll_seconds) / len(share) * 1000
                    if cpu and window and share
                    else None
                ),
            }
        )
    takeover_max = delays[-1] if len(delays) == len(victim_share) else None
    return {
        "replicas": len(shares),
        "settle_s": SETTLE_S,
        "divided_after_s": divided_s,
        "every_share_ticked_after_s": served_s,
        "per_replica": per_replica,
        "killed": {
            "replica": "r0",
            "tables": len(victim_share),
            "served_again": len(first_after_kill),
            "takeover_s": {
                "min": delays[0] if delays else None,
                "median": statistics.median(delays) if delays else None,
                "max": takeover_max,
            },
            "bound_s": bound_s,
        },
        "targets": {
            "rss_mb_per_replica": TARGET_FLEET_RSS_MB,
            "rss_met": all(r["peak_rss_mb"] <= TARGET_FLEET_RSS_MB for r in per_replica),
            "each_serves_a_share": all(shares) and len(shares) > 1,
            "takeover_within_bound": takeover_max is not None and takeover_max <= bound_s,
        },
    }


def print_summary(summary: dict[str, Any]) -> None:
    killed, targets = summary["killed"], summary["targets"]
    print_table(
        f"{summary['replicas']} replicas through ZooKeeper (divided after {summary['divided_after_s']:.1f}s, "
        f"every share ticked after {summary['every_share_ticked_after_s']:.1f}s)",
        ["replica", "tables", "peak RSS MB", "CPU % of a core", "CPU ms per table round"],
        [
            [
                r["replica"], r["tables"], r["peak_rss_mb"],
                None if r["cpu_share_of_one_core"] is None else 100 * r["cpu_share_of_one_core"],
                r["cpu_ms_per_table_round"],
            ]
            for r in summary["per_replica"]
        ],
    )  # fmt: skip
    takeover = killed["takeover_s"]
    print_table(
        f"{killed['replica']} SIGKILLed: its tables ticked by a survivor (s after the kill; bound = session "
        f"timeout {summary['session_timeout_s']:g}s + settle {summary['settle_s']:g}s + one poll interval)",
        ["tables", "served again", "min", "median", "max", "bound", "within"],
        [
            [
                killed["tables"], killed["served_again"],
                takeover["min"], takeover["median"], takeover["max"],
                killed["bound_s"], "yes" if targets["takeover_within_bound"] else "no",
            ]
        ],
    )  # fmt: skip
