"""The shipped config files load, and the alert rules only use metrics the daemon exports."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from service.config.daemon import load_daemon_config
from service.metrics import ServiceMetrics

REPO = Path(__file__).resolve().parents[2]


def test_example_configs_load() -> None:
    root = load_daemon_config(REPO / "config.yaml")
    deploy = load_daemon_config(REPO / "deploy" / "config.yaml")
    assert root.tables and deploy.tables
    assert deploy.daemon.lock.provider == "zookeeper"
    assert deploy.daemon.metrics.host == "0.0.0.0"


def test_replicas_example_runs_two_daemons_on_one_clustered_config() -> None:
    config = load_daemon_config(REPO / "deploy" / "config.replicas.yaml")
    assert config.daemon.cluster.enabled and len(config.tables) >= 2
    compose = yaml.safe_load((REPO / "deploy" / "compose.replicas.yaml").read_text())
    daemons = [s for s in compose["services"].values() if "build" in s]
    mounts = {volume.split(":")[0] for service in daemons for volume in service["volumes"]}
    assert len(daemons) == 2 and "./config.replicas.yaml" in mounts


def test_alert_rules_use_only_exported_metrics() -> None:
    registry = CollectorRegistry()
    ServiceMetrics(registry)
    exported = {sample for metric in registry.collect() for sample in [metric.name, f"{metric.name}_total"]}
    rules = yaml.safe_load((REPO / "deploy" / "prometheus" / "rules.yml").read_text())
    used = {
        name
        for group in rules["groups"]
        for rule in group["rules"]
        for name in re.findall(r"hudi_table_service_[a-z_]+", rule["expr"])
    }
    assert used, "the rules watch the daemon's metrics"
    assert used <= exported, used - exported


def test_prometheus_scrapes_the_daemon_port() -> None:
    scrape = yaml.safe_load((REPO / "deploy" / "prometheus" / "prometheus.yml").read_text())
    deploy = load_daemon_config(REPO / "deploy" / "config.yaml")
    targets = scrape["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == [f"hudi-table-service:{deploy.daemon.metrics.port}"]
    assert f"EXPOSE {deploy.daemon.metrics.port}" in (REPO / "Dockerfile").read_text()
