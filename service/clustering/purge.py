"""Roll back pending clustering plans whole (their files and instant files), after claiming each:
`cluster --purge`, a plan that keeps failing (the daemon), and a plan Hudi 1.2's expiration rule
gives up (`service.cleaning.failed_writes.expired_clusterings`). Apart from the orchestrator so that
the cleaner can use it without importing clustering's execution."""

from __future__ import annotations

from datetime import datetime, tzinfo

from service.errors import HudiTableServiceError
from service.lock.base import TableLock
from service.rollback import rollback_instant
from service.table.heartbeat import Heartbeat, HeartbeatSettings, refuse_if_alive
from service.table.instant import Action
from service.table.table import HudiTable
from strategies.clustering.trigger import pending_clustering_instants


def purge_pending_clustering(
    table: HudiTable,
    lock: TableLock,
    *,
    zone: tzinfo,
    now: datetime,
    instant_time: str | None = None,
    heartbeat_settings: HeartbeatSettings | None = None,
) -> list[str]:
    """Roll back pending clustering plans (one, or all): their files and instant files go.

    A plan another executor is running (alive by `service.table.heartbeat.judge`) is refused with
    `InstantOwnedError`; otherwise it is claimed under the lock (our heartbeat, so no executor
    starts it meanwhile) before it is rolled back.
    """
    settings = heartbeat_settings or HeartbeatSettings()
    timeline = table.load_timeline()
    pending = [i.timestamp for i in pending_clustering_instants(timeline, table.facts_reader)]
    targets = [t for t in pending if instant_time is None or t == instant_time]
    if instant_time is not None and not targets:
        raise HudiTableServiceError(f"{table.base_uri}: no pending clustering at {instant_time}")
    purged = []
    for target in targets:
        heartbeat = Heartbeat(table.storage, target, settings, table_name=table.name)
        with lock:
            instant = table.load_timeline().find(target, Action.REPLACE_COMMIT)
            if instant is None or instant.is_completed:
                continue  # finished or purged by someone else meanwhile
            refuse_if_alive(table.storage, table.layout, instant, settings, now.timestamp(), "purging")
            heartbeat.start()
        try:
            rollback_instant(
                table, target, lock, now=now, tz=zone, keep_requested=False,
                heartbeat_settings=settings, owner=heartbeat,
            )  # fmt: skip
        finally:
            heartbeat.stop()
        purged.append(target)
    return purged
