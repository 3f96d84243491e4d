"""Instants of the active timeline (layout version 1): actions, states, and file names both ways."""

from __future__ import annotations

import re
from dataclasses import dataclass
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

    @property
    def comparable(self) -> Action:
        """The action an instant completes as (compaction as commit, logcompaction as deltacommit)."""
        if self is Action.COMPACTION:
            return Action.COMMIT
        if self is Action.LOG_COMPACTION:
            return Action.DELTA_COMMIT
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
}
# Completed compaction / log compaction are plain commit / deltacommit files.
_BY_EXTENSION: dict[str, tuple[Action, State]] = {ext: key for key, ext in _EXTENSIONS.items()}

# Java's timeline filter: digits, then an extension; we accept 14- (legacy) and 17-digit times.
_TIMELINE_NAME = re.compile(r"^(\d+)(\.[A-Za-z.]+)$")
INSTANT_TIME_LENGTHS = (14, 17)


@dataclass(frozen=True, slots=True)
class Instant:
    """One instant in one state. Ordered by time, then action, then state (as Hudi orders them)."""

    timestamp: str
    action: Action
    state: State

    def __post_init__(self) -> None:
        if (self.action, self.state) not in _EXTENSIONS:
            raise ValueError(f"{self.action.value} has no {self.state.name} state in table version 6")

    @property
    def file_name(self) -> str:
        return self.timestamp + _EXTENSIONS[(self.action, self.state)]

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


def is_timeline_file_name(name: str) -> bool:
    """True for names that look like instants (digits then a dot); other `.hoodie` entries are not."""
    return bool(name) and name[0].isdigit() and "." in name


def parse_instant_file_name(name: str) -> Instant:
    """Parse `<timestamp><extension>`; raises CorruptTableError naming the file for anything unknown."""
    match = _TIMELINE_NAME.match(name)
    if not match:
        raise CorruptTableError(f"unrecognised timeline file name {name!r}")
    timestamp, ext = match.groups()
    if len(timestamp) not in INSTANT_TIME_LENGTHS:
        raise CorruptTableError(f"timeline file {name!r}: instant time must have 14 or 17 digits")
    try:
        action, state = _BY_EXTENSION[ext]
    except KeyError:
        raise CorruptTableError(f"timeline file {name!r}: unknown action/state extension {ext!r}") from None
    return Instant(timestamp, action, state)
