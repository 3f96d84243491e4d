"""The shipped Grafana dashboard graphs only metrics the daemon exports, and compose provisions it."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tests.support.grafana import (
    exported_series,
    expressions,
    load_dashboard,
    metric_names,
    unknown_metrics,
)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_dashboard_names_only_metrics_the_daemon_exports() -> None:
    dashboard = load_dashboard()
    exprs = expressions(dashboard)
    assert len(exprs) >= 20
    assert unknown_metrics(dashboard) == {}
    used = set().union(*map(metric_names, exprs))
    # Every expression selects something, and the figures issue 17 §4 adds are graphed.
    assert all(metric_names(e) for e in exprs), [e for e in exprs if not metric_names(e)]
    new = {"rewritten_records_total", "pending_clean_plans", "last_completed_instant_timestamp_seconds"}
    assert {f"hudi_table_service_{n}" for n in new} <= used
    # Every metric family of ours is on the dashboard.
    families = {n.removesuffix("_total") for n in exported_series() if not n.endswith("_created")}
    families = {n for n in families if not n.endswith(("_bucket", "_count", "_sum"))}
    graphed = {n.removesuffix("_total").removesuffix("_bucket") for n in used}
    assert families <= graphed, families - graphed


def test_a_panel_naming_an_unknown_metric_is_caught() -> None:
    dashboard = load_dashboard()
    broken = copy.deepcopy(dashboard)
    row_then_panel = broken["panels"][1]
    row_then_panel["targets"][0]["expr"] = (
        'sum by (table) (increase(hudi_table_service_deleted_file_total{table=~"$table"}[$__rate_interval]))'
    )
    assert unknown_metrics(broken) == {
        row_then_panel["targets"][0]["expr"]: {"hudi_table_service_deleted_file_total"}
    }
    # A typo in an arithmetic expression, a Hudi-style name, and a misspelt template query too.
    broken["panels"][2]["targets"][0]["expr"] = "time() - hudi_table_service_last_completed_instant_timestamp"
    broken["templating"]["list"][0]["query"]["query"] = "label_values(orders_clean_numFilesDeleted, table)"
    assert set().union(*unknown_metrics(broken).values()) == {
        "hudi_table_service_deleted_file_total",
        "hudi_table_service_last_completed_instant_timestamp",
        "orders_clean_numFilesDeleted",
    }


def test_metric_names_skips_functions_labels_durations_and_variables() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, table) (rate(a_bucket{table=~"$table", x="b_c"}'
        "[$__rate_interval]))) / on (table) group_left b_total offset 5m + time() - c"
    )
    assert metric_names(expr) == {"a_bucket", "b_total", "c"}


def test_compose_provisions_grafana_read_only_on_loopback() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    grafana = compose["services"]["grafana"]
    image, _, tag = grafana["image"].partition(":")
    assert image == "grafana/grafana-oss" and tag and tag != "latest"
    assert all(str(p).startswith("127.0.0.1:") for p in grafana["ports"])
    mounts = {m.split(":")[0]: m.split(":")[1:] for m in grafana["volumes"]}
    assert mounts["./grafana/provisioning"] == ["/etc/grafana/provisioning", "ro"]
    [(dashboards_source, (dashboards_target, mode))] = [
        (s, t) for s, t in mounts.items() if s != "./grafana/provisioning"
    ]
    assert mode == "ro" and (DEPLOY / dashboards_source / "hudi-table-service.json").is_file()

    # The dashboard provider reads where the dashboards are mounted.
    [provider_file] = (DEPLOY / "grafana" / "provisioning" / "dashboards").glob("*.yml")
    [provider] = yaml.safe_load(provider_file.read_text())["providers"]
    assert provider["options"]["path"] == dashboards_target

    # The data source is the compose Prometheus, under the uid every panel names.
    [source_file] = (DEPLOY / "grafana" / "provisioning" / "datasources").glob("*.yml")
    [source] = yaml.safe_load(source_file.read_text())["datasources"]
    prometheus_port = compose["services"]["prometheus"]["ports"][0].split(":")[-1]
    assert source["type"] == "prometheus" and source["url"] == f"http://prometheus:{prometheus_port}"
    dashboard = load_dashboard()
    uids = {p["datasource"]["uid"] for p in dashboard["panels"] if "datasource" in p}
    uids |= {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert uids == {source["uid"]}
