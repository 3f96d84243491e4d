"""`GET /`: the status page, one server-rendered HTML document with no external assets.

Rendered from the same JSON the API serves (`StatusSource.table_detail`), so page and API never
disagree: one section per table with its state (coloured), its services, its live file sizes as an
inline SVG bar chart against the small-file limit and clustering's target size, and its recent runs
with their measured effect. Times read as "3 min ago" (relative to the page's own `generated_at`),
the exact instant on hover.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from service.archival.report import held_by_text
from service.daemon.file_sizes import BUCKET_BOUNDS, bucket_index, bucket_label
from service.daemon.fleet import ALL_FIRST_PAGE, SORTS, QueryError, TableQuery
from service.daemon.run_log import size
from service.daemon.runtime import TableService
from service.daemon.status_api import StatusSource

STATE_COLOURS = {
    "idle": "#4caf50",
    "due": "#2196f3",
    "planning": "#00bcd4",
    "executing": "#3f51b5",
    "committing": "#9c27b0",
    "needs configuration": "#795548",
    "refused": "#9e9e9e",
    "on hold": "#ffc107",
    "quarantined": "#f44336",
    "backing off": "#ff9800",
}

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em} h2{font-size:1.15em;margin:0 0 .4em 0}
section.table{background:#fff;border:1px solid #ddd;border-radius:6px;padding:1em;margin:0 0 1.2em 0}
table{border-collapse:collapse;margin:.4em 0 .8em 0;font-size:.9em}
th,td{border-bottom:1px solid #eee;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.state{display:inline-block;color:#fff;border-radius:4px;padding:.1em .5em;font-weight:600}
.muted{color:#777}
.refusal{color:#5d4037} .fix{font-weight:600;color:#2e7d32}
"""


def _bytes(n: float | None) -> str:
    return "-" if n is None else size(n)


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else escape(str(value))


def _x_of(n_bytes: int, slot: int) -> float:
    """Where `n_bytes` falls on the chart: bucket i spans [BOUNDS[i-1], BOUNDS[i]), log-scaled within."""
    index = bucket_index(n_bytes)
    if index >= len(BUCKET_BOUNDS):
        return index * slot + slot / 2
    upper = BUCKET_BOUNDS[index]
    fraction = max(0.0, min(1.0, 1 + math.log(max(n_bytes, 1) / upper, 4)))
    return index * slot + fraction * slot


def _fix_text(setting: str | None, change: str | None) -> str:
    if setting:
        return f"set {setting} in the daemon config"
    return f"change {change}" if change else "change what the reason names"


def _chart(files: dict[str, Any]) -> str:
    """Files per size bucket as bars (orange: below the small-file limit), with the small-file limit
    and clustering's target size marked: what clustering should move files from and to."""
    buckets = files["distribution"]
    top = max((b["files"] for b in buckets), default=0) or 1
    slot, bar, height, head = 24, 20, 90, 14
    width = slot * len(buckets)
    parts = [
        f'<svg class="sizes" xmlns="http://www.w3.org/2000/svg" width="{width + 120}" '
        f'height="{height + head + 40}" role="img" aria-label="file size distribution">'
    ]
    limit, target = files["small_file_limit_bytes"], files.get("target_file_bytes")
    for i, b in enumerate(buckets):
        h = round(height * b["files"] / top)
        below = b["below_bytes"]
        colour = "#ff9800" if below is not None and below <= limit else "#3f51b5"
        x = i * slot + 2
        label = escape(bucket_label(i))
        parts.append(
            f'<rect x="{x}" y="{head + height - h}" width="{bar}" height="{h}" fill="{colour}">'
            f"<title>{label}: {b['files']} files</title></rect>"
            f'<text x="{x + bar / 2}" y="{head + height + 12}" font-size="9" text-anchor="middle">'
            f"{b['files']}</text>"
        )
    for cls, value, colour, name in (("limit", limit, "#e65100", "small-file limit"),
                                     ("target", target, "#2e7d32", "target")):  # fmt: skip
        if value:
            at = round(_x_of(value, slot), 1)
            parts.append(
                f'<line class="{cls}" x1="{at}" y1="{head - 2}" x2="{at}" y2="{head + height}" '
                f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3"/>'
                f'<text x="{at + 3}" y="{head - 4 if cls == "limit" else head + 8}" font-size="9" '
                f'fill="{colour}">{name} {escape(size(value))}</text>'
            )
    parts.append(
        f'<text x="0" y="{head + height + 30}" font-size="10">4 KiB to 1 GiB, 4x per bar; '
        "orange: small</text></svg>"
    )
    return "".join(parts)


def _ago(iso: str | None, now: datetime) -> str:
    """`iso` as "3 min ago" / "in 20 s", the exact instant on hover; "-" for None."""
    if not iso:
        return "-"
    at = datetime.fromisoformat(iso)
    seconds = (now - at).total_seconds()
    text = _age(abs(seconds))
    phrase = f"{text} ago" if seconds >= 0 else f"in {text}"
    return f'<time datetime="{escape(iso)}" title="{escape(iso)}">{phrase}</time>'


def _age(seconds: float | None) -> str:
    """A duration in its largest whole unit: "3 min", "2 h"; "-" for None."""
    if seconds is None:
        return "-"
    for unit, per in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= per:
            return f"{int(seconds // per)} {unit}"
    return f"{int(seconds)} s"


def _services(table: dict[str, Any], now: datetime) -> str:
    rows = []
    for name, s in table["services"].items():
        if not s["enabled"]:  # off: nothing runs, nothing is due
            rows.append(f"<tr class='off'><td>{escape(name)}</td><td>off</td>" + "<td>-</td>" * 6 + "</tr>")
            continue
        last = s["last_run"]
        last_text = (
            f"{escape(last['outcome'])} {_text(last['instant'])} {_ago(last['ended'], now)}" if last else "-"
        )
        pending = ", ".join(f"{escape(p['instant'])} ({_age(p['age_seconds'])} old)" for p in s["pending"])
        rows.append(
            f"<tr><td>{escape(name)}</td><td>on</td>"
            f"<td>{_text(s['phase'])}</td><td>{'yes' if s['due'] else 'no'}</td>"
            f"<td>{_text(s['commits_since_last'])}</td><td>{pending or '-'}</td>"
            f"<td>{last_text}</td><td>{_ago(s['next_due'], now)}</td></tr>"
        )
    head = (
        "<tr><th>service</th><th>enabled</th><th>phase</th><th>due</th><th>commits since last</th>"
        "<th>pending plans (age)</th><th>last run</th><th>next due</th></tr>"
    )
    return (
        f"<table class='services'>{head}{''.join(rows)}</table>{_on_hold(table)}{_blockers(table)}"
        f"{_archival(table)}"
    )


def _blockers(table: dict[str, Any]) -> str:
    """What holds the services back, oldest first, with the way out (`check` says the same)."""
    items = []
    for b in table.get("blockers", []):
        at = f" {escape(b['instant'])}" if b["instant"] else ""
        who = f", {escape(b['owner'])}" if b["owner"] else ""
        beat = f", heartbeat {escape(b['heartbeat'])}" if b["heartbeat"] else ""
        items.append(
            f"<li class='blocker' data-kind='{escape(b['kind'])}'><b>{escape(b['kind'])}</b>{at} "
            f"({_age(b['age_seconds'])} old{who}{beat}) holds {escape(', '.join(b['services']))}: "
            f"{escape(b['effect'])}; way out: {escape(b['way_out'])}</li>"
        )
    return f"<ul class='blockers'>{''.join(items)}</ul>" if items else ""


def _on_hold(table: dict[str, Any]) -> str:
    """Each plan the volume breaker holds: how much it would delete, where, and the one command that
    approves exactly that plan once (`check` says the same)."""
    out = []
    for name, s in table["services"].items():
        held = s.get("on_hold")
        if not held:
            continue
        where = ", ".join(f"{escape(p)}: {n}" for p, n in held["partitions"].items())
        out.append(
            f"<p class='on-hold'>{escape(name)} on hold: the plan would delete {held['files_to_delete']} of "
            f"the {held['live_files']} files of live file groups ({held['fraction']:.0%}; "
            f"{_bytes(held['bytes_to_delete'])} of {_bytes(held['live_bytes'])}), over the volume "
            f"breaker's {held['limit']:.0%}; by partition: {where or '-'}</p>"
            f"<p class='fix'>to run exactly this plan once: <code>{escape(held['approve'])}</code></p>"
        )
    return "".join(out)


def _archival(table: dict[str, Any]) -> str:
    """The active timeline's length and what holds archival back (`check` says the same)."""
    seen = table["services"].get("archival", {}).get("archival")
    if not seen:
        return ""
    held = seen["held_by"]
    why = f"; {escape(held_by_text(held))}" if held else ""
    last = seen.get("last_archived")
    when = (
        f"; last archived {escape(last['at'])} by {escape(last['by'])} ({escape(last['file'])})"
        if last
        else "; never archived"
    )
    return (
        f"<p class='archival'>active timeline: {seen['active_instants']} instants{when}; "
        f"archival would take {seen['would_archive']}{why}</p>"
    )


def _history(runs: list[dict[str, Any]], now: datetime) -> str:
    if not runs:
        return "<p class='muted'>no runs yet</p>"
    rows = []
    for r in runs:
        before, after = r["before"], r["after"]
        effect = ""
        if before and after:
            effect = (
                f"{before['files']} files ({_bytes(before['bytes'])}, {before['small_files']} small) → "
                f"{after['files']} files ({_bytes(after['bytes'])}, {after['small_files']} small); "
                f"mean {_bytes(before['mean_file_bytes'])} → {_bytes(after['mean_file_bytes'])}"
            )
            p_before, p_after = r["partitions_before"], r["partitions_after"]
            if p_before and p_after:
                effect += (
                    f"; partitions touched: {p_before['files']} files ({p_before['small_files']} small) → "
                    f"{p_after['files']} files ({p_after['small_files']} small)"
                )
        elif r["files_deleted"] is not None:
            effect = f"{r['files_deleted']} files deleted"
            if r["bytes_deleted"] is not None:
                effect += f" ({_bytes(r['bytes_deleted'])})"
            if r["earliest_retained"]:
                effect += f", earliest retained {r['earliest_retained']}"
        rows.append(
            f"<tr><td>{_ago(r['ended'] or r['started'], now)}</td><td>{escape(r['service'])}</td>"
            f"<td>{_text(r['instant'])}</td><td>{escape(r['outcome'])}</td><td>{_text(effect)}</td>"
            f"<td>{_text(r['reason'])}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in ("at", "service", "instant", "outcome", "effect", "reason"))
    head = f"<tr>{head}</tr>"
    return f"<table class='history'>{head}{''.join(rows)}</table>"


def _section(table: dict[str, Any], now: datetime) -> str:
    state = table["state"]
    name = escape(table["name"])
    files = table["files"]
    if files is not None:
        summary = (
            f"<p>{files['files']} live base files, {_bytes(files['bytes'])}, mean "
            f"{_bytes(files['mean_file_bytes'])}; <b>{files['small_files']} small</b> "
            f"({_bytes(files['small_bytes'])}, below {_bytes(files['small_file_limit_bytes'])})</p>"
            + _chart(files)
        )
    else:
        summary = "<p class='muted'>file sizes not measured yet</p>"
    refusals = [(None, table["refusal"], table["fix"], None)] if table["refusal"] else []
    refusals += [
        (service, r["reason"], r["fix"], r.get("change")) for service, r in table["service_refusals"].items()
    ]
    refusal = "".join(
        f"<p class='refusal'>{escape(service + ' ') if service else ''}refused: {escape(reason)}</p>"
        f"<p class='fix'>to serve it: {escape(_fix_text(fix, change))}</p>"
        for service, reason, fix, change in refusals
    )
    return (
        f'<section class="table" id="table-{name}" data-state="{escape(state)}">'
        f'<h2>{name} <span class="state" style="background:{STATE_COLOURS.get(state, "#607d8b")}">'
        f"{escape(state)}</span></h2><p class='muted'>{escape(table['base_path'])}</p>{refusal}"
        f"{_services(table, now)}{summary}"
        f"<h3>recent runs</h3>{_history(table['history'][:20], now)}</section>"
    )


def render(source: StatusSource, query: TableQuery = ALL_FIRST_PAGE) -> str:
    """The fleet's summary, the filter, and one page of table cards (`service.daemon.fleet`)."""
    overview = source.tables(query)
    details = [source.table_detail(t["name"]) for t in overview["tables"]]
    generated = overview["generated_at"] or ""
    now = datetime.fromisoformat(generated) if generated else datetime.now(UTC)
    sections = "".join(_section(d, now) for d in details if d is not None)
    summary = overview["summary"]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='refresh' content='30'><title>hudi-table-service</title>"
        f"<style>{_STYLE}</style></head><body><h1>hudi-table-service</h1>"
        f"<p class='muted'>{summary['tables']} tables, as of <time datetime='{escape(generated)}'>"
        f"{escape(generated)}</time>; "
        "JSON at <a href='/api/v1/tables'>/api/v1/tables</a></p>"
        f"{_summary(summary)}{_discovery(overview.get('discovery'))}{_filter(query, overview['total'])}"
        f"{sections or '<p>no tables configured</p>'}{_pager(query, overview['total'])}</body></html>"
    )


def _summary(summary: dict[str, Any]) -> str:
    """Tables per state (each a link to them), those on hold or failing, the most indebted."""
    states = " ".join(
        f"<a class='count' href='/?{urlencode({'state': state})}'>{escape(state)}: {n}</a>"
        for state, n in summary["states"].items()
    )

    def names(label: str, tables: list[str]) -> str:
        if not tables:
            return ""
        shown = ", ".join(escape(t) for t in tables[:20]) + (" ..." if len(tables) > 20 else "")
        return f"<p class='{label.replace(' ', '-')}'>{label}: {shown}</p>"

    indebted = "".join(
        f"<li>{escape(key.replace('_', ' '))}: "
        + ", ".join(f"{escape(row['table'])} ({row[key]:g})" for row in rows)
        + f" <a href='/?{urlencode({'sort': key})}'>all by it</a></li>"
        for key, rows in summary["most_indebted"].items()
        if rows
    )
    return (
        f"<section class='summary'><p class='states'>{states}</p>"
        f"{names('on hold', summary['on_hold'])}{names('failing', summary['failing'])}"
        f"<p class='blocked'>blocked: {summary['blocked']}</p>"
        f"{f'<ul class=indebted>{indebted}</ul>' if indebted else ''}</section>"
    )


def _filter(query: TableQuery, total: int) -> str:
    def option(value: str, chosen: str | None) -> str:
        return f"<option{' selected' if value == chosen else ''}>{escape(value)}</option>"

    states = "".join(option(s, query.state) for s in STATE_COLOURS)
    services = "".join(option(str(s), query.service) for s in TableService)
    sorts = "".join(option(s, query.sort) for s in SORTS)
    return (
        "<form class='filter' method='get' action='/'>"
        f"<input name='q' placeholder='name' value='{escape(query.name or '')}'>"
        f"<select name='state'><option value=''>any state</option>{states}</select>"
        f"<select name='service'><option value=''>any service</option>{services}</select>"
        f"<select name='sort'>{sorts}</select><button>show</button> "
        f"<span class='total'>{total} matching</span></form>"
    )


def _pager(query: TableQuery, total: int) -> str:
    pages = max(1, -(-total // query.per_page))
    if pages == 1:
        return ""
    params = {k: v for k, v in query.to_json().items() if v not in (None, "") and k != "page"}

    def link(page: int, text: str) -> str:
        return f"<a class='page' href='/?{urlencode({**params, 'page': page})}'>{text}</a>"

    back = link(query.page - 1, "previous") if query.page > 1 else ""
    forward = link(query.page + 1, "next") if query.page < pages else ""
    return f"<p class='pager'>{back} page {query.page} of {pages} {forward}</p>"


def _discovery(discovery: dict[str, Any] | None) -> str:
    """The `discover:` roots (tables found, last pass, error) and the tables that came and went."""
    if discovery is None:
        return ""
    roots = "".join(
        f"<li class='root'>{escape(r['root'])}: {r['tables']} tables, scanned {_text(r['scanned_at'])}"
        + (f"; <span class='error'>{escape(r['error'])}</span>" if r["error"] else "")
        + "</li>"
        for r in discovery["roots"]
    )
    events = "".join(
        f"<li class='discovered' data-event='{escape(e['event'])}'>{escape(e['at'])} "
        f"<b>{escape(e['table'])}</b> {escape(e['event'])} ({escape(e['base_path'])})</li>"
        for e in discovery["events"]
    )
    return f"<section class='discovery'><h2>discovery</h2><ul>{roots}</ul><ul>{events}</ul></section>"


API_PREFIX = "/api/v1/tables"


def serve(source: StatusSource, path: str, query: str = "") -> tuple[str, str, bytes] | None:
    """`/`, `/api/v1/tables` and `/api/v1/tables/{name}` (the `MetricsServer` route); None otherwise.
    The first two take `state`, `service`, `q` (part of a name), `sort`, `page` and `per_page`."""
    if path in ("/", "/index.html", API_PREFIX, API_PREFIX + "/"):
        try:
            # Blank fields of the page's form mean "any".
            parsed = TableQuery.parse("&".join(p for p in query.split("&") if p and not p.endswith("=")))
        except QueryError as exc:
            return _json("400 Bad Request", {"error": str(exc)})
        if path.startswith(API_PREFIX):
            return _json("200 OK", source.tables(parsed))
        return "200 OK", "text/html; charset=utf-8", render(source, parsed).encode()
    if path.startswith(API_PREFIX + "/"):
        name = path[len(API_PREFIX) + 1 :].rstrip("/")
        detail = source.table_detail(name)
        if detail is None:
            return _json("404 Not Found", {"error": f"no table named {name!r}"})
        return _json("200 OK", detail)
    return None


def _json(status: str, body: dict[str, Any]) -> tuple[str, str, bytes]:
    return status, "application/json", json.dumps(body, indent=1).encode()
