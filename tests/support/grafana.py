"""The shipped Grafana dashboard's PromQL: its expressions, the metric names they select, and the
expressions with Grafana's variables replaced so Prometheus itself can evaluate them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from service.metrics import ServiceMetrics

DASHBOARD = (
    Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "hudi-table-service.json"
)

# What Grafana substitutes: every table, and a range wide enough for any scrape interval.
VARIABLES = {"$table": ".*", "$__rate_interval": "5m"}
# Series Prometheus itself records for every scrape target.
PROMETHEUS_SERIES = frozenset({"up"})

_FUNCTIONS_AND_KEYWORDS = frozenset(
    {
        "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile",
        "count_values", "group", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
        "and", "or", "unless", "offset", "inf", "nan",
    }
)  # fmt: skip
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_VARIABLE = re.compile(r"\$\{?\w+\}?")
_IDENTIFIER = re.compile(r"(?<![\w.])([A-Za-z_:][\w:]*)(\s*\()?")


def load_dashboard(path: Path = DASHBOARD) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # a collapsed row holds its panels


def expressions(dashboard: Mapping[str, Any]) -> list[str]:
    """Every PromQL expression: the panels' targets and the template variables' queries."""
    found = [t["expr"] for p in _panels(dashboard.get("panels", [])) for t in p.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        text = query.get("query") if isinstance(query, dict) else query
        if isinstance(text, str) and (m := re.fullmatch(r"label_values\((.+),\s*\w+\)", text.strip())):
            found.append(m.group(1))  # Grafana's function around a selector
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects: identifiers that are not functions, keywords, label names,
    durations, strings or Grafana variables."""
    text = _STRING.sub('""', expr)
    text = _VARIABLE.sub("", text)
    text = _MATCHERS.sub("", text)
    text = _RANGE.sub("", text)
    text = _GROUPING.sub("", text)
    return {
        name
        for name, call in _IDENTIFIER.findall(text)
        if not call and name not in _FUNCTIONS_AND_KEYWORDS and not name[0].isdigit()
    }


def exported_series() -> set[str]:
    """The series names the daemon's registry exports: counters' `_total`, histograms' buckets."""
    registry = CollectorRegistry()
    ServiceMetrics(registry)
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created")}
    return {
        metric.name + suffix for metric in registry.collect() for suffix in suffixes.get(metric.type, ("",))
    }


def unknown_metrics(dashboard: Mapping[str, Any]) -> dict[str, set[str]]:
    """Expression → the metric names in it that neither the daemon nor Prometheus exports."""
    known = exported_series() | PROMETHEUS_SERIES
    unknown = {expr: metric_names(expr) - known for expr in expressions(dashboard)}
    return {expr: names for expr, names in unknown.items() if names}


def evaluable(expr: str) -> str:
    """`expr` with Grafana's variables replaced, as Prometheus's query API takes it."""
    for variable, value in VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr
