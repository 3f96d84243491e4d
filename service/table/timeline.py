"""The active timeline: load it, select instants, create instant files, new instant times.

`Timeline` is an immutable snapshot; selection is pure. Loading lists the layout's timeline folder only
(no recursion) and keeps, like Java, the highest state of each (timestamp, comparable action). Writing
goes through `Storage.create_if_absent`, so two processes can never both create the same instant file.
Where the folder is and how files are named is the table's `TimelineLayout` (`service.table.layout`).
"""

from __future__ import annotations

import bisect
import hashlib
import posixpath
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from functools import cached_property

from service.errors import CorruptTableError
from service.table.instant import Action, Instant, State
from service.table.layout import TimelineLayout
from service.table.storage import Storage

INSTANT_TIME_FORMAT = "%Y%m%d%H%M%S"

# Actions whose completed instants add data files: Java's getCommitsTimeline / hudi-rs's commits.
WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLUSTERING})
# getCommitsAndCompactionTimeline: what the file-system view and the cleaner's ECTR look at.
COMMITS_AND_COMPACTION_ACTIONS = WRITE_ACTIONS | {Action.COMPACTION, Action.LOG_COMPACTION}


@dataclass(frozen=True, slots=True)
class InstantFiles:
    """The names of every instant file of a timeline folder, all states: a digest of them, compared
    with the folder's at every tick (`load_timeline`), and the names packed (zlib of the sorted,
    newline-joined names), read only when a timeline changed. A daemon keeps one per table: as a
    frozenset of names a timeline of 100 instants (300 files) held about 31 KiB, packed about 1 KiB.
    Names come from `load_timeline`'s listing, each a parsed instant file name (no newline inside)."""

    digest: bytes = b""  # blake2b-128 of the sorted, newline-joined names
    packed: bytes = b""

    @classmethod
    def of(cls, names: Iterable[str], previous: InstantFiles | None = None) -> InstantFiles:
        """The files `names`; `previous` itself when it holds the same names (nothing packed then)."""
        joined = "\n".join(sorted(names)).encode("utf-8", "surrogateescape")  # a local name may not decode
        digest = hashlib.blake2b(joined, digest_size=16).digest()
        if previous is not None and previous.digest == digest:
            return previous
        return cls(digest, zlib.compress(joined, 1) if joined else b"")

    def __iter__(self) -> Iterator[str]:
        if not self.packed:
            return iter(())
        return iter(zlib.decompress(self.packed).decode("utf-8", "surrogateescape").split("\n"))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def names(self) -> frozenset[str]:
        return frozenset(self)


@dataclass(frozen=True)
class Timeline:
    """Instants in Hudi's order; each (timestamp, comparable action) appears once, in its highest state."""

    instants: tuple[Instant, ...]
    # Every instant file present, all states (a completed instant keeps its requested/inflight files).
    files: InstantFiles = field(default=InstantFiles(), repr=False)

    @classmethod
    def of(cls, instants: Iterable[Instant]) -> Timeline:
        return cls(_collapse(instants))

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    # ------------------------------------------------------------ selection (pure)
    def filter(self, predicate: Callable[[Instant], bool]) -> Timeline:
        return Timeline(tuple(i for i in self.instants if predicate(i)), self.files)

    def by_actions(self, actions: Iterable[Action]) -> Timeline:
        wanted = frozenset(actions)
        return self.filter(lambda i: i.action in wanted)

    def completed(self) -> Timeline:
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self.filter(lambda i: i.is_pending)

    def commits(self) -> Timeline:
        """commit, deltacommit and replacecommit instants, any state."""
        return self.by_actions(WRITE_ACTIONS)

    def commits_and_compaction(self) -> Timeline:
        return self.by_actions(COMMITS_AND_COMPACTION_ACTIONS)

    def after(self, timestamp: str) -> Timeline:
        return self.filter(lambda i: i.timestamp > timestamp)

    def before(self, timestamp: str) -> Timeline:
        return self.filter(lambda i: i.timestamp < timestamp)

    @property
    def first(self) -> Instant | None:
        return self.instants[0] if self.instants else None

    @property
    def last(self) -> Instant | None:
        return self.instants[-1] if self.instants else None

    @cached_property
    def completed_commit_times(self) -> tuple[str, ...]:
        """Sorted timestamps of completed commit/deltacommit/replacecommit instants."""
        return tuple(i.timestamp for i in self.instants if i.is_completed and i.action in WRITE_ACTIONS)

    def is_completed_commit(self, timestamp: str) -> bool:
        times = self.completed_commit_times
        idx = bisect.bisect_left(times, timestamp)
        return idx < len(times) and times[idx] == timestamp

    def find(self, timestamp: str, action: Action | None = None) -> Instant | None:
        for instant in self.instants:
            if instant.timestamp == timestamp and (
                action is None or instant.action.comparable is action.comparable
            ):
                return instant
        return None

    @property
    def max_timestamp(self) -> str | None:
        return max((i.timestamp for i in self.instants), default=None)

    @property
    def latest_time(self) -> str | None:
        """The latest requested or completion time on the timeline: a new time must sort after it."""
        completions = (i.completion_time for i in self.instants if i.completion_time is not None)
        return max((t for t in (self.max_timestamp, max(completions, default=None)) if t), default=None)


def _collapse(instants: Iterable[Instant]) -> tuple[Instant, ...]:
    best: dict[tuple[str, Action], Instant] = {}
    for instant in instants:
        key = (instant.timestamp, instant.action.comparable)
        current = best.get(key)
        if current is None or instant.state > current.state:
            best[key] = instant
    return tuple(sorted(best.values(), key=Instant.sort_key))


# ---------------------------------------------------------------- loading and reading


def load_timeline(storage: Storage, layout: TimelineLayout, previous: Timeline | None = None) -> Timeline:
    """List the timeline folder once and build the active timeline. Unknown instant-like names raise.

    `previous` (an earlier load of the same table) is returned as is when the folder holds exactly the
    same instant files: a timeline is a function of those names, and an idle table's tick then costs
    one listing, not a re-parse.
    """
    files = InstantFiles.of(
        (n for n in storage.list_file_names(layout.timeline_dir) if layout.is_instant_file_name(n)),
        previous.files if previous is not None else None,
    )
    if previous is not None and previous.files is files:
        return previous
    if not files and layout.keeps_timeline_apart:
        _check_timeline_folder(storage, layout)
    instants: list[Instant] = []
    for name in files:
        try:
            instant = layout.parse_file_name(name)
        except CorruptTableError as exc:
            raise CorruptTableError(f"{storage.qualify(layout.timeline_dir)}: {exc}") from None
        instants.append(instant)
    return Timeline(_collapse(instants), files)


def _check_timeline_folder(storage: Storage, layout: TimelineLayout) -> None:
    """Hudi lists the folder `hoodie.timeline.path` names and fails when it is absent; read as an
    empty timeline, a table would look as if it had no commits (its files then the uncommitted
    leftovers of failed writes). A metafolder that is absent itself (no metadata table) has none."""
    meta_folder = posixpath.dirname(layout.timeline_dir)
    if not storage.exists(layout.timeline_dir) and storage.exists(meta_folder):
        raise CorruptTableError(
            f"{storage.qualify(layout.timeline_dir)}: the timeline folder (hoodie.timeline.path in "
            "hoodie.properties) does not exist"
        )


def read_requested(storage: Storage, layout: TimelineLayout, instant: Instant) -> bytes | None:
    """The `.requested` file of an instant (plans live there even once inflight); None if absent."""
    requested = Instant(instant.timestamp, instant.action, State.REQUESTED)
    try:
        return storage.read_bytes(layout.instant_path(requested))
    except FileNotFoundError:
        return None


# ---------------------------------------------------------------- writing


def create_instant_file(
    storage: Storage, layout: TimelineLayout, instant: Instant, content: bytes = b""
) -> None:
    """Create the file of `instant` exclusively (InstantExistsError if present)."""
    storage.create_if_absent(layout.instant_path(instant), content)


def delete_instant_file(storage: Storage, layout: TimelineLayout, instant: Instant) -> bool:
    return storage.delete_file(layout.instant_path(instant))


# ---------------------------------------------------------------- instant times


def format_instant_time(moment: datetime) -> str:
    return moment.strftime(INSTANT_TIME_FORMAT) + f"{moment.microsecond // 1000:03d}"


def parse_instant_time(timestamp: str, tz: tzinfo) -> datetime:
    """Instant time → aware datetime in `tz`. 14-digit legacy times get `999` ms, as Java does."""
    if len(timestamp) == 14:
        timestamp += "999"
    if len(timestamp) < 17 or not timestamp[:17].isdigit():
        raise CorruptTableError(f"malformed instant time {timestamp!r}")
    base = datetime.strptime(timestamp[:14], INSTANT_TIME_FORMAT)
    return base.replace(microsecond=int(timestamp[14:17]) * 1000, tzinfo=tz)


def next_instant_time(timeline: Timeline, now: datetime, tz: tzinfo, floor: str | None = None) -> str:
    """A new instant time: `now` in the timeline's zone, forced strictly after every requested and
    completion time on the timeline (Hudi 1.x's `TimeGenerator` draws both from one clock).

    `floor` is a time this process generated before and that may not be on the timeline yet.
    """
    candidate = format_instant_time(now.astimezone(tz))
    highest = max((t for t in (timeline.latest_time, floor) if t), default=None)
    if highest is not None and candidate <= highest:
        bumped = parse_instant_time(highest, tz) + timedelta(milliseconds=1)
        candidate = format_instant_time(bumped)
    return candidate


def complete_instant(
    storage: Storage,
    layout: TimelineLayout,
    timeline: Timeline,
    instant: Instant,
    content: bytes,
    now: datetime,
    tz: tzinfo,
) -> Instant:
    """Create the completed file of pending `instant` (exclusively) and return the completed instant.

    On layout 2 its name carries a completion time generated here, strictly after every time on
    `timeline`, which the caller loaded under the table lock it still holds (Hudi completes instants
    inside `TransactionManager.beginStateChange`, drawing the time from the same generator). The
    requested and inflight files stay, as Hudi keeps them.
    """
    completion = next_instant_time(timeline, now, tz) if layout.names_completion_time else None
    completed = instant.completed_at(completion)
    create_instant_file(storage, layout, completed, content)
    return completed
