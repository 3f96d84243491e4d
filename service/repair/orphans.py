"""Orphan files of a table from storage (`strategies.orphans`): the storage listing's view sets the
uncommitted files apart; each is stated for its size and modification time, and checked against the
pending instants and the metadata table's listing."""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime, timedelta

from service.config.hoodie import HoodieConfig
from service.table.data_files import parse_base_file, parse_log_file
from service.table.heartbeat import HeartbeatSettings
from service.table.table import HudiTable
from service.table.timeline import Timeline
from strategies.orphans import Candidate, OrphanVerdict, classify

DEFAULT_MIN_AGE = timedelta(hours=24)


def safety_age(config: HoodieConfig, hours: float | None) -> timedelta:
    """The age below which no file is an orphan: the given hours, else the larger of 24 h and the
    heartbeat expiry (a writer whose heartbeat lives may still commit its files)."""
    if hours is not None:
        return timedelta(hours=hours)
    window = timedelta(seconds=HeartbeatSettings.from_config(config).window_seconds)
    return max(DEFAULT_MIN_AGE, window)


def find_orphans(table: HudiTable, timeline: Timeline, now: datetime, min_age: timedelta) -> OrphanVerdict:
    view = table.load_view(timeline, from_storage=True)
    candidates = []
    for path in view.uncommitted_files:
        status = table.storage.status(path)
        if status is None:  # gone since the listing
            continue
        partition, name = posixpath.split(path)
        if name.endswith(table.config.base_file_extension):
            instant = parse_base_file(partition, name).instant_time
        else:
            log = parse_log_file(partition, name)
            if log is None:
                continue
            instant = log.base_instant_time
        modified = datetime.fromtimestamp(status.mtime_ns / 1e9, UTC) if status.mtime_ns is not None else None
        candidates.append(Candidate(path, instant, status.size, modified))
    listed = None
    if table.lists_through_mdt:
        listed = frozenset(s.path for statuses in table.list_partitions().values() for s in statuses)
    pending = frozenset(i.timestamp for i in timeline.pending())
    return classify(candidates, pending, listed, now, min_age, timeline.max_timestamp)
