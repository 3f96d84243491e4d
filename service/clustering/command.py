"""`hudi-table-service cluster`: schedule / execute clustering from the command line.

Mirrors Hudi's HoodieClusteringJob modes: schedule, execute, scheduleAndExecute, purgePending.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import UTC, datetime

from service.clustering.orchestrator import (
    ClusteringResult,
    execute_clustering,
    purge_pending_clustering,
    schedule_clustering,
)
from service.command_context import CommandContext, add_service_arguments, open_context, parse_key_values
from service.errors import HudiTableServiceError
from service.executor import SparkExecutor
from service.table.heartbeat import HeartbeatSettings
from strategies.plan.model import PlannedClustering
from strategies.plan.trigger import pending_clustering_instants

MODES = ("schedule", "execute", "scheduleAndExecute", "purgePending")


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser)
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--instant-time", help="the pending clustering to execute or purge (default: oldest)")
    parser.add_argument("--spark-master", default="local[*]", help="Spark master URL (default local[*])")
    parser.add_argument(
        "--spark-conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (groups, input files, bytes, outputs); write nothing",
    )


def render_plan(plan: PlannedClustering, instant_time: str | None) -> str:
    head = f"clustering plan {instant_time}" if instant_time else "clustering plan (not written)"
    lines = [
        f"{head}: {len(plan.groups)} groups, {sum(len(g.slices) for g in plan.groups)} input file slices, "
        f"{plan.input_bytes:,} bytes -> {plan.num_output_file_groups} output file groups"
    ]
    for i, group in enumerate(plan.groups):
        size = f"{group.size_bytes:,} bytes" if group.size_bytes is not None else "size unknown"
        lines.append(
            f"  group {i}: partition '{group.partition_path}', {len(group.slices)} slices, {size}, "
            f"{group.num_output_file_groups} output file groups"
        )
        lines += [f"    {s.base_file_path}" for s in group.slices]
    return "\n".join(lines)


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


def cmd_cluster(args: argparse.Namespace, storage_options: Mapping[str, str]) -> int:
    ctx = open_context(args, storage_options)
    now = datetime.now(UTC)
    if args.mode == "purgePending":
        if args.dry_run:
            print("pending clustering plans:", ", ".join(_pending(ctx)) or "none")
            return 0
        purged = purge_pending_clustering(
            ctx.table, ctx.lock, zone=ctx.zone, now=now, instant_time=args.instant_time,
            heartbeat_settings=HeartbeatSettings.from_config(ctx.config),
        )  # fmt: skip
        print("rolled back:", ", ".join(purged) or "nothing pending")
        return 0

    instant_time: str | None = args.instant_time
    if args.mode in ("schedule", "scheduleAndExecute") and not (
        args.mode == "scheduleAndExecute" and _pending(ctx)
    ):
        outcome = schedule_clustering(
            ctx.table, ctx.config, ctx.lock, now=now, zone=ctx.zone, dry_run=args.dry_run
        )
        if outcome.plan is None:
            print(f"nothing scheduled: {outcome.reason}")
            return 0
        print(render_plan(outcome.plan, outcome.instant_time))
        if args.mode == "schedule" or args.dry_run:
            return 0
        instant_time = outcome.instant_time

    pending = _pending(ctx)
    instant_time = instant_time or (pending[0] if pending else None)
    if instant_time is None:
        print("no pending clustering plan to execute")
        return 0
    if args.dry_run:
        from service.table import codecs
        from service.table.instant import Action

        instant = ctx.table.load_timeline().find(instant_time, Action.REPLACE_COMMIT)
        if instant is None:
            raise HudiTableServiceError(f"{ctx.table.base_uri}: no pending clustering at {instant_time}")
        meta = ctx.table.facts_reader.requested_plan(instant, codecs.RequestedReplaceMetadata)
        assert meta is not None
        plan = PlannedClustering.from_requested_metadata(meta, ctx.table.storage, instant.file_name)
        print(render_plan(plan, instant_time))
        return 0
    executor = SparkExecutor(args.spark_master, parse_key_values(args.spark_conf, "--spark-conf"))
    try:
        result = execute_clustering(
            ctx.table, instant_time, ctx.config, executor.run_group, ctx.lock, zone=ctx.zone
        )
    finally:
        executor.stop()
    print(render_result(result))
    return 1 if result.rolled_back else 0
