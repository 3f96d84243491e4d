"""The daemon-overhead benchmark at a toy size: it runs the real daemon end to end, plans nothing while
the tables are idle, plans clustering once a commit crosses the threshold, and its JSON has the figures
the docs show (no timing assertions)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.daemon import (
    CLUSTERING_MAX_COMMITS,
    COMMITS_AFTER_CLUSTERING,
    Shape,
    append_commit,
    build_table,
    run,
)
from bench.report import render
from service.config.hoodie import HoodieConfig
from service.table.table import HudiTable
from strategies.clustering.trigger import ClusteringStep, TriggerMode, clustering_due

pytestmark = pytest.mark.slow

TOY = Shape(tables=6, poll_seconds=1.0, steady_rounds=2, crossing_tables=2)


def test_bench_daemon_table_is_idle_until_one_more_commit(tmp_path: Path) -> None:
    build_table(tmp_path / "t", 0)

    table = HudiTable.open(str(tmp_path / "t"))
    timeline = table.load_timeline()
    assert len(timeline.completed()) == 101
    clustering = HoodieConfig.from_mapping(
        {"hoodie.clustering.async.max.commits": CLUSTERING_MAX_COMMITS}, "t"
    ).clustering
    idle = clustering_due(timeline, clustering, TriggerMode.ASYNC, table.facts_reader)
    assert idle.step is ClusteringStep.WAIT
    assert idle.commits_since_last_clustering == COMMITS_AFTER_CLUSTERING == CLUSTERING_MAX_COMMITS - 1

    append_commit(tmp_path / "t", 0, datetime.now(UTC))

    crossed = clustering_due(table.load_timeline(), clustering, TriggerMode.ASYNC, table.facts_reader)
    assert crossed.step is ClusteringStep.SCHEDULE


def test_bench_daemon_quick_run_reports_every_figure(tmp_path: Path) -> None:
    """One daemon, then (the replica phase, on a real ZooKeeper) three replicas serving disjoint shares
    of every table, the SIGKILLed one's tables all ticked again by the others."""
    payload = run(
        True, shape=TOY, work_dir=tmp_path / "work", results_dir=tmp_path / "results", replicas=3,
        session_timeout_s=4.0, report=lambda _: None,
    )  # fmt: skip

    document = json.loads((tmp_path / "results" / "daemon.json").read_text(encoding="utf-8"))
    assert document["benchmark"] == "daemon"
    # docs/benchmarks.md's section 4 is generated from this file: it renders, with the targets.
    assert "<= 5 ms" in render(document) and "<= 300 MB" in render(document)
    assert document["shape"]["tables"] == TOY.tables
    assert document["shape"]["active_instants_per_table"] == 101
    for phase in ("cold", "steady"):
        figures = document[phase]
        for key in ("per_table_cpu_ms", "per_table_wall_ms"):
            assert set(figures[key]) == {"mean", "p50", "p99", "max"}
            assert figures[key]["p50"] > 0
        assert set(figures["services"]) == {"clustering", "cleaning", "compaction", "archival"}
    assert document["cold"]["table_ticks"] == TOY.tables
    steady = document["steady"]
    assert steady["table_ticks"] >= TOY.tables  # at least one full round in the window
    # A round is one tick of every table and service: a count of two services made it 1.5 rounds.
    assert steady["rounds"] == pytest.approx(steady["table_ticks"] / TOY.tables, rel=0.2)
    assert steady["process_cpu_share_of_one_core"] is not None
    # An idle steady tick lists `.hoodie` once per service, no partition, decodes nothing.
    for service in ("clustering", "cleaning"):
        assert steady["services"][service]["hoodie_listings_per_tick"] == 1
        assert steady["services"][service]["outcomes"] == ["done"]
    # Copy-on-write tables have nothing to compact: the tick touches no storage at all.
    compaction = steady["services"]["compaction"]
    assert compaction["outcomes"] == ["not_applicable"]
    assert compaction["hoodie_listings_per_tick"] == compaction["reads_per_tick"] == 0
    assert steady["partition_listings"] == 0
    assert steady["decodes"] == 0
    assert document["memory"]["peak_rss_mb"] > 0
    # Nothing planned while idle: no instant file written, no new plan on disk, Spark never asked for.
    idle = document["idle"]
    assert idle["instant_files_written"] == 0
    assert idle["spark_session_requests"] == 0
    assert idle["failed_ticks"] == 0
    assert idle["plan_files_after"] == idle["plan_files_before"] == 2 * TOY.tables
    assert idle["nothing_planned"] is True
    # Every table that received the crossing commit got its clustering plan, without Spark.
    threshold = document["threshold"]
    assert len(threshold["tables"]) == TOY.crossing_tables
    assert threshold["all_planned"] is True
    for crossing in threshold["tables"]:
        assert crossing["plan_file"].endswith(".replacecommit.requested")
        assert crossing["plan_file"] > crossing["commit_file"]  # a later instant time
        assert crossing["delay_s"] >= 0
    assert threshold["spark_needed_to_schedule"] is False
    assert set(document["targets"]) >= {"tick_met", "rss_met", "plan_delay_met", "nothing_planned_while_idle"}
    assert payload["idle"]["nothing_planned"] is True
    replicas = payload["replicas"]
    shares = [r["tables"] for r in replicas["per_replica"]]
    assert len(shares) == 3 and sum(shares) == TOY.tables and all(shares)
    assert replicas["targets"]["each_serves_a_share"] is True
    killed = replicas["killed"]
    assert killed["tables"] == shares[0] and killed["served_again"] == killed["tables"]
    # Not before the lease: a SIGKILLed member's locks live until ZooKeeper expires its session.
    assert killed["takeover_s"]["min"] >= replicas["session_timeout_s"] * 0.5
    assert killed["takeover_s"]["max"] is not None
    assert killed["bound_s"] == 4.0 + replicas["settle_s"] + TOY.poll_seconds
    assert all(r["peak_rss_mb"] > 0 for r in replicas["per_replica"])
    assert "3 replicas" in render(document) and "--replicas 3" in document["command"]
    assert not any((tmp_path / "work").iterdir())
