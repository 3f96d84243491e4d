"""`hudi-table-service clean`: one cleaning pass from the command line (mirrors Hudi's HoodieCleaner).

A plan the volume breaker holds exits 2 (held, not failed) naming its digest; `--approve DIGEST`
records that exactly that plan may pass once (`service.cleaning.approvals`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping
from datetime import timedelta

from service.cleaning.approvals import DIGEST, record_approval
from service.cleaning.guard import held_json
from service.cleaning.orchestrator import Cleaner, CleanOptions
from service.cleaning.results import render_result, write_result_json
from service.cleaning.undo import undo_clean
from service.clock import utc_now
from service.command_context import CommandContext, add_service_arguments, open_context
from service.errors import ConfigError, VolumeBreakerError
from service.table.instant import INSTANT_TIME_LENGTHS
from service.table.properties import TableServiceKind
from strategies.cleaning import DEFAULT_MAX_DELETE_FRACTION

log = logging.getLogger(__name__)

HELD_EXIT = 2  # as `check`'s refusal: nothing failed, a person decides


def add_clean_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print every file that would be deleted; write nothing"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the run (or dry run) as one JSON object; logs go to stderr"
    )
    parser.add_argument(
        "--force", action="store_true", help="run a plan the deletion volume breaker holds, whatever it is"
    )
    parser.add_argument(
        "--max-delete-fraction",
        type=float,
        default=DEFAULT_MAX_DELETE_FRACTION,
        help="volume breaker: hold a plan deleting more than this share of the files of live file groups",
    )
    parser.add_argument(
        "--trash-retention-hours",
        type=float,
        default=None,
        metavar="H",
        help="move the clean's files to the table's trash instead of deleting them, and empty the trash of "
        "cleans older than H hours (a daemon table's cleaning.trash_retention_hours)",
    )
    parser.add_argument(
        "--undo",
        metavar="INSTANT",
        help="put back the files the completed clean INSTANT moved to the trash (byte for byte); the "
        "clean stays on the timeline",
    )
    parser.add_argument(
        "--approve",
        metavar="DIGEST",
        help="let the held plan with this digest (printed when it was held) pass the volume breaker once: "
        "the next clean, the daemon's or this command's, runs it; a plan deleting other files stays held",
    )


def cmd_clean(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    if not 0 < args.max_delete_fraction <= 1:
        raise ConfigError(f"--max-delete-fraction={args.max_delete_fraction} must be in (0, 1]")
    if args.approve is not None and DIGEST.fullmatch(args.approve) is None:
        raise ConfigError(f"--approve {args.approve!r}: not a plan digest (the one a held clean printed)")
    if args.trash_retention_hours is not None and not args.trash_retention_hours > 0:
        raise ConfigError(f"--trash-retention-hours={args.trash_retention_hours} must be above 0")
    if args.undo is not None and not (args.undo.isdigit() and len(args.undo) in INSTANT_TIME_LENGTHS):
        raise ConfigError(f"--undo {args.undo!r}: not an instant time (the clean's, 17 digits)")
    ctx = open_context(args, storage_options, TableServiceKind.CLEANING)
    retention = args.trash_retention_hours
    options = CleanOptions(
        dry_run=args.dry_run,
        force=args.force,
        max_delete_fraction=args.max_delete_fraction,
        trash_retention=timedelta(hours=retention) if retention is not None else None,
    )
    if args.approve is not None:
        return _approve(ctx, args.approve)
    if args.undo is not None:
        return _undo(ctx, args.undo, args.json)
    try:
        result = Cleaner(ctx.table, ctx.config, ctx.lock, ctx.zone, options).run()
    except VolumeBreakerError as exc:
        log.warning("clean held: %s", exc)
        if args.json:
            print(json.dumps({"table": ctx.table.name, "held": held_json(exc)}, indent=2))
        return HELD_EXIT
    if args.json:
        write_result_json(result, sys.stdout)
    else:
        print(render_result(result))
    return 0


def _undo(ctx: CommandContext, instant: str, as_json: bool) -> int:
    """Take clean `instant` back: its files from the trash, its instant off the timeline
    (`service.cleaning.undo`)."""
    table = ctx.table
    manifest = undo_clean(table, ctx.lock, instant, utc_now, ctx.zone)
    restored = [e.path for e in manifest.entries]
    if as_json:
        print(json.dumps({"table": table.name, "undone": instant, "restored": restored}, indent=2))
    else:
        print(
            f"table {table.name}: clean {instant} undone: {len(restored)} files back in place, the clean "
            "off the timeline; the next clean plans them again (pause cleaning while the older "
            "snapshots are needed)"
        )
    return 0


def _approve(ctx: CommandContext, digest: str) -> int:
    """Record the approval of the held plan `digest`. No planning here: the plan was held under the
    settings of whoever runs the clean (the daemon's table entry, or this command's flags), and only a
    plan deleting exactly the files `digest` names runs by it."""
    table = ctx.table
    rel = record_approval(table.storage, digest, utc_now())
    print(
        f"table {table.name}: clean plan {digest} approved once ({table.storage.qualify(rel)}); the next "
        "clean whose plan deletes exactly those files runs it: the daemon's next tick, or "
        f"`hudi-table-service clean --base-path {table.base_uri}` with the settings it was held under"
    )
    return 0
