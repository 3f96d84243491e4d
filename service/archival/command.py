"""`hudi-table-service archive`: one archival pass from the command line (Hudi's `archive_commits`)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from service.archival.archiver import ArchiveResult, archive
from service.archival.report import held_by_json, held_by_text
from service.command_context import add_service_arguments, open_context
from service.table.properties import TableServiceKind


def add_archive_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="print what would be archived; write nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object; logs go to stderr")


def cmd_archive(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options, TableServiceKind.ARCHIVAL)
    result = archive(ctx.table, ctx.config, ctx.lock, ctx.zone, dry_run=args.dry_run)
    reply = result_to_json(ctx.table.name, result)
    print(json.dumps(reply, indent=2) if args.json else render_result(reply))
    return 0


def result_to_json(table: str, result: ArchiveResult) -> dict[str, Any]:
    window = result.window
    return {
        "table": table,
        "dry_run": result.dry_run,
        "archiver": window.archiver.value,
        "completed_commits": window.commits,
        "min_commits": window.min_commits,
        "max_commits": window.max_commits,
        "instants": [{"instant": i.timestamp, "action": i.action.value} for i in result.archived],
        "held_by": held_by_json(window),
        "data_file": result.data_file,
        "files_deleted": result.files_deleted,
    }


def render_result(reply: Mapping[str, Any]) -> str:
    verb = "would archive" if reply["dry_run"] else "archived"
    lines = [f"{reply['table']}: {verb} {len(reply['instants'])} instants ({reply['archiver']})"]
    lines.extend(f"  {i['instant']} {i['action']}" for i in reply["instants"])
    held = reply["held_by"]
    if held is not None:
        lines.append(f"  {held_by_text(held)}")
    if reply["data_file"]:
        lines.append(f"  wrote {reply['data_file']}; deleted {reply['files_deleted']} instant files")
    return "\n".join(lines)
