"""`hudi-table-service repair --base-path PATH`: what a person used to fix by hand, guarded. A dry run
unless `--execute`:

- the failed writes a clean would roll back (LAZY failed writes: their heartbeat expired;
  `service.cleaning.failed_writes`), rolled back with the clean's rollback;
- the orphan files (`strategies.orphans`): files no reader reads and no pending instant will claim,
  older than the safety age (`--min-age-hours`, default the larger of 24 h and the heartbeat
  expiry), moved to the trash with a manifest (`service.trash`); the uncommitted files kept
  are listed with why.

`--execute` first settles what a stopped run left, and afterwards empties the trash of runs older than
`--trash-retention-hours`. `--undo RUN` puts a run's files back byte for byte.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from service import trash
from service.clock import utc_now
from service.command_context import add_service_arguments, open_context
from service.repair.orphans import safety_age
from service.repair.run import repair_table
from service.table.properties import TableServiceKind

DEFAULT_TRASH_RETENTION_HOURS = 7 * 24.0


def add_repair_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument(
        "--min-age-hours",
        type=float,
        help="no file modified more recently is an orphan (default: the larger of 24 h and the heartbeat "
        "expiry, hoodie.client.heartbeat.interval_in_ms x tolerable.misses)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument(
        "--execute", action="store_true", help="roll the failed writes back and move the orphans to the trash"
    )
    parser.add_argument("--undo", metavar="RUN", help="put the files run RUN moved back where they were")
    parser.add_argument(
        "--trash-retention-hours",
        type=float,
        default=DEFAULT_TRASH_RETENTION_HOURS,
        help="an --execute run empties the trash of earlier runs older than this (default: a week)",
    )


def cmd_repair(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options, TableServiceKind.CLEANING)
    table = ctx.table
    storage = table.storage
    if args.undo is not None:
        with ctx.lock:  # never beside a purge of the same run (`trash.purge`)
            manifest = trash.undo(storage, args.undo)
        restored = [e.path for e in manifest.entries]
        reply = {"table": table.name, "undone": args.undo, "restored": restored}
        text = f"table {table.name}: run {args.undo} undone, {len(restored)} files back in place"
        print(json.dumps(reply, indent=2) if args.json else text)
        return 0
    result = repair_table(
        table, ctx.config, ctx.lock, ctx.zone, utc_now,
        execute=args.execute,
        min_age=safety_age(ctx.config, args.min_age_hours),
        trash_retention=timedelta(hours=args.trash_retention_hours),
    )  # fmt: skip
    report = result.to_json()
    print(json.dumps(report, indent=2) if args.json else _text(report))
    return 0


def _text(report: Mapping[str, Any]) -> str:
    if report["dry_run"]:
        lines = [f"table {report['table']}: repair, dry run (nothing moved or rolled back)"]
    else:
        moved = f"orphans moved to trash run {report['run']}" if report["run"] else "no orphan moved"
        lines = [f"table {report['table']}: repair: {moved}"]
        if report["rolled_back"]:
            lines.append(f"  rolled back: {', '.join(report['rolled_back'])}")
        for name in ("settled_runs", "purged_runs"):
            if report[name]:
                lines.append(f"  {name.replace('_', ' ')}: {', '.join(report[name])}")
    if report["failed_writes"]:
        names = ", ".join(f"{f['action']} {f['instant']}" for f in report["failed_writes"])
        lines.append(f"  failed writes a clean rolls back (LAZY, heartbeat expired): {names}")
    if report["expired_clusterings"]:
        lines.append(f"  clusterings Hudi 1.2's rule expires: {', '.join(report['expired_clusterings'])}")
    if report["failed_writes_policy"] != "LAZY":
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
