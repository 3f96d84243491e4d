"""Roll back writers' failed attempts before cleaning, as Hudi's clean does under LAZY failed writes.

Under optimistic concurrency Hudi writers use `hoodie.cleaner.policy.failed.writes=LAZY`: a write that
failed (a rejected conflict, a killed process) stays pending, and only a later clean rolls it back,
once its heartbeat has expired. Left pending it holds the earliest commit to retain back forever, so
nothing would ever be cleaned again. A write counts as failed exactly as Hudi judges it: its heartbeat
file (`.hoodie/.heartbeat/<instant>`, touched every interval while the writer lives, deleted when it
stops) is older than interval x tolerable misses, or missing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, tzinfo

from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from service.lock.base import TableLock
from service.rollback import rollback_instant
from service.table import codecs
from service.table.instant import Action, Instant
from service.table.table import HudiTable
from service.table.timeline import Timeline

log = logging.getLogger(__name__)

HEARTBEAT_FOLDER = ".hoodie/.heartbeat"


def heartbeat_expired(table: HudiTable, instant_time: str, now_ms: int, max_interval_ms: int) -> bool:
    status = table.storage.status(f"{HEARTBEAT_FOLDER}/{instant_time}")
    last_ms = (status.mtime_ns or 0) // 1_000_000 if status is not None else 0
    return now_ms - last_ms > max_interval_ms


def failed_writes(table: HudiTable, timeline: Timeline, config: HoodieConfig, now: datetime) -> list[Instant]:
    """Pending commits and non-clustering replacecommits whose writer's heartbeat has expired."""
    interval = config.get(HEARTBEAT_INTERVAL_MS)
    misses = config.get(HEARTBEAT_TOLERABLE_MISSES)
    assert interval is not None and misses is not None
    max_interval_ms = int(interval) * int(misses)
    now_ms = int(now.timestamp() * 1000)
    failed = []
    for instant in timeline.pending().by_actions([Action.COMMIT, Action.REPLACE_COMMIT]):
        if instant.action is Action.REPLACE_COMMIT:
            plan = table.facts_reader.requested_plan(instant, codecs.RequestedReplaceMetadata)
            if plan is not None and plan.is_clustering:
                continue  # table services own their plans; Hudi excludes clustering here too
        if heartbeat_expired(table, instant.timestamp, now_ms, max_interval_ms):
            failed.append(instant)
    return failed


def rollback_failed_writes(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    zone: tzinfo,
    now: Callable[[], datetime],
    timeline: Timeline | None = None,
) -> list[str]:
    """Roll back every failed write (LAZY policy only); returns the instants rolled back.

    `timeline`: one just loaded by the caller (else it is loaded here).
    """
    if config.clean.failed_writes_policy.value != "LAZY":
        return []
    rolled_back = []
    for instant in failed_writes(table, timeline or table.load_timeline(), config, now()):
        log.info("table %s: rolling back failed write %s (heartbeat expired)", table.name, instant)
        rollback_instant(table, instant.timestamp, lock, now=now(), tz=zone)
        rolled_back.append(instant.timestamp)
    return rolled_back
