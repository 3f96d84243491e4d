"""One rollback of a pending instant, start to end, under the table lock where Java takes it
(`service.rollback` says the steps)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from service.errors import (
    ConflictError,
    CorruptTableError,
    HudiTableServiceError,
    InstantExistsError,
    InstantOwnedError,
    PlanRefusedError,
    UnsupportedTableError,
)
from service.lock.base import TableLock
from service.rollback.execute import confine_rollback_plan, execute_rollback_plan, rollback_files_records
from service.rollback.plan import ROLLBACK_ACTIONS, plan_rollback
from service.table import codecs
from service.table.heartbeat import (
    Heartbeat,
    HeartbeatSettings,
    heartbeat_path,
    instant_name,
    is_expired,
    last_heartbeat_ms,
    refuse_if_alive,
)
from service.table.instant import Action, Instant, State
from service.table.markers import delete_marker_dir
from service.table.mdt.rollback import mirror_rollback
from service.table.table import HudiTable
from service.table.timeline import (
    Timeline,
    complete_instant,
    create_instant_file,
    delete_instant_file,
    next_instant_time,
)

log = logging.getLogger(__name__)

ROLLBACK_METADATA_VERSION = 1

Clock = Callable[[], float]


@dataclass(frozen=True)
class RollbackOutcome:
    """What a rollback call did. `rollback_time` is None when there was nothing to roll back."""

    instant_time: str
    rollback_time: str | None
    metadata: codecs.RollbackMetadata | None
    resumed: bool = False  # completed a rollback a crashed run had started
    already_rolled_back: bool = False

    @property
    def deleted_files(self) -> tuple[str, ...]:
        if self.metadata is None:
            return ()
        return tuple(f for pm in self.metadata.partition_metadata.values() for f in pm.success_delete_files)


# ---------------------------------------------------------------------------------------- lookups


def find_pending_rollback(
    table: HudiTable, timeline: Timeline, instant_time: str
) -> tuple[Instant, codecs.RollbackPlan] | None:
    """The oldest pending rollback whose plan targets `instant_time` (Java's `getPendingRollbackInfo`)."""
    for instant in timeline.by_actions([Action.ROLLBACK]).pending():
        plan = table.facts_reader.requested_plan(instant, codecs.RollbackPlan)
        target = plan.instant_to_rollback if plan else None
        if target is not None and target.commit_time == instant_time:
            assert plan is not None
            return instant, plan
    return None


def find_completed_rollback(
    table: HudiTable, timeline: Timeline, instant_time: str
) -> tuple[Instant, codecs.RollbackMetadata] | None:
    """The newest completed rollback whose metadata names `instant_time`."""
    for instant in reversed(timeline.by_actions([Action.ROLLBACK]).completed().instants):
        metadata = table.facts_reader.metadata(instant, codecs.RollbackMetadata)
        if instant_time in metadata.commits_rollback:
            return instant, metadata
    return None


def rollback_instant(
    table: HudiTable,
    instant_time: str,
    lock: AbstractContextManager[Any],
    *,
    now: datetime,
    tz: tzinfo | None = None,
    keep_requested: bool = False,
    clock: Clock = time.monotonic,
    heartbeat_settings: HeartbeatSettings | None = None,
    owner: Heartbeat | None = None,
) -> RollbackOutcome:
    """Roll back the pending instant `instant_time` (see the module docstring for the protocol).

    `now` and `tz` choose the rollback instant time (`tz` may be omitted for UTC-timeline tables);
    `now` is also the wall clock heartbeats are judged by. `keep_requested=True` undoes a failed
    attempt but keeps `T.<action>.requested` so the plan can run again, as Java does before
    re-executing an inflight clustering. `owner`: the caller's own heartbeat of T (it executes or
    has claimed T); without it, T is refused while a heartbeat file of T is alive. The rollback
    instant keeps its own heartbeat (`heartbeat_settings`, Hudi's defaults when None) while it runs.
    """
    started = clock()
    settings = heartbeat_settings or HeartbeatSettings()
    timeline = table.load_timeline()
    plan: codecs.RollbackPlan | None = None
    target: Instant | None = None
    if find_pending_rollback(table, timeline, instant_time) is None:
        target = _find_target(timeline, instant_time)
        if target is None:
            done = find_completed_rollback(table, timeline, instant_time)
            if done is None:
                raise HudiTableServiceError(
                    f"{table.base_uri}: no pending instant {instant_time} to roll back"
                )
            delete_marker_dir(table.storage, instant_time)
            return RollbackOutcome(instant_time, done[0].timestamp, done[1], already_rolled_back=True)
        if target.is_completed:
            raise PlanRefusedError(
                f"{table.base_uri}: {target} is completed; only pending or failed instants are rolled back"
            )
        if target.action is Action.COMPACTION and not keep_requested:
            # Writers append to slice C from the moment C is requested: without the plan those log
            # files would belong to no committed slice (MOR_FORMAT: never unschedule by deleting).
            raise UnsupportedTableError(
                f"{table.base_uri}: a compaction ({target}) is only rolled back to its plan "
                "(keep_requested), never unscheduled"
            )
        if keep_requested and target.state is State.REQUESTED:
            return RollbackOutcome(instant_time, None, None)  # nothing was attempted: nothing to undo
        plan = plan_rollback(table, target)  # listing work: outside the lock

    # Claim under the lock: on object stores "create if absent" is exclusive only there.
    with lock as held:
        timeline = table.load_timeline()
        pending = find_pending_rollback(table, timeline, instant_time)
        if pending is not None:
            rollback, plan = pending
            # A pending rollback with a live heartbeat is another process's at work; one without a
            # heartbeat (a crashed run, or Java's, which keeps none) is finished, as Java's
            # getPendingRollbackInfo re-uses it: deleting and completing are idempotent.
            refuse_if_alive(
                table.storage,
                table.layout,
                rollback.with_state(State.REQUESTED),
                settings,
                now.timestamp(),
                "resuming",
            )
            rollback_time, resumed = rollback.timestamp, True
            # A stored plan is untrusted: refused before anything (even its heartbeat) is written.
            confine_rollback_plan(table, plan, _plan_source(table, rollback_time))
        else:
            current = _find_target(timeline, instant_time)
            if target is None or plan is None or current != target:
                raise ConflictError(
                    f"{table.base_uri}: {instant_time} changed while its rollback was planned "
                    f"({target} -> {current}); try again"
                )
            _refuse_live_target(table, current, settings, now, owner)
            rollback_time, resumed = next_instant_time(timeline, now, _zone(table, tz)), False
            confine_rollback_plan(table, plan, _plan_source(table, rollback_time))
            _check_held(held)
            create_instant_file(
                table.storage,
                table.layout,
                Instant(rollback_time, Action.ROLLBACK, State.REQUESTED),
                codecs.encode(plan),
            )
        heartbeat = Heartbeat(table.storage, rollback_time, settings, table_name=table.name).start()
        try:
            inflight = Instant(rollback_time, Action.ROLLBACK, State.INFLIGHT)
            if not table.storage.exists(table.layout.instant_path(inflight)):
                _check_held(held)
                create_instant_file(table.storage, table.layout, inflight)
        except BaseException:
            heartbeat.stop()
            raise
    if resumed:
        log.info("table %s: completing pending rollback %s of %s", table.name, rollback_time, instant_time)
    else:
        log.info(
            "table %s: rolling back %s as %s (%d requests)",
            table.name, target, rollback_time, len(plan.rollback_requests or ()),
        )  # fmt: skip
    try:
        return _run(
            table, rollback_time, plan, lock, keep_requested, started, clock, resumed, heartbeat, owner,
            now=now, zone=_zone(table, tz),
        )  # fmt: skip
    finally:
        heartbeat.stop()


def _refuse_live_target(
    table: HudiTable, target: Instant, settings: HeartbeatSettings, now: datetime, owner: Heartbeat | None
) -> None:
    if owner is not None:
        if owner.instant_time != target.timestamp:
            raise HudiTableServiceError(
                f"{table.base_uri}: the heartbeat passed for rolling back {target} is {owner.instant_time}'s"
            )
        owner.check_owned()
        return
    beat_ms = last_heartbeat_ms(table.storage, target.timestamp)
    now_ms = int(now.timestamp() * 1000)
    if beat_ms is not None and not is_expired(table.storage, target.timestamp, now_ms, settings):
        raise InstantOwnedError(
            f"{table.base_uri}: not rolling back {instant_name(target)}: its heartbeat is "
            f"{now.timestamp() - beat_ms / 1000:.1f} s old (expiry window {settings.window_seconds:g} s); "
            "its writer is alive",
            instant=target.timestamp,
            heartbeat_age_seconds=now.timestamp() - beat_ms / 1000,
        )


def _check_held(held: object) -> None:
    if isinstance(held, TableLock):
        held.check_held()


def _find_target(timeline: Timeline, instant_time: str) -> Instant | None:
    found = [i for i in timeline if i.timestamp == instant_time and i.action.comparable in ROLLBACK_ACTIONS]
    others = [
        i for i in timeline if i.timestamp == instant_time and i.action.comparable not in ROLLBACK_ACTIONS
    ]
    if not found and others:
        raise UnsupportedTableError(
            f"rolling back {others[0]} is not supported (only commit, replacecommit and deltacommit instants)"
        )
    return found[0] if found else None


def _zone(table: HudiTable, tz: tzinfo | None) -> tzinfo:
    return table.timeline_zone(tz)


def _plan_source(table: HudiTable, rollback_time: str) -> str:
    """How errors name a rollback plan: its `R.rollback.requested` file."""
    return table.storage.qualify(
        table.layout.instant_path(Instant(rollback_time, Action.ROLLBACK, State.REQUESTED))
    )


def _run(
    table: HudiTable,
    rollback_time: str,
    plan: codecs.RollbackPlan,
    lock: AbstractContextManager[Any],
    keep_requested: bool,
    started: float,
    clock: Clock,
    resumed: bool,
    heartbeat: Heartbeat,
    owner: Heartbeat | None,
    *,
    now: datetime,
    zone: tzinfo,
) -> RollbackOutcome:
    """`now` and `zone`: the wall clock and timeline zone completion times are drawn from."""
    target_info = plan.instant_to_rollback
    if target_info is None:
        raise CorruptTableError(f"{table.base_uri}: rollback plan {rollback_time} names no instant")
    instant_time = target_info.commit_time
    action = Action(target_info.action)

    partition_metadata = execute_rollback_plan(table, plan, _plan_source(table, rollback_time), rollback_time)

    with lock as held:
        # Neither the rollback nor (when the caller executes it) T may have changed hands meanwhile.
        heartbeat.check_owned()
        if owner is not None:
            owner.check_owned()
        timeline = table.load_timeline()
        current = timeline.find(instant_time, action)
        if current is not None and current.is_completed:
            raise ConflictError(
                f"{table.base_uri}: {current} completed while rollback {rollback_time} was deleting its files"
            )
        # BaseRollbackActionExecutor.finishRollback: the MDT first, then the data timeline.
        mirror_rollback(
            table.storage,
            timeline,
            instant_time,
            rollback_time,
            rollback_files_records(table, partition_metadata),
            now=now,
            tz=zone,
        )
        delete_instant_file(table.storage, table.layout, Instant(instant_time, action, State.INFLIGHT))
        if not keep_requested:
            delete_instant_file(table.storage, table.layout, Instant(instant_time, action, State.REQUESTED))
        metadata = codecs.RollbackMetadata(
            start_rollback_time=rollback_time,
            time_taken_in_millis=max(0, round((clock() - started) * 1000)),
            total_files_deleted=sum(len(pm.success_delete_files) for pm in partition_metadata.values()),
            commits_rollback=(instant_time,),
            partition_metadata=partition_metadata,
            version=ROLLBACK_METADATA_VERSION,
            instants_rollback=(codecs.InstantInfo(commit_time=instant_time, action=action.value),),
        )
        _check_held(held)
        done = timeline.find(rollback_time, Action.ROLLBACK)
        if done is not None and done.is_completed:
            # Another process completed this very rollback first: its metadata stands.
            metadata = table.facts_reader.metadata(done, codecs.RollbackMetadata)
        else:
            inflight = Instant(rollback_time, Action.ROLLBACK, State.INFLIGHT)
            try:
                complete_instant(
                    table.storage, table.layout, timeline, inflight, codecs.encode(metadata), now, zone
                )
            except InstantExistsError:
                # Completed by another process since the timeline was loaded (layout 1's one name).
                metadata = table.facts_reader.metadata(inflight.completed_at(None), codecs.RollbackMetadata)
    delete_marker_dir(table.storage, instant_time)
    if not keep_requested:
        table.storage.delete_file(heartbeat_path(instant_time))
    log.info(
        "table %s: rollback %s of %s done: %d files deleted",
        table.name, rollback_time, instant_time, metadata.total_files_deleted,
    )  # fmt: skip
    return RollbackOutcome(instant_time, rollback_time, metadata, resumed=resumed)
