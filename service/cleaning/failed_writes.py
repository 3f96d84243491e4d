"""Roll back writers' failed attempts before cleaning, as Hudi's clean does under LAZY failed writes.

Under optimistic concurrency Hudi writers use `hoodie.cleaner.policy.failed.writes=LAZY`: a write that
failed (a rejected conflict, a killed process) stays pending, and only a later clean rolls it back,
once its heartbeat has expired. Left pending it holds the earliest commit to retain back forever, so
nothing would ever be cleaned again. A write counts as failed exactly as Hudi judges it: its heartbeat
file (`.hoodie/.heartbeat/<instant>`, touched every interval while the writer lives, deleted when it
stops) is older than interval x tolerable misses, or missing (`service.table.heartbeat.is_expired`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

from service.clustering.purge import purge_pending_clustering
from service.config.hoodie import HoodieConfig
from service.errors import InstantOwnedError, UnsupportedTableError
from service.lock.base import TableLock
from service.rollback import rollback_instant
from service.table import codecs
from service.table.heartbeat import HeartbeatSettings, is_expired
from service.table.instant import Action, Instant
from service.table.table import HudiTable
from service.table.timeline import Timeline, parse_instant_time
from strategies.clustering.trigger import pending_clustering_instants

log = logging.getLogger(__name__)


def failed_writes(table: HudiTable, timeline: Timeline, config: HoodieConfig, now: datetime) -> list[Instant]:
    """Pending commits, deltacommits and non-clustering replacecommits whose writer's heartbeat has
    expired (`BaseHoodieTableServiceClient.getInstantsToRollback` over the timeline without
    compaction and clustering: a log compaction is a table service too, and is left alone)."""
    settings = HeartbeatSettings.from_config(config)
    now_ms = int(now.timestamp() * 1000)
    failed = []
    for instant in timeline.pending().by_actions([Action.COMMIT, Action.REPLACE_COMMIT, Action.DELTA_COMMIT]):
        if instant.action is Action.REPLACE_COMMIT:
            plan = table.facts_reader.requested_plan(instant, codecs.RequestedReplaceMetadata)
            if plan is not None and plan.is_clustering:
                continue  # table services own their plans; Hudi excludes clustering here too
        if is_expired(table.storage, instant.timestamp, now_ms, settings):
            failed.append(instant)
    return failed


def expired_clusterings(
    table: HudiTable, timeline: Timeline, config: HoodieConfig, now: datetime, zone: tzinfo
) -> list[Instant]:
    """Pending clusterings (requested or inflight) Hudi 1.2 rolls back with the failed writes when
    `hoodie.clustering.enable.expirations` is on (`BaseHoodieTableServiceClient.getInstantsToRollback`
    under LAZY, `isClusteringInstantEligibleForRollback`): at least
    `hoodie.clustering.expiration.threshold.mins` old by their requested time (read in the timeline's
    zone), and their heartbeat expired or missing. A plan whose executor beats is never expired: Hudi
    1.2 keeps a heartbeat from scheduling to commit, this service from claiming to commit. Rolling one
    back claims it first (`purge_pending_clustering`), which also keeps an inflight plan without a
    heartbeat whose `.inflight` file is younger than the heartbeat window: executors before Hudi 1.2
    keep no heartbeat, and one may be at work on it."""
    clustering = config.clustering
    if not clustering.expirations_enabled:
        return []
    settings = HeartbeatSettings.from_config(config)
    now_ms = int(now.timestamp() * 1000)
    threshold = timedelta(minutes=clustering.expiration_threshold_mins)
    return [
        instant
        for instant in pending_clustering_instants(timeline, table.facts_reader)
        if now - parse_instant_time(instant.timestamp, zone) >= threshold
        and is_expired(table.storage, instant.timestamp, now_ms, settings)
    ]


def interrupted_rollbacks(table: HudiTable, timeline: Timeline) -> list[str]:
    """Instants whose rollback is pending while they are gone from the timeline: the rollback was
    interrupted after it deleted their instant files, before it completed. Java resumes every pending
    rollback of a non-compaction, non-clustering instant with its failed writes
    (`BaseHoodieTableServiceClient.rollbackFailedWrites` takes `getPendingRollbackInfos` first), and
    reconstructs a target no longer on the timeline from the plan; an instant still on the timeline is
    left to `failed_writes` (or to the service that owns it)."""
    on_timeline = {i.timestamp for i in timeline}
    targets = []
    for instant in timeline.by_actions([Action.ROLLBACK]).pending():
        plan = table.facts_reader.requested_plan(instant, codecs.RollbackPlan)
        target = plan.instant_to_rollback if plan is not None else None
        if target is None or target.commit_time in on_timeline or target.action == Action.COMPACTION.value:
            continue
        targets.append(target.commit_time)
    return targets


def rollback_failed_writes(
    table: HudiTable,
    config: HoodieConfig,
    lock: TableLock,
    zone: tzinfo,
    now: Callable[[], datetime],
    timeline: Timeline | None = None,
) -> list[str]:
    """Roll back every failed write, then every clustering Hudi 1.2 expires (LAZY policy only);
    returns the instants rolled back.

    `timeline`: one just loaded by the caller (else it is loaded here).
    """
    if config.clean.failed_writes_policy.value != "LAZY":
        return []
    settings = HeartbeatSettings.from_config(config)
    timeline = timeline or table.load_timeline()
    # Interrupted rollbacks first, as Java puts `getPendingRollbackInfos` before the failed writes.
    targets: list[tuple[str, Action | None, str]] = [
        (t, None, f"resuming the interrupted rollback of {t}") for t in interrupted_rollbacks(table, timeline)
    ]
    targets += [
        (i.timestamp, i.action, f"rolling back failed write {i} (heartbeat expired)")
        for i in failed_writes(table, timeline, config, now())
    ]
    rolled_back = []
    for instant_time, action, what in targets:
        log.info("table %s: %s", table.name, what)
        try:
            rollback_instant(table, instant_time, lock, now=now(), tz=zone, heartbeat_settings=settings)
        except InstantOwnedError as exc:
            # Re-checked under the lock: its heartbeat (the writer's, or the resumed rollback's) beat
            # again meanwhile; another process is at work, keep it.
            log.info("table %s: %s", table.name, exc)
            continue
        except UnsupportedTableError as exc:
            if action is not Action.DELTA_COMMIT:
                raise
            # A deltacommit this service cannot roll back as Hudi would (APPEND markers of a writer
            # before 0.14): left pending, it holds the earliest commit to retain back, which never
            # loses data.
            log.warning("table %s: failed write %s left pending: %s", table.name, instant_time, exc)
            continue
        rolled_back.append(instant_time)
    for instant in expired_clusterings(table, timeline, config, now(), zone):
        log.info("table %s: rolling back expired clustering %s (Hudi 1.2's expiration)", table.name, instant)
        try:
            # Claimed under the lock by our heartbeat of it first, so no executor starts it meanwhile.
            rolled_back += purge_pending_clustering(
                table, lock, zone=zone, now=now(), instant_time=instant.timestamp, heartbeat_settings=settings
            )
        except InstantOwnedError as exc:
            log.info("table %s: %s", table.name, exc)  # an executor claimed it meanwhile: it is alive
    return rolled_back
