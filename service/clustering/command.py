"""`hudi-table-service cluster`: schedule / execute clustering from the command line.

Mirrors Hudi's HoodieClusteringJob modes: schedule, execute, scheduleAndExecute, purgePending.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from service.clustering.clusterer import Clusterer, ClusteringPassListener, ClusteringPassOptions
from service.clustering.orchestrator import (
    ClusteringResult,
    ScheduleOutcome,
    schedule_clustering,
)
from service.clustering.plan_report import plan_report, plan_to_json, render_plan
from service.clustering.purge import purge_pending_clustering
from service.clustering.records import read_clustering_plan
from service.command_context import CommandContext, add_service_arguments, open_context
from service.errors import HudiTableServiceError
from service.executor import add_spark_arguments, executor_from_args
from service.json_output import fields_json
from service.table.clustering_plan import PlannedClustering
from service.table.heartbeat import HeartbeatSettings
from service.table.instant import Action
from service.table.properties import TableServiceKind
from strategies.clustering.trigger import TriggerMode, pending_clustering_instants

MODES = ("schedule", "execute", "scheduleAndExecute", "purgePending")


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--instant-time", help="the pending clustering to execute or purge (default: oldest)")
    add_spark_arguments(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (groups, input file slices, bytes, planned outputs, order); write nothing",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the plan and result as one JSON object; logs go to stderr"
    )


def render_result(result: ClusteringResult) -> str:
    if result.rolled_back:
        return f"clustering {result.instant_time} rolled back: {result.reason}"
    return (
        f"clustering {result.instant_time} committed: {result.groups} groups, {result.input_files} files "
        f"({result.input_bytes:,} bytes) -> {result.output_files} files ({result.output_bytes:,} bytes) "
        f"in {result.duration_seconds:.1f}s"
    )


def _pending(ctx: CommandContext) -> list[str]:
    timeline = ctx.table.load_timeline()
    return [i.timestamp for i in pending_clustering_instants(timeline, ctx.table.facts_reader)]


class _Reply:
    """What the command prints: text as it goes, or with `--json` one JSON object at the end."""

    def __init__(self, as_json: bool, table: str, mode: str, dry_run: bool) -> None:
        self.as_json = as_json
        self.fields: dict[str, Any] = {
            "table": table, "mode": mode, "dry_run": dry_run, "plan": None, "reason": None, "result": None,
        }  # fmt: skip

    def say(self, text: str, **fields: Any) -> None:
        if self.as_json:
            self.fields.update(fields)
        else:
            print(text)

    def finish(self, code: int) -> int:
        if self.as_json:
            print(json.dumps(self.fields, indent=2))
        return code


_RESULT_FIELDS = (
    "instant_time", "committed", "rolled_back", "reason", "groups", "input_files", "input_bytes",
    "output_files", "output_bytes", "duration_seconds",
)  # fmt: skip


def result_to_json(result: ClusteringResult) -> dict[str, Any]:
    return fields_json(result, _RESULT_FIELDS)


def cmd_cluster(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options, TableServiceKind.CLUSTERING)
    reply = _Reply(args.json, ctx.table.name, args.mode, args.dry_run)
    now = datetime.now(UTC)
    if args.mode == "purgePending":
        if args.dry_run:
            pending = _pending(ctx)
            reply.say(f"pending clustering plans: {', '.join(pending) or 'none'}", pending=pending)
            return reply.finish(0)
        purged = purge_pending_clustering(
            ctx.table, ctx.lock, zone=ctx.zone, now=now, instant_time=args.instant_time,
            heartbeat_settings=HeartbeatSettings.from_config(ctx.config),
        )  # fmt: skip
        reply.say(f"rolled back: {', '.join(purged) or 'nothing pending'}", rolled_back=purged)
        return reply.finish(0)

    def show(plan: PlannedClustering, instant_time: str | None) -> None:
        report = plan_report(plan, instant_time, ctx.config.clustering, ctx.table.storage)
        reply.say(render_plan(report), plan=plan_to_json(report))

    if args.mode == "schedule" or args.dry_run:
        return _preview(args, ctx, reply, show, now)

    class Shown(ClusteringPassListener):
        def on_scheduled(self, outcome: ScheduleOutcome) -> None:
            if outcome.plan is None:
                reply.say(f"nothing scheduled: {outcome.reason}", reason=outcome.reason)
            else:
                show(outcome.plan, outcome.instant_time)

    options = ClusteringPassOptions(TriggerMode.MANUAL, schedule=args.mode == "scheduleAndExecute")
    executor = executor_from_args(args)
    try:
        passed = Clusterer(
            ctx.table, ctx.config, ctx.lock, ctx.zone, executor.run_group, options, listener=Shown()
        ).run(scheduled_at=now, instant_time=args.instant_time)
    finally:
        executor.stop()
    result = passed.result
    if result is None:
        if passed.scheduled is None:
            reason = "no pending clustering plan to execute"
            reply.say(reason, reason=reason)
        return reply.finish(0)
    reply.say(render_result(result), result=result_to_json(result))
    return reply.finish(1 if result.rolled_back else 0)


def _preview(
    args: argparse.Namespace,
    ctx: CommandContext,
    reply: _Reply,
    show: Callable[[PlannedClustering, str | None], None],
    now: datetime,
) -> int:
    """`schedule`, and every mode's dry run: write a plan (schedule only) or show one; execute nothing."""
    if not (args.mode == "execute" or (args.mode == "scheduleAndExecute" and _pending(ctx))):
        outcome = schedule_clustering(
            ctx.table, ctx.config, ctx.lock, now=now, zone=ctx.zone, dry_run=args.dry_run
        )
        if outcome.plan is None:
            reply.say(f"nothing scheduled: {outcome.reason}", reason=outcome.reason)
            return reply.finish(0)
        show(outcome.plan, outcome.instant_time)
        return reply.finish(0)
    pending = _pending(ctx)
    instant_time = args.instant_time or (pending[0] if pending else None)
    if instant_time is None:
        reason = "no pending clustering plan to execute"
        reply.say(reason, reason=reason)
        return reply.finish(0)
    instant = ctx.table.load_timeline().find(instant_time, Action.REPLACE_COMMIT)
    if instant is None:
        raise HudiTableServiceError(f"{ctx.table.base_uri}: no pending clustering at {instant_time}")
    show(read_clustering_plan(ctx.table, instant), instant_time)
    return reply.finish(0)
