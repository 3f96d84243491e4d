"""One repair of a table, as `hudi-table-service repair` and the daemon's opt-in repair service run it
(`service.repair.command` says what each step does): settle what a stopped run left, roll back the
failed writes and the clusterings Hudi 1.2 expires (LAZY failed writes), move the orphan files to the
trash, empty the trash of runs older than the retention. A dry run only looks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from service import trash
from service.cleaning.failed_writes import expired_clusterings, failed_writes, rollback_failed_writes
from service.config.hoodie import HoodieConfig
from service.lock.base import TableLock
from service.repair.orphans import OrphanVerdict, find_orphans
from service.table.instant import Instant
from service.table.table import HudiTable


@dataclass(frozen=True)
class RepairReport:
    table: HudiTable
    dry_run: bool
    run: str | None  # the trash run that moved the orphans (`--undo RUN`); None: nothing moved
    settled: list[str]
    purged: list[str]
    min_age: timedelta
    failed: list[Instant]  # dry run: the failed writes an execution rolls back
    expired: list[Instant]  # dry run: the clusterings Hudi 1.2's rule expires
    rolled_back: list[str]
    failed_writes_policy: str
    verdict: OrphanVerdict

    @property
    def moved(self) -> int:
        return len(self.verdict.orphans) if self.run is not None else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table.name,
            "base_path": self.table.base_uri,
            "dry_run": self.dry_run,
            "run": self.run,
            "settled_runs": self.settled,
            "purged_runs": self.purged,
            "safety_age_hours": self.min_age.total_seconds() / 3600,
            "failed_writes": [{"instant": i.timestamp, "action": i.action.value} for i in self.failed],
            "expired_clusterings": [i.timestamp for i in self.expired],
            "rolled_back": self.rolled_back,
            "failed_writes_policy": self.failed_writes_policy,
            "orphans": [
                {
                    "path": o.path,
                    "instant": o.instant,
                    "bytes": o.size,
                    "modified": o.modified.isoformat(timespec="seconds") if o.modified else None,
                }
                for o in self.verdict.orphans
            ],
            "kept": [{"path": k.path, "why": k.why} for k in self.verdict.kept],
        }


def repair_table(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    zone: tzinfo,
    now: Callable[[], datetime],
    *,
    execute: bool,
    min_age: timedelta,
    trash_retention: timedelta,
) -> RepairReport:
    storage = table.storage
    started = now()
    lazy = config.clean.failed_writes_policy.value == "LAZY"
    timeline = table.load_timeline()
    settled: list[str] = []
    rolled_back: list[str] = []
    run = None
    if execute:
        current = {o.path for o in find_orphans(table, timeline, started, min_age).orphans}
        settled = trash.settle(storage, current.__contains__)
        if lazy:
            rolled_back = rollback_failed_writes(table, config, lock, zone, now, timeline)
            timeline = table.load_timeline()
    failed, expired = [], []
    if lazy and not execute:  # what an execution would roll back
        failed = failed_writes(table, timeline, config, started)
        expired = expired_clusterings(table, timeline, config, started, zone)
    verdict = find_orphans(table, timeline, started, min_age)
    if execute and verdict.orphans:
        run = trash.new_run_id(started)
        entries = trash.entries_of(((o.path, o.size, o.instant, "orphan file") for o in verdict.orphans), run)
        manifest = trash.TrashManifest(
            run=run, table=table.name, created_at=started.isoformat(), reason="repair: orphan files",
            entries=entries,
        )  # fmt: skip
        trash.write_manifest(storage, manifest)
        trash.move(storage, manifest)
    purged = trash.purge(storage, started, trash_retention, cleans=False, lock=lock) if execute else []
    return RepairReport(
        table=table, dry_run=not execute, run=run, settled=settled, purged=purged, min_age=min_age,
        failed=failed, expired=expired, rolled_back=rolled_back,
        failed_writes_policy=config.clean.failed_writes_policy.value, verdict=verdict,
    )  # fmt: skip
