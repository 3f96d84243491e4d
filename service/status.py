"""The `status` report: a table's summary, timeline, pending plans and live file groups, as data."""

from __future__ import annotations

from typing import Any

from service.clustering.attempts import failed_attempts
from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action
from service.table.table import HudiTable
from service.table.timeline import Timeline


def table_status(table: HudiTable) -> dict[str, Any]:
    """One JSON-ready object; other tools parse it, so keys only ever get added."""
    timeline = table.load_timeline()
    facts = table.facts_reader.read(timeline)
    file_groups: list[dict[str, Any]] = []
    replaced = uncommitted = 0
    # Storage's listing: `uncommitted_files` counts pending and failed writes' files, which the
    # metadata table never lists. A batch of partitions at a time: the report's rows are held, never
    # the whole table's view.
    for view in table.iter_views(timeline, from_storage=True, facts=facts):
        file_groups += _file_groups(view)
        replaced += len(view.replaced_file_groups)
        uncommitted += len(view.uncommitted_files)
    file_groups.sort(key=lambda fg: (fg["partition_path"], fg["file_id"]))
    pending = timeline.pending()
    return {
        "table": {
            "name": table.config.name,
            "database": table.config.database_name or None,
            "type": table.config.table_type.value,
            "version": table.format.table_version,
            "table_version": table.format.table_version,
            "timeline_layout_version": table.layout.version,
            "base_path": table.base_uri,
            "partition_fields": table.config.partition_fields,
            "record_key_fields": table.config.record_key_fields,
            "timeline_timezone": table.config.timeline_timezone.value,
        },
        "instants": [
            {
                "timestamp": i.timestamp,
                "action": i.action.value,
                "state": i.state.name,
                "completion_time": i.completion_time,
            }
            for i in timeline
        ],
        "pending_clustering": _pending_clustering(table, timeline, facts),
        "pending_clean": [
            {"timestamp": i.timestamp, "state": i.state.name} for i in pending.by_actions([Action.CLEAN])
        ],
        "file_groups": file_groups,
        "replaced_file_groups": replaced,
        "uncommitted_files": uncommitted,
    }


def _file_groups(view: FileSystemView) -> list[dict[str, Any]]:
    return [
        {
            "partition_path": fg.partition_path,
            "file_id": fg.file_id,
            "base_file": s.base_file.file_name if s.base_file else None,
            "base_instant": s.base_instant_time,
            "size_bytes": s.total_size_bytes,
            # Hudi's `HoodieLogFile.getLogFileComparator` order (the order readers merge them in).
            "log_files": [{"name": lf.file_name, "size_bytes": lf.size_bytes} for lf in s.log_files],
        }
        for fg in view.live_file_groups
        if (s := fg.latest_slice) is not None
    ]


def _pending_clustering(table: HudiTable, timeline: Timeline, facts: TimelineFacts) -> list[dict[str, Any]]:
    by_instant: dict[str, list[list[str]]] = {}
    for (partition, file_id), instant in sorted(facts.pending_clustering.items()):
        by_instant.setdefault(instant, []).append([partition, file_id])
    pending = timeline.pending().by_actions([Action.REPLACE_COMMIT, Action.CLUSTERING])
    state = {i.timestamp: i.state.name for i in pending}
    return [
        {
            "timestamp": ts,
            "state": state.get(ts, "REQUESTED"),
            "file_groups": groups,
            # Attempts rolled back with the plan kept (see service/clustering/attempts.py).
            "failed_attempts": failed_attempts(table, timeline, ts),
        }
        for ts, groups in sorted(by_instant.items())
    ]


def render_text(status: dict[str, Any]) -> str:
    t = status["table"]
    lines = [
        f"table {t['name']} ({t['type']}, version {t['version']}) at {t['base_path']}",
        f"partition fields: {', '.join(t['partition_fields']) or '(none)'}; "
        f"record key: {', '.join(t['record_key_fields']) or '(auto)'}; "
        f"timeline zone {t['timeline_timezone']}",
        "",
        f"instants ({len(status['instants'])}):",
    ]
    lines += [f"  {i['timestamp']}  {i['action']:<14} {i['state']}" for i in status["instants"]]
    lines.append("")
    lines.append(f"pending clustering plans: {len(status['pending_clustering'])}")
    for plan in status["pending_clustering"]:
        lines.append(
            f"  {plan['timestamp']} {plan['state']}: {len(plan['file_groups'])} file groups, "
            f"{plan['failed_attempts']} failed attempts"
        )
    lines.append(f"pending clean plans: {len(status['pending_clean'])}")
    for plan in status["pending_clean"]:
        lines.append(f"  {plan['timestamp']} {plan['state']}")
    lines.append("")
    groups = status["file_groups"]
    total = sum(g["size_bytes"] for g in groups)
    lines.append(
        f"live file groups: {len(groups)} ({total / 1e6:.1f} MB); replaced: "
        f"{status['replaced_file_groups']}; uncommitted files: {status['uncommitted_files']}"
    )
    for g in groups:
        part = g["partition_path"] or "(non-partitioned)"
        logs = f" + {len(g['log_files'])} log files" if g["log_files"] else ""
        base = g["base_file"]
        lines.append(
            f"  {part:<24} {g['file_id']}  {g['base_instant']}  {g['size_bytes']:>12,} B  {base}{logs}"
        )
    return "\n".join(lines)
