"""What a clustering plan will do, for `cluster --dry-run` (text) and `--json` (one object).

Per group: its partition, its input file slices (file id, base file, base instant, bytes) and its
planned output: the plan's `numOutputFileGroups`, the bytes it rewrites, the target file size, and
the order the rows are written in. Sort columns come from the plan's strategy params (what execution
reads, as Java's `SparkSortAndSizeExecutionStrategy` does); layout and curve build method from the
config, which execution uses too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.config.clustering import SORT_COLUMNS_KEY, ClusteringConfig
from service.table.clustering_plan import PlannedClustering, PlannedSlice
from service.table.storage import Storage


@dataclass(frozen=True)
class SliceReport:
    file_id: str
    base_file_path: str  # base-relative; "" for a log-only merge-on-read slice
    base_instant: str
    bytes: int | None  # the base file's (0 without one); None: the base file is gone
    log_files: tuple[str, ...] = ()  # base-relative, newest first (merge-on-read: read merged)


@dataclass(frozen=True)
class OutputReport:
    file_groups: int  # the plan's numOutputFileGroups
    expected_bytes: int | None  # the input bytes rewritten (None when an input is gone)
    target_file_bytes: int
    sort_columns: tuple[str, ...]  # empty: the input order is kept
    layout_strategy: str
    curve_build_method: str


@dataclass(frozen=True)
class GroupReport:
    index: int
    partition_path: str
    slices: tuple[SliceReport, ...]
    output: OutputReport

    @property
    def input_bytes(self) -> int | None:
        sizes = [s.bytes for s in self.slices]
        return None if any(b is None for b in sizes) else sum(b or 0 for b in sizes)


@dataclass(frozen=True)
class PlanReport:
    instant_time: str | None  # None: a dry run's plan, not written
    strategy_class: str
    groups: tuple[GroupReport, ...]

    @property
    def input_file_slices(self) -> int:
        return sum(len(g.slices) for g in self.groups)

    @property
    def input_bytes(self) -> int:
        return sum(s.bytes or 0 for g in self.groups for s in g.slices)

    @property
    def num_output_file_groups(self) -> int:
        return sum(g.output.file_groups for g in self.groups)


def plan_report(
    plan: PlannedClustering, instant_time: str | None, config: ClusteringConfig, storage: Storage
) -> PlanReport:
    """The report of `plan`; sizes a stored plan does not carry are read from storage."""
    value = plan.strategy_params.get(SORT_COLUMNS_KEY) or ""
    sort_columns = tuple(c.strip() for c in value.split(",") if c.strip())
    groups = []
    for index, group in enumerate(plan.groups):
        slices = tuple(_slice(s, storage) for s in group.slices)
        sizes = [s.bytes for s in slices]
        output = OutputReport(
            file_groups=group.num_output_file_groups,
            expected_bytes=None if any(b is None for b in sizes) else sum(b or 0 for b in sizes),
            target_file_bytes=config.target_file_max_bytes,
            sort_columns=sort_columns,
            layout_strategy=config.layout_strategy.value,
            curve_build_method=config.curve_build_method.value,
        )
        groups.append(GroupReport(index, group.partition_path, slices, output))
    return PlanReport(instant_time, plan.strategy_class, tuple(groups))


def _slice(s: PlannedSlice, storage: Storage) -> SliceReport:
    size = s.base_file_size_bytes if s.base_file_path else 0
    if size is None:
        status = storage.status(s.base_file_path)
        size = status.size if status is not None else None
    return SliceReport(s.file_id, s.base_file_path, s.base_instant_time, size, s.log_file_paths)


def render_plan(report: PlanReport) -> str:
    head = (
        f"clustering plan {report.instant_time}" if report.instant_time else "clustering plan (not written)"
    )
    lines = [
        f"{head}: {len(report.groups)} groups, {report.input_file_slices} input file slices, "
        f"{report.input_bytes:,} bytes -> {report.num_output_file_groups} output file groups"
    ]
    for g in report.groups:
        out = g.output
        size = f"{g.input_bytes:,} bytes" if g.input_bytes is not None else "size unknown (an input is gone)"
        order = (
            f"sorted by {', '.join(out.sort_columns)} ({out.layout_strategy}, curve {out.curve_build_method})"
            if out.sort_columns
            else "input order kept (no sort columns)"
        )
        lines.append(
            f"  group {g.index}: partition '{g.partition_path}', {len(g.slices)} slices, {size}, "
            f"{out.file_groups} output file groups of target {out.target_file_bytes:,} bytes, {order}"
        )
        for s in g.slices:
            size = f"{s.bytes:,} bytes" if s.bytes is not None else "gone"
            logs = f"  + {len(s.log_files)} log files" if s.log_files else ""
            base = s.base_file_path or "(no base file)"
            lines.append(f"    {base}  file {s.file_id}  base instant {s.base_instant}  {size}{logs}")
    return "\n".join(lines)


def plan_to_json(report: PlanReport) -> dict[str, Any]:
    return {
        "instant_time": report.instant_time,
        "written": report.instant_time is not None,
        "strategy_class": report.strategy_class,
        "input_file_slices": report.input_file_slices,
        "input_bytes": report.input_bytes,
        "num_output_file_groups": report.num_output_file_groups,
        "groups": [
            {
                "index": g.index,
                "partition_path": g.partition_path,
                "input_bytes": g.input_bytes,
                "slices": [
                    {
                        "file_id": s.file_id,
                        "base_file_path": s.base_file_path,
                        "base_instant": s.base_instant,
                        "bytes": s.bytes,
                        "log_files": list(s.log_files),
                    }
                    for s in g.slices
                ],
                "output": {
                    "file_groups": g.output.file_groups,
                    "expected_bytes": g.output.expected_bytes,
                    "target_file_bytes": g.output.target_file_bytes,
                    "sort_columns": list(g.output.sort_columns),
                    "layout_strategy": g.output.layout_strategy,
                    "curve_build_method": g.output.curve_build_method,
                },
            }
            for g in report.groups
        ],
    }
