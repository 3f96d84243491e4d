"""`hudi-table-service repair --base-path PATH`: what holds the table back that a repair would fix, as a
dry run. This first version reports; it moves and rolls back nothing:

- the failed writes a clean would roll back (LAZY failed writes: their heartbeat expired;
  `service.cleaning.failed_writes`), which `hudi-table-service clean` rolls back today;
- the orphan files (`strategies.orphans`): files no reader reads and no pending instant will claim,
  older than the safety age (`--min-age-hours`, default the larger of 24 h and the heartbeat
  expiry), and the uncommitted files kept, with why.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from service.cleaning.failed_writes import failed_writes
from service.clock import utc_now
from service.command_context import add_service_arguments, open_context
from service.repair.orphans import find_orphans, safety_age
from service.table.properties import TableServiceKind


def add_repair_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument(
        "--min-age-hours",
        type=float,
        help="no file modified more recently is an orphan (default: the larger of 24 h and the heartbeat "
        "expiry, hoodie.client.heartbeat.interval_in_ms x tolerable.misses)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def cmd_repair(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options, TableServiceKind.CLEANING)
    table, now = ctx.table, utc_now()
    timeline = table.load_timeline()
    min_age = safety_age(ctx.config, args.min_age_hours)
    lazy = ctx.config.clean.failed_writes_policy.value == "LAZY"
    failed = failed_writes(table, timeline, ctx.config, now) if lazy else []
    verdict = find_orphans(table, timeline, now, min_age)
    report: dict[str, Any] = {
        "table": table.name,
        "base_path": table.base_uri,
        "dry_run": True,
        "run": None,  # nothing was moved or rolled back
        "safety_age_hours": min_age.total_seconds() / 3600,
        "failed_writes": [{"instant": i.timestamp, "action": i.action.value} for i in failed],
        "failed_writes_policy": ctx.config.clean.failed_writes_policy.value,
        "orphans": [
            {
                "path": o.path,
                "instant": o.instant,
                "bytes": o.size,
                "modified": o.modified.isoformat(timespec="seconds") if o.modified else None,
            }
            for o in verdict.orphans
        ],
        "kept": [{"path": k.path, "why": k.why} for k in verdict.kept],
    }
    print(json.dumps(report, indent=2) if args.json else _text(report))
    return 0


def _text(report: Mapping[str, Any]) -> str:
    lines = [f"table {report['table']}: repair, dry run (nothing moved or rolled back)"]
    if report["failed_writes"]:
        names = ", ".join(f"{f['action']} {f['instant']}" for f in report["failed_writes"])
        lines.append(f"  failed writes a clean rolls back (LAZY, heartbeat expired): {names}")
    elif report["failed_writes_policy"] != "LAZY":
        lines.append("  failed writes: EAGER, the writers roll theirs back at their next commit")
    orphans = report["orphans"]
    total = sum(o["bytes"] for o in orphans)
    lines.append(
        f"  orphan files (older than {report['safety_age_hours']:g} h): {len(orphans)}, {total} bytes"
    )
    lines.extend(f"    {o['path']} (instant {o['instant']}, {o['bytes']} bytes)" for o in orphans)
    for k in report["kept"]:
        lines.append(f"  kept {k['path']}: {k['why']}")
    return "\n".join(lines)
