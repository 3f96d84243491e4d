"""`hudi-table-service check`: what each table service would do to a table now, and why not.

One report per table, built from the same code the services run, in dry-run form (nothing written,
no lock a writer would see): the table's version, type and timeline zone with the zone in force,
the metadata table's partitions and which we serve, the merge (merge-on-read), the lock the
services would take, pending plans with their age and heartbeat, each service's trigger against its
threshold, what its next run would plan (clustering groups, compaction operations, files a clean
deletes), and every refusal with the setting that lifts it. `exit_code`: 0 when every enabled
service can run, 2 when one is refused; an error (1) is the CLI's.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from service.archival import archival_window, archive_location, archived_timeline_files
from service.archival.report import held_by_json, held_by_text, last_archived
from service.blockers import blocker_json, owner, table_blockers
from service.cleaning import Cleaner, CleanOptions
from service.cleaning.guard import held_json
from service.cleaning.snapshot import read_last_clean
from service.clustering.attempts import SCHEDULER_NAME, failed_attempts
from service.clustering.orchestrator import schedule_clustering
from service.clustering.preflight import (
    INDEXES_CLUSTERING_MUST_UPDATE,
    check_index_kept_current,
    writers_index,
)
from service.compaction.scheduler import schedule_compaction
from service.config.hoodie import HoodieConfig, TimelineTimezone
from service.config.hoodie_keys import INDEX_TYPE
from service.config.locking import WriteConcurrencyMode, ZookeeperLockSettings
from service.config.zones import ZoneChoice
from service.errors import (
    NeedsConfigurationError,
    TableServicesRefusedError,
    UnsupportedMergeError,
    VolumeBreakerError,
)
from service.lock.in_process import InProcessTableLock
from service.lock.probe import probe_zookeeper_lock
from service.table.heartbeat import last_heartbeat_ms
from service.table.properties import TableServiceKind, TableType
from service.table.table import HudiTable
from service.table.timeline import Timeline, parse_instant_time
from strategies.cleaning.trigger import commits_since_last_clean
from strategies.clustering.trigger import TriggerMode, clustering_due

REFUSED_EXIT = 2
TABLE_FIX = "change what the reason names in the table's .hoodie/hoodie.properties"


@dataclass(frozen=True)
class CheckInputs:
    """What the services would run with: the `hoodie.*` config, the zone chosen for a LOCAL timeline
    (None: none known) and the setting naming it, the lock provider, which services are enabled."""

    config: HoodieConfig
    zone: ZoneChoice | None
    zone_setting: str
    lock_provider: str
    enabled: Mapping[TableServiceKind, bool]


def check_table(table: HudiTable, inputs: CheckInputs, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    timeline = table.load_timeline()
    accepted = set(table.format.accepted_mdt_partitions(table.config))
    report: dict[str, Any] = {
        "table": {
            "name": table.name,
            "base_path": table.base_uri,
            "type": table.config.table_type.value,
            "table_version": table.format.table_version,
            "timeline_timezone": table.config.timeline_timezone.value,
        },
        "metadata_table": {
            "partitions": list(table.config.metadata_partitions),
            "served": [p for p in table.config.metadata_partitions if p in accepted],
        },
        "keys": _keys(table),
        "index": _index(inputs.config),
        "merge": _merge(table),
        "lock": _lock(table, inputs),
    }
    zone: tzinfo | None = None
    zone_refusal: NeedsConfigurationError | None = None
    try:
        zone = table.timeline_zone(inputs.zone.zone if inputs.zone else None, inputs.zone_setting)
        source = (
            "hoodie.table.timeline.timezone=UTC"
            if table.config.timeline_timezone is TimelineTimezone.UTC
            else inputs.zone.source
            if inputs.zone
            else ""
        )
        report["zone"] = {"in_force": str(zone), "from": source}
    except NeedsConfigurationError as exc:
        zone_refusal = exc
        report["zone"] = {"in_force": None, "from": None, "refusal": str(exc), "fix": exc.setting}
    report["pending"] = _pending(table, timeline, zone, now)
    # What holds the services back, each with its age, effect and way out (`strategies.blockers`).
    report["blockers"] = (
        [
            blocker_json(b, now)
            for b in table_blockers(table, inputs.config, zone, now, timeline, per_slice=True)
        ]
        if zone is not None
        else []
    )
    report["archival"] = _archival(table, inputs.config, zone, timeline)
    report["services"] = {
        str(kind.value): _service(table, inputs, kind, zone, zone_refusal, now)
        for kind in TableServiceKind
        if kind is not TableServiceKind.ARCHIVAL  # reported apart, under "archival"
    }
    return report


def exit_code(report: Mapping[str, Any]) -> int:
    """0: every enabled service can run; 2: one is refused; 1: the lock cannot be reached (an error to
    fix before any service can commit, not a refusal)."""
    probe = report["lock"]["zookeeper"]
    if probe is not None and not probe["reachable"]:
        return 1
    services = report["services"].values()
    return REFUSED_EXIT if any(s["enabled"] and not s["runnable"] for s in services) else 0


def _keys(table: HudiTable) -> dict[str, Any]:
    """Meta fields or virtual keys (`hoodie.populate.meta.fields=false`: the key generator derives the
    record key from the columns; clustering refuses a plan whose files lack its fields)."""
    return {
        "meta_fields": table.config.populate_meta_fields,
        "record_key_fields": table.config.raw.get("hoodie.table.recordkey.fields"),
        "key_generator": table.config.key_generator_class,
    }


def _index(config: HoodieConfig) -> dict[str, Any]:
    """The writers' index as the config says it (unset: the engine's default, SIMPLE on Spark) and
    whether a clustering keeps it current (`preflight.INDEXES_CLUSTERING_MUST_UPDATE`)."""
    value = writers_index(config)
    return {"type": value, "setting": INDEX_TYPE, "clustering_keeps_it_current": (
        value not in INDEXES_CLUSTERING_MUST_UPDATE)}  # fmt: skip


def _merge(table: HudiTable) -> dict[str, Any] | None:
    if table.config.table_type is not TableType.MERGE_ON_READ:
        return None
    from service.table.log_format.merge import MergeConfig

    try:
        merge = MergeConfig.from_table_properties(table.config.raw, table.name)
    except UnsupportedMergeError as exc:
        return {"refusal": str(exc)}
    return {
        "mode": merge.mode.value,
        "payload_class": merge.payload_class.value,
        "ordering_field": merge.ordering_field,
    }


def _lock(table: HudiTable, inputs: CheckInputs) -> dict[str, Any]:
    """The lock the services would take and what can be seen of the writers': Hudi's writers lock only
    under optimistic concurrency, and exclude the services only on the same znode (`lock.probe`)."""
    effective = inputs.config.effective()
    keys = {k: v for k, v in effective.items() if k.startswith("hoodie.write.lock.")}
    mode = inputs.config.write_concurrency_mode
    notes = []
    if mode is not WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL:
        notes.append(
            f"writers in {mode.value} (hoodie.write.concurrency.mode) take no lock: the services must not "
            "commit while one writes; beside running writers, set OPTIMISTIC_CONCURRENCY_CONTROL on the "
            "writers and here, with the zookeeper lock"
        )
    probe = None
    if inputs.lock_provider == "zookeeper":
        settings = ZookeeperLockSettings.from_hoodie_props(effective, table.name)
        found = probe_zookeeper_lock(settings)
        probe = asdict(found)
        notes.append(found.verdict)
    else:
        notes.append(
            "in-process: excludes only this process; writers in other processes must not run table "
            "services or use optimistic concurrency (hoodie.write.concurrency.mode)"
        )
    return {"provider": inputs.lock_provider, "writers_concurrency_mode": mode.value, "keys": keys,
            "zookeeper": probe, "notes": notes}  # fmt: skip


def _pending(table: HudiTable, timeline: Any, zone: tzinfo | None, now: datetime) -> list[dict[str, Any]]:
    out = []
    for instant in timeline.pending():
        age = None
        if zone is not None:
            age = round(max((now - parse_instant_time(instant.timestamp, zone)).total_seconds(), 0.0))
        beat = last_heartbeat_ms(table.storage, instant.timestamp)
        entry = {
            "instant": instant.timestamp,
            "action": instant.action.value,
            "state": instant.state.name,
            "age_seconds": age,
            "heartbeat_age_seconds": round(time.time() - beat / 1000) if beat is not None else None,
            "owner": owner(table, instant),
        }
        if entry["owner"] == SCHEDULER_NAME:  # ours: purged after daemon.failures.purge_after failures
            entry["failed_attempts"] = failed_attempts(table, timeline, instant.timestamp)
        out.append(entry)
    return out


def _archival(
    table: HudiTable, config: HoodieConfig, zone: tzinfo | None, timeline: Timeline
) -> dict[str, Any]:
    """The active timeline's length, whether anyone has archived the table, and what Hudi's archiver
    would archive now with these settings, or what holds it back."""
    history = archived_timeline_files(table)
    last = last_archived(table) if history else None
    entry: dict[str, Any] = {
        "active_instants": len(timeline),
        "archived_timeline": {"location": table.storage.qualify(archive_location(table)), "files": history},
        # Who wrote it, Hudi's files do not say: the daemon's page does for its own runs.
        "last_archived": {"at": last.at.isoformat(timespec="seconds"), "file": last.file} if last else None,
        "keep_min_commits": config.archival.min_commits_to_keep,
        "keep_max_commits": config.archival.max_commits_to_keep,
    }
    if zone is None:
        entry["refusal"] = "the timeline's zone is unknown (see zone)"
        return entry
    window = archival_window(table, config, zone, timeline)
    entry.update(
        archiver=window.archiver.value,
        completed_commits=window.commits,
        min_commits=window.min_commits,
        max_commits=window.max_commits,
        would_archive=len(window.instants),
        oldest_active=timeline.first.timestamp if timeline.first is not None else None,
        held_by=held_by_json(window),
    )
    if not history and window.commits > window.max_commits:
        entry["note"] = (
            f"nobody archives this table: {window.commits} completed commits on the active timeline, "
            f"above hoodie.keep.max.commits={window.max_commits}, and no archived timeline; the "
            "daemon's archival (on unless the table's entry sets archival: {enabled: false}) or "
            "`hudi-table-service archive` archives it"
        )
    return entry


def _service(
    table: HudiTable,
    inputs: CheckInputs,
    kind: TableServiceKind,
    zone: tzinfo | None,
    zone_refusal: NeedsConfigurationError | None,
    now: datetime,
) -> dict[str, Any]:
    enabled = inputs.enabled.get(kind, True)
    entry: dict[str, Any] = {"enabled": enabled, "runnable": False, "refusal": None, "fix": None}
    if kind is TableServiceKind.COMPACTION and table.config.table_type is not TableType.MERGE_ON_READ:
        entry.update(enabled=False, note="copy-on-write: nothing to compact")
        return entry
    try:
        table.check_service_supported(kind)
        if zone_refusal is not None:
            raise zone_refusal
        assert zone is not None
        if kind is TableServiceKind.CLUSTERING:
            check_index_kept_current(table, inputs.config)
        if kind is TableServiceKind.COMPACTION:
            refused = inputs.config.compaction.strategy_not_planned("hoodie.compaction.strategy")
            if refused is not None:
                raise refused
        entry.update(_dry_run(table, inputs.config, kind, zone, now))
        entry["runnable"] = True
    except TableServicesRefusedError as exc:
        entry.update(refusal=str(exc), fix=exc.fix or TABLE_FIX)
    return entry


def _dry_run(
    table: HudiTable, config: HoodieConfig, kind: TableServiceKind, zone: tzinfo, now: datetime
) -> dict[str, Any]:
    """The service's own planning, dry: its trigger against the threshold and its next plan."""
    lock = InProcessTableLock(table.name)  # nothing is written: no writer needs to see this lock
    timeline = table.load_timeline()
    if kind is TableServiceKind.CLEANING:
        since = commits_since_last_clean(timeline, read_last_clean(table, timeline))
        clean_trigger = {"commits_since_last": since, "threshold": config.clean.max_commits,
                         "setting": "hoodie.clean.max.commits"}  # fmt: skip
        try:
            result = Cleaner(table, config, lock, zone, CleanOptions(dry_run=True), now=lambda: now).run()
        except VolumeBreakerError as exc:  # on hold until approved: what would go, and the way out
            held = held_json(exc)
            nxt = {"files_to_delete": held["files_to_delete"], "bytes_to_delete": held["bytes_to_delete"],
                   "pending_cleans_resumed": 0, "reason": None, "on_hold": held}  # fmt: skip
            return {"trigger": clean_trigger, "next": nxt}
        files = sum(c.files_planned for c in result.cleans)
        return {
            "trigger": clean_trigger,
            "next": {"files_to_delete": files,
                     "bytes_to_delete": sum(f.bytes for c in result.cleans for f in c.files),
                     "pending_cleans_resumed": sum(c.resumed for c in result.cleans),
                     "reason": result.skipped_reason},
        }  # fmt: skip
    if kind is TableServiceKind.CLUSTERING:
        decision = clustering_due(timeline, config.clustering, TriggerMode.ASYNC, table.facts_reader)
        outcome = schedule_clustering(table, config, lock, now=now, zone=zone, dry_run=True)
        groups = outcome.plan.groups if outcome.plan is not None else ()
        return {
            "trigger": {"commits_since_last": decision.commits_since_last_clustering,
                        "threshold": config.clustering.async_max_commits,
                        "setting": "hoodie.clustering.async.max.commits",
                        "due": decision.due, "reason": decision.reason},
            "next": {"groups": len(groups), "input_files": sum(len(g.slices) for g in groups),
                     "output_file_groups": sum(g.num_output_file_groups for g in groups),
                     "reason": outcome.reason},
        }  # fmt: skip
    compaction = schedule_compaction(table, config, lock, now=now, zone=zone, dry_run=True)
    trigger = compaction.trigger
    operations = compaction.plan.operations if compaction.plan is not None else ()
    return {
        "trigger": {"delta_commits_since_last": trigger.delta_commits if trigger else None,
                    "threshold": config.compaction.max_delta_commits,
                    "setting": "hoodie.compact.inline.max.delta.commits",
                    "due": trigger.due if trigger else None, "reason": trigger.reason if trigger else None},
        "next": {"operations": len(operations), "log_files": sum(len(o.log_file_names) for o in operations),
                 "reason": compaction.reason},
    }  # fmt: skip


def render_check(report: Mapping[str, Any]) -> str:
    t = report["table"]
    lines = [
        f"table {t['name']} at {t['base_path']}: {t['type']}, table version {t['table_version']}, "
        f"timeline zone {t['timeline_timezone']}",
    ]
    zone = report["zone"]
    if zone.get("in_force"):
        lines.append(f"  instant times in {zone['in_force']} ({zone['from']})")
    else:
        lines.append(f"  zone: {zone['refusal']}")
    mdt = report["metadata_table"]
    if mdt["partitions"]:
        lines.append(f"  metadata table: {', '.join(mdt['partitions'])}; served: {', '.join(mdt['served'])}")
    else:
        lines.append("  metadata table: off")
    keys = report["keys"]
    if keys["meta_fields"]:
        lines.append("  keys: meta fields (_hoodie_record_key in every file)")
    else:
        lines.append(f"  keys: virtual (hoodie.populate.meta.fields=false): {keys['record_key_fields']} "
                     f"by {keys['key_generator']}")  # fmt: skip
    index = report["index"]
    kept = "a clustering keeps it current" if index["clustering_keeps_it_current"] else (
        "a clustering would leave it stale")  # fmt: skip
    lines.append(f"  index: {index['type'] or 'not set (the engine default, SIMPLE on Spark)'}; {kept}")
    merge = report["merge"]
    if merge is not None and "refusal" in merge:
        lines.append(f"  merge: refused: {merge['refusal']}")
    elif merge is not None:
        field = merge["ordering_field"] or "none"
        lines.append(f"  merge: {merge['mode']}, {merge['payload_class']}, ordering field {field}")
    lock = report["lock"]
    lines.append(f"  lock: {lock['provider']} (writers: {lock['writers_concurrency_mode']})")
    lines.extend(f"    {note}" for note in lock["notes"])
    for p in report["pending"]:
        age = f"{p['age_seconds']} s old" if p["age_seconds"] is not None else "age unknown"
        beat = (f"heartbeat {p['heartbeat_age_seconds']} s ago" if p["heartbeat_age_seconds"] is not None
                else "no heartbeat")  # fmt: skip
        owner = f", scheduled by {p['owner']}" if p["owner"] else ""
        failed = f", {p['failed_attempts']} failed attempts" if p.get("failed_attempts") else ""
        lines.append(f"  pending: {p['instant']} {p['action']} {p['state']}, {age}, {beat}{owner}{failed}")
    for b in report["blockers"]:
        age = f"{b['age_seconds']} s" if b["age_seconds"] is not None else "age unknown"
        who = f", {b['owner']}" if b["owner"] else ""
        beat = f", heartbeat {b['heartbeat']}" if b["heartbeat"] else ""
        at = f" {b['instant']}" if b["instant"] else ""
        lines.append(f"  blocker: {b['kind']}{at} ({age}{who}{beat}), holds {', '.join(b['services'])}")
        lines.append(f"    {b['effect']}; way out: {b['way_out']}")
    lines.append(f"  archival: {_archival_text(report['archival'])}")
    for name, s in report["services"].items():
        if not s["enabled"]:
            lines.append(f"  {name}: off{' (' + s['note'] + ')' if s.get('note') else ''}")
            continue
        if not s["runnable"]:
            lines.append(f"  {name}: REFUSED: {s['refusal']}")
            lines.append(f"    to serve it: {s['fix']}")
            continue
        trig, nxt = s["trigger"], s["next"]
        count = trig.get("commits_since_last", trig.get("delta_commits_since_last"))
        lines.append(f"  {name}: can run; trigger {count} of {trig['threshold']} ({trig['setting']})")
        lines.append(f"    next: {_next_text(name, nxt)}")
    return "\n".join(lines)


def _next_text(name: str, nxt: Mapping[str, Any]) -> str:
    if name == "cleaning":
        held = nxt.get("on_hold")
        if held:
            return (
                f"ON HOLD: would delete {held['files_to_delete']} of the {held['live_files']} files of "
                f"live file groups ({held['fraction']:.0%}, over the volume breaker's {held['limit']:.0%}); "
                f"approve this plan once: {held['approve']}"
            )
        if nxt["files_to_delete"]:
            return f"would delete {nxt['files_to_delete']} files ({nxt['bytes_to_delete']} bytes)"
        return f"would delete nothing: {nxt['reason']}"
    if name == "clustering":
        if nxt["groups"]:
            return (f"would plan {nxt['groups']} groups of {nxt['input_files']} file slices into "
                    f"{nxt['output_file_groups']} file groups")  # fmt: skip
        return f"no plan: {nxt['reason']}"
    if nxt["operations"]:
        return f"would compact {nxt['operations']} file slices with {nxt['log_files']} log files"
    return f"no plan: {nxt['reason']}"


def _archival_text(archival: Mapping[str, Any]) -> str:
    files = archival["archived_timeline"]["files"]
    text = f"{archival['active_instants']} instants on the active timeline; archived timeline: "
    text += f"{len(files)} files" if files else "none"
    last = archival.get("last_archived")
    if last:
        text += f", last written {last['at']} ({last['file']})"
    if "refusal" in archival:
        return f"{text}; {archival['refusal']}"
    text += (
        f"; {archival['completed_commits']} completed commits, keep {archival['min_commits']} to "
        f"{archival['max_commits']}; would archive {archival['would_archive']} instants"
    )
    held = archival["held_by"]
    if held is not None:
        text += f"; {held_by_text(held)}"
    if archival.get("note"):
        text += f"\n    {archival['note']}"
    return text
