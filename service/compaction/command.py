"""`hudi-table-service compact`: schedule a compaction from the command line.

Mirrors Hudi's `HoodieCompactor` (`--mode schedule`, `--instant-time`, `--props`, `--hoodie-conf`);
`execute` runs a pending plan (`--instant-time`, default the oldest) on Spark (`--spark-master`,
`--spark-conf`), `scheduleAndExecute` the one it schedules. `--dry-run` schedules nothing and
executes nothing.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from service.command_context import add_service_arguments, open_context
from service.compaction.executor import execute_compaction, pending_compactions
from service.compaction.scheduler import CompactionScheduleOutcome, schedule_compaction
from service.executor import add_spark_arguments, executor_from_args
from service.table.properties import TableServiceKind
from strategies.compaction import PlannedCompaction

MODES = ("schedule", "execute", "scheduleAndExecute")


def add_compact_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument(
        "--instant-time",
        help="schedule: the instant to schedule (default: now, after every instant); "
        "execute: the pending compaction to run (default: the oldest)",
    )
    add_spark_arguments(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print the plan (file slices, log files, IO); write nothing"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the plan as one JSON object; logs go to stderr"
    )


def plan_to_json(plan: PlannedCompaction) -> list[dict[str, Any]]:
    return [
        {
            "partition_path": op.partition_path,
            "file_id": op.file_id,
            "base_instant": op.base_instant_time,
            "base_file": op.base_file_name,
            "base_file_bytes": op.base_file_size_bytes,
            "log_files": list(op.log_file_names),
            "log_file_bytes": op.total_log_bytes,
            "metrics": dict(op.metrics),
        }
        for op in plan.operations
    ]


def outcome_to_json(
    table: str, mode: str, dry_run: bool, outcome: CompactionScheduleOutcome
) -> dict[str, Any]:
    trigger = outcome.trigger
    return {
        "table": table,
        "mode": mode,
        "dry_run": dry_run,
        "instant_time": outcome.instant_time,
        "written": outcome.written,
        "reason": outcome.reason,
        "trigger": None
        if trigger is None
        else {
            "due": trigger.due,
            "reason": trigger.reason,
            "delta_commits": trigger.delta_commits,
            "reference_instant": trigger.reference_instant,
            "elapsed_seconds": trigger.elapsed_seconds,
        },
        "operations": plan_to_json(outcome.plan) if outcome.plan is not None else [],
    }


def render_outcome(outcome: CompactionScheduleOutcome) -> str:
    if outcome.plan is None:
        return f"nothing scheduled: {outcome.reason}"
    head = (
        f"scheduled compaction {outcome.instant_time}"
        if outcome.written
        else "dry run: compaction not written"
    )
    lines = [f"{head}: {len(outcome.plan.operations)} file slices ({outcome.reason})"]
    for op in outcome.plan.operations:
        lines.append(
            f"  {op.partition_path or '(non-partitioned)'} {op.file_id} base {op.base_instant_time} "
            f"{op.base_file_name or '(log-only)'} ({op.base_file_size_bytes:,} bytes) + "
            f"{len(op.log_file_names)} log files ({op.total_log_bytes:,} bytes), IO {op.total_io_mb} MB"
        )
    return "\n".join(lines)


def cmd_compact(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options, TableServiceKind.COMPACTION)
    reply: dict[str, Any] = {"table": ctx.table.name, "mode": args.mode, "dry_run": args.dry_run}
    text: list[str] = []
    instant_time = args.instant_time
    if args.mode != "execute":
        outcome = schedule_compaction(
            ctx.table, ctx.config, ctx.lock, now=datetime.now(UTC), zone=ctx.zone,
            instant_time=instant_time, dry_run=args.dry_run,
        )  # fmt: skip
        reply.update(outcome_to_json(ctx.table.name, args.mode, args.dry_run, outcome))
        text.append(render_outcome(outcome))
        instant_time = outcome.instant_time
    if args.mode != "schedule":
        if args.mode == "execute" and instant_time is None:
            pending = pending_compactions(ctx.table.load_timeline())
            instant_time = pending[0].timestamp if pending else None
        if args.dry_run:
            reply["instant_time"], reply["result"] = (instant_time if args.mode == "execute" else None), None
            text.append(f"dry run: would execute {instant_time}" if args.mode == "execute" else "")
        elif instant_time is None:
            reply["result"] = None
            text.append("no pending compaction to execute")
        else:
            executor = executor_from_args(args)
            try:
                result = execute_compaction(
                    ctx.table, ctx.config, ctx.lock, instant_time, executor.run_compaction, zone=ctx.zone
                )
            finally:
                executor.stop()
            reply["instant_time"] = instant_time
            reply["result"] = {
                "instant_time": result.instant_time,
                "committed": result.committed,
                "operations": result.operations,
                "output_files": result.output_files,
                "output_bytes": result.output_bytes,
                "records": result.records,
                "duration_seconds": result.duration_seconds,
            }
            text.append(
                f"compaction {instant_time} committed: {result.operations} file slices -> "
                f"{result.output_files} files ({result.output_bytes:,} bytes, {result.records:,} records) "
                f"in {result.duration_seconds:.1f}s"
            )
    print(json.dumps(reply, indent=2) if args.json else "\n".join(text))
    return 0
