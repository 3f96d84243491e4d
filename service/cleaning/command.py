"""`hudi-table-service clean`: one cleaning pass from the command line (mirrors Hudi's HoodieCleaner)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping

from service.cleaning.orchestrator import Cleaner, CleanOptions
from service.cleaning.results import render_result, result_to_json
from service.command_context import add_service_arguments, open_context
from service.errors import ConfigError
from service.table.properties import TableServiceKind
from strategies.cleaning import DEFAULT_MAX_DELETE_FRACTION


def add_clean_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print every file that would be deleted; write nothing"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the run (or dry run) as one JSON object; logs go to stderr"
    )
    parser.add_argument("--force", action="store_true", help="run a plan the deletion volume breaker refuses")
    parser.add_argument(
        "--max-delete-fraction",
        type=float,
        default=DEFAULT_MAX_DELETE_FRACTION,
        help="volume breaker: refuse a plan deleting more than this share of the files of live file groups",
    )


def cmd_clean(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    if not 0 < args.max_delete_fraction <= 1:
        raise ConfigError(f"--max-delete-fraction={args.max_delete_fraction} must be in (0, 1]")
    ctx = open_context(args, storage_options, TableServiceKind.CLEANING)
    options = CleanOptions(
        dry_run=args.dry_run, force=args.force, max_delete_fraction=args.max_delete_fraction
    )
    result = Cleaner(ctx.table, ctx.config, ctx.lock, ctx.zone, options).run()
    print(json.dumps(result_to_json(result), indent=2) if args.json else render_result(result))
    return 0
