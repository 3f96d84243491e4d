"""Instants of the active timeline: actions, states, and file names both ways.

Both timeline layouts share one grammar for requested and inflight files (`<requested time>.<ext>`);
layout 2 (table versions 8 and 9) names a completed instant `<requested time>_<completion time>.<ext>`
(Hudi's `InstantFileNameGeneratorV2` / `InstantFileNameParserV2`) and adds the `clustering` action. A
completed name without a completion time is layout 1's, and "legacy" on layout 2. Which grammar a
table's timeline follows is `service.table.layout.TimelineLayout`'s to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

from service.errors import CorruptTableError


class Action(StrEnum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    RESTORE = "restore"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"
    # Layout 2 only: a pending clustering (HUDI-7905); it completes as a replacecommit.
    CLUSTERING = "clustering"

    @property
    def comparable(self) -> Action:
        """The action an instant completes as (compaction as commit, logcompaction as deltacommit,
        clustering as replacecommit: Hudi's `InstantComparatorV2`)."""
        if self is Action.COMPACTION:
            return Action.COMMIT
        if self is Action.LOG_COMPACTION:
            return Action.DELTA_COMMIT
        if self is Action.CLUSTERING:
            return Action.REPLACE_COMMIT
        return self


class State(IntEnum):
    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


# (action, state) -> file extension after the timestamp, exactly as Hudi 0.14/0.15 names them.
_EXTENSIONS: dict[tuple[Action, State], str] = {
    (Action.COMMIT, State.REQUESTED): ".commit.requested",
    (Action.COMMIT, State.INFLIGHT): ".inflight",
    (Action.COMMIT, State.COMPLETED): ".commit",
    (Action.DELTA_COMMIT, State.REQUESTED): ".deltacommit.requested",
    (Action.DELTA_COMMIT, State.INFLIGHT): ".deltacommit.inflight",
    (Action.DELTA_COMMIT, State.COMPLETED): ".deltacommit",
    (Action.REPLACE_COMMIT, State.REQUESTED): ".replacecommit.requested",
    (Action.REPLACE_COMMIT, State.INFLIGHT): ".replacecommit.inflight",
    (Action.REPLACE_COMMIT, State.COMPLETED): ".replacecommit",
    (Action.CLEAN, State.REQUESTED): ".clean.requested",
    (Action.CLEAN, State.INFLIGHT): ".clean.inflight",
    (Action.CLEAN, State.COMPLETED): ".clean",
    (Action.ROLLBACK, State.REQUESTED): ".rollback.requested",
    (Action.ROLLBACK, State.INFLIGHT): ".rollback.inflight",
    (Action.ROLLBACK, State.COMPLETED): ".rollback",
    (Action.SAVEPOINT, State.INFLIGHT): ".savepoint.inflight",
    (Action.SAVEPOINT, State.COMPLETED): ".savepoint",
    (Action.COMPACTION, State.REQUESTED): ".compaction.requested",
    (Action.COMPACTION, State.INFLIGHT): ".compaction.inflight",
    (Action.LOG_COMPACTION, State.REQUESTED): ".logcompaction.requested",
    (Action.LOG_COMPACTION, State.INFLIGHT): ".logcompaction.inflight",
    (Action.RESTORE, State.REQUESTED): ".restore.requested",
    (Action.RESTORE, State.INFLIGHT): ".restore.inflight",
    (Action.RESTORE, State.COMPLETED): ".restore",
    (Action.INDEXING, State.REQUESTED): ".indexing.requested",
    (Action.INDEXING, State.INFLIGHT): ".indexing.inflight",
    (Action.INDEXING, State.COMPLETED): ".indexing",
    (Action.CLUSTERING, State.REQUESTED): ".clustering.requested",
    (Action.CLUSTERING, State.INFLIGHT): ".clustering.inflight",
}
# Extensions only layout 2 knows (`HoodieTimeline.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE` of 1.x).
LAYOUT_2_ONLY_EXTENSIONS = frozenset({".clustering.requested", ".clustering.inflight"})
# Completed compaction / log compaction are plain commit / deltacommit files.
_BY_EXTENSION: dict[str, tuple[Action, State]] = {ext: key for key, ext in _EXTENSIONS.items()}

# Java's timeline filter: digits, then an extension; we accept 14- (legacy) and 17-digit times.
# Layout 2's completed names carry `_<completion time>` after the requested time
# (`InstantFileNameParserV2`'s `^(\d+(_\d+)?)(\.\w+)(\.\D+)?$`).
_TIMELINE_NAME = re.compile(r"^(\d+)(?:_(\d+))?(\.[A-Za-z.]+)\Z")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_HUDI_TEMP_FILE = re.compile(rf"^\d+(?:_\d+)?\.[A-Za-z.]+\.{_UUID}\Z")
INSTANT_TIME_LENGTHS = (14, 17)
COMPLETION_TIME_LENGTH = 17


@dataclass(frozen=True, slots=True)
class Instant:
    """One instant in one state. Ordered by time, then action, then state (as Hudi orders them).

    `completion_time` is known for completed instants of layout-2 timelines (from the file name); it
    is not part of an instant's identity or order (Hudi orders the active timeline by requested time).
    """

    timestamp: str
    action: Action
    state: State
    completion_time: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if (self.action, self.state) not in _EXTENSIONS:
            raise ValueError(f"{self.action.value} has no {self.state.name} state")
        if self.completion_time is not None and self.state is not State.COMPLETED:
            raise ValueError(f"{self}: only a completed instant has a completion time")

    @property
    def file_name(self) -> str:
        """`<requested>[_<completion>]<ext>`: the completion time is in the name when it is known."""
        time = self.timestamp if self.completion_time is None else f"{self.timestamp}_{self.completion_time}"
        return time + _EXTENSIONS[(self.action, self.state)]

    def completed_at(self, completion_time: str | None) -> Instant:
        """This instant completed (as its comparable action) at `completion_time` (None: layout 1)."""
        return Instant(self.timestamp, self.action.comparable, State.COMPLETED, completion_time)

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    def with_state(self, state: State) -> Instant:
        action = self.action
        if state is State.COMPLETED:
            action = action.comparable
        return Instant(self.timestamp, action, state)

    def sort_key(self) -> tuple[str, str, int]:
        return (self.timestamp, self.action.comparable.value, int(self.state))

    def __lt__(self, other: Instant) -> bool:
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        return f"[{self.timestamp}__{self.action.value}__{self.state.name}]"


def stored_instant_time(value: str | None, source: str, field: str) -> str | None:
    """An instant time a stored file records (`field` of `source`); None for none ("" or null).
    Anything else than 14 (legacy) or 17 digits is refused: such values bound what a service looks
    at, and a garbage one compares after or before every instant without a word."""
    if not value:
        return None
    if not (value.isascii() and value.isdigit() and len(value) in INSTANT_TIME_LENGTHS):
        raise CorruptTableError(f"{source}: {field} {value!r} is not an instant time")
    return value


def is_timeline_file_name(name: str) -> bool:
    """True for names that look like instants (digits then a dot); other `.hoodie` entries are not,
    nor the temp file a Hudi writer creates an instant file through (`<instant file name>.<UUID>`,
    renamed into place: `HoodieStorage.createImmutableFileInPath` with a temp file), which Hudi's
    timeline loader skips as it matches no instant extension."""
    return bool(name) and name[0].isdigit() and "." in name and not _HUDI_TEMP_FILE.match(name)


def parse_instant_file_name(name: str, *, names_completion_time: bool = False) -> Instant:
    """Parse `<timestamp>[_<completion>]<extension>` as a timeline names files, with completion times
    and the `clustering` action (layout 2) or without (layout 1); raises CorruptTableError naming the
    file for anything unknown."""
    match = _TIMELINE_NAME.match(name)
    if not match:
        raise CorruptTableError(f"unrecognised timeline file name {name!r}")
    timestamp, completion, ext = match.groups()
    if len(timestamp) not in INSTANT_TIME_LENGTHS:
        raise CorruptTableError(f"timeline file {name!r}: instant time must have 14 or 17 digits")
    try:
        action, state = _BY_EXTENSION[ext]
    except KeyError:
        raise CorruptTableError(f"timeline file {name!r}: unknown action/state extension {ext!r}") from None
    if not names_completion_time and (completion is not None or ext in LAYOUT_2_ONLY_EXTENSIONS):
        raise CorruptTableError(
            f"timeline file {name!r}: a timeline layout version 2 name (table version 8+) in a "
            "layout version 1 timeline"
        )
    if completion is not None:
        if state is not State.COMPLETED:
            raise CorruptTableError(
                f"timeline file {name!r}: a {state.name.lower()} instant has no completion time"
            )
        if len(completion) != COMPLETION_TIME_LENGTH:
            raise CorruptTableError(
                f"timeline file {name!r}: completion time {completion!r} must have "
                f"{COMPLETION_TIME_LENGTH} digits"
            )
    return Instant(timestamp, action, state, completion)
