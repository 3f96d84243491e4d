"""The MDT's timeline (`.hoodie/metadata/.hoodie`) and which of its instants readers trust.

MDT instant times are the data instant's 17 digits, or 20 with an operation suffix
(`HoodieTableMetadataUtil.OperationSuffix`: 001 compaction, 002 clean, 003 restore, 004 indexer,
005 log compaction, 006 rollback, 010+ partition initialisation).
"""

from __future__ import annotations

from dataclasses import replace

from service.errors import CorruptTableError, UnsupportedTableError
from service.table.codecs import RollbackMetadata, RollbackPlan, decode
from service.table.instant import Action, Instant, State, is_timeline_file_name, parse_instant_file_name
from service.table.layout import LAYOUT_1, TimelineLayout
from service.table.storage import Storage
from service.table.timeline import InstantFiles, Timeline

MDT_BASE = ".hoodie/metadata"
MDT_METAFOLDER = f"{MDT_BASE}/.hoodie"
SOLO_COMMIT_TIMESTAMP = "00000000000000"  # HoodieTimeline.INIT_INSTANT_TS
_MILLIS_LENGTH = 17
_SUFFIXES = ("001", "002", "003", "004", "005", "006")
_INIT_SUFFIX_MIN = "010"  # PARTITION_INITIALIZATION_TIME_SUFFIX
# The metadata table is read and written on layout-1 tables (table version 6) only: `TableFormat`
# lists table versions 8 and 9 from storage and serves no write on them yet. Hudi 1.x's MDT (layout
# 2, per-deltacommit log files, 17-digit special instants) gets its rules beside these when served.
DATA_TABLE_LAYOUT = LAYOUT_1
MDT_LAYOUT_1 = TimelineLayout.v1(MDT_METAFOLDER)


def mdt_timeline_layout(data_layout: TimelineLayout) -> TimelineLayout:
    """The metadata table's timeline layout: its data table's (the two are upgraded together), with
    the default timeline folders under `.hoodie/metadata/.hoodie`."""
    return data_layout.same_version_at(MDT_METAFOLDER)


def load_mdt_timeline(storage: Storage, layout: TimelineLayout = MDT_LAYOUT_1) -> Timeline:
    """The MDT's active timeline, in the MDT's layout: on layout 1 the instant files directly under
    `.hoodie/metadata/.hoodie`, on layout 2 (Hudi 1.x) its `timeline/` folder. Instant times of 20
    digits (a 17-digit time plus an operation suffix, written by Hudi 0.x, and kept on layout 2 by the
    in-place upgrade of a version-6 metadata table) are parsed by the data table's rules on their
    first 17 digits and kept whole."""
    instants = []
    listed = storage.list_file_names(layout.timeline_dir)
    files = InstantFiles.of(n for n in listed if is_timeline_file_name(n))
    for name in files:
        try:
            instants.append(_parse_mdt_file_name(name, layout.names_completion_time))
        except CorruptTableError as exc:
            raise CorruptTableError(f"{storage.qualify(f'{layout.timeline_dir}/{name}')}: {exc}") from None
    return Timeline(Timeline.of(instants).instants, files)


def _parse_mdt_file_name(name: str, names_completion_time: bool) -> Instant:
    stamp, dot, ext = name.partition(".")
    requested, underscore, completion = stamp.partition("_")
    if len(requested) != _MILLIS_LENGTH + 3:
        return parse_instant_file_name(name, names_completion_time=names_completion_time)
    parsed = parse_instant_file_name(
        requested[:_MILLIS_LENGTH] + underscore + completion + dot + ext,
        names_completion_time=names_completion_time,
    )
    return replace(parsed, timestamp=requested)


def is_valid_mdt_instant(instant: Instant) -> bool:
    """HoodieTableMetadataUtil.isValidInstant: an MDT-only deltacommit (suffixed time) readers accept."""
    stamp = instant.timestamp
    if instant.action is not Action.DELTA_COMMIT or len(stamp) != _MILLIS_LENGTH + 3:
        return False
    suffix = stamp[-3:]
    return suffix in _SUFFIXES or suffix >= _INIT_SUFFIX_MIN


def valid_instant_times(
    storage: Storage,
    data_timeline: Timeline,
    mdt_timeline: Timeline,
    data_layout: TimelineLayout = DATA_TABLE_LAYOUT,
) -> frozenset[str]:
    """HoodieTableMetadataUtil.getValidInstantTimestamps: the instants whose MDT log blocks are read.

    Completed data instants; completed MDT-only deltacommits; instants rolled back by completed data
    rollbacks newer than the earliest of those (their MDT deltacommits were rolled back in the MDT
    too, so their blocks stay hidden by the MDT timeline); completed MDT rollbacks and restores; and
    the MDT's initialisation deltacommits.
    """
    valid = {i.timestamp for i in data_timeline.completed()}
    mdt_done = mdt_timeline.completed()
    valid.update(i.timestamp for i in mdt_done if is_valid_mdt_instant(i))
    earliest = min(valid) if valid else SOLO_COMMIT_TIMESTAMP
    for instant in data_timeline.completed().by_actions((Action.ROLLBACK, Action.RESTORE)):
        if instant.timestamp > earliest:
            valid.update(_rolled_back_by(storage, instant, data_layout))
    valid.update(i.timestamp for i in mdt_done.by_actions((Action.ROLLBACK, Action.RESTORE)))
    valid.update(
        i.timestamp
        for i in mdt_done.by_actions((Action.DELTA_COMMIT,))
        if i.timestamp.startswith(SOLO_COMMIT_TIMESTAMP)
    )
    return frozenset(valid)


def _rolled_back_by(storage: Storage, instant: Instant, layout: TimelineLayout) -> tuple[str, ...]:
    if instant.action is Action.RESTORE:
        raise UnsupportedTableError(
            f"table {storage.base_uri}: restore {instant.timestamp} on the active timeline; reading the "
            "metadata table across a restore is not supported yet"
        )
    data = storage.read_bytes(layout.instant_path(instant))
    if data:
        return decode(RollbackMetadata, data, storage.qualify(layout.instant_path(instant))).commits_rollback
    # TMU.getRollbackedCommits: an empty completed rollback falls back to its requested plan.
    requested = Instant(instant.timestamp, Action.ROLLBACK, State.REQUESTED)
    plan = decode(
        RollbackPlan,
        storage.read_bytes(layout.instant_path(requested)),
        storage.qualify(layout.instant_path(requested)),
    )
    if plan.instant_to_rollback is None:
        raise CorruptTableError(f"{storage.qualify(layout.instant_path(requested))}: no instantToRollback")
    return (plan.instant_to_rollback.commit_time,)
