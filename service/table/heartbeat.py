"""Hudi's instant heartbeats (`.hoodie/.heartbeat/<instant>`): keep one, judge another process's.

The one heartbeat implementation of the product, after Hudi 0.15's `HoodieHeartbeatClient`:

- `Heartbeat` is the owner's side (`HoodieHeartbeatClient.start` / `stop`): an empty file whose
  modification time is rewritten every `hoodie.client.heartbeat.interval_in_ms` by a daemon thread
  (Java's `Timer` task calls `updateHeartbeat`, which re-creates the empty file with overwrite; on an
  object store that rewrite is the only way to "touch"), stopped and deleted when the work ends.
- `is_expired` is Java's rule for any instant (`HoodieHeartbeatClient.isHeartbeatExpired`):
  `now - mtime > interval * hoodie.client.heartbeat.tolerable.misses`; a missing file counts as a
  last beat at 0 (`getLastHeartbeatTime`), i.e. expired. LAZY failed-writes cleaning uses it.
- `judge` is the table services' rule before executing, rolling back or purging a pending instant:
  it is abandoned only when its heartbeat expired, or when it never had one (Hudi's own clustering
  and cleaning keep none) and its `.inflight` file is older than the same window.

Ownership while executing (`Heartbeat.check_owned`, as `HeartbeatUtils.abortIfHeartbeatExpired`
checks Java's in-memory last beat before a commit): the owner tracks, on a monotonic clock, when its
last *successful* beat was written. Once a gap between successful beats has exceeded the window
(storage errors, a stalled process), another executor may have judged the instant abandoned and
taken it over, so ownership is lost for good: the thread stops writing (it would refresh the new
owner's file), `check_owned` raises `HeartbeatLostError` before any commit or rollback, and `stop`
leaves the file alone. A beat after the stall cannot restore ownership.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from service.config.hoodie import HoodieConfig
from service.config.hoodie_keys import HEARTBEAT_INTERVAL_MS, HEARTBEAT_TOLERABLE_MISSES
from service.config.reader import KeyReader
from service.errors import HeartbeatLostError, InstantOwnedError
from service.table.instant import Instant, State
from service.table.layout import METAFOLDER, TimelineLayout
from service.table.storage import Storage

log = logging.getLogger(__name__)

HEARTBEAT_FOLDER = f"{METAFOLDER}/.heartbeat"
_HUDI_DEFAULTS = KeyReader("Hudi's defaults", {})  # no key set: every value is the registry's default

Clock = Callable[[], float]


def heartbeat_path(instant_time: str) -> str:
    """Base-relative path of an instant's heartbeat file (`HoodieTableMetaClient.getHeartbeatFolderPath`)."""
    return f"{HEARTBEAT_FOLDER}/{instant_time}"


@dataclass(frozen=True)
class HeartbeatSettings:
    """`hoodie.client.heartbeat.interval_in_ms` and `.tolerable.misses`; unset, Hudi's defaults (registry)."""

    interval_ms: int = _HUDI_DEFAULTS.get_int(HEARTBEAT_INTERVAL_MS)
    tolerable_misses: int = _HUDI_DEFAULTS.get_int(HEARTBEAT_TOLERABLE_MISSES)

    @property
    def window_ms(self) -> int:
        """`maxAllowableHeartbeatIntervalInMs`: a heartbeat older than this has expired."""
        return self.interval_ms * self.tolerable_misses

    @property
    def window_seconds(self) -> float:
        return self.window_ms / 1000

    @classmethod
    def from_config(cls, config: HoodieConfig) -> HeartbeatSettings:
        interval = config.get(HEARTBEAT_INTERVAL_MS)
        misses = config.get(HEARTBEAT_TOLERABLE_MISSES)
        assert interval is not None and misses is not None  # both have Hudi defaults
        return cls(int(interval), int(misses))


# ------------------------------------------------------------------------------- reading the rule


def last_heartbeat_ms(storage: Storage, instant_time: str) -> int | None:
    """The heartbeat file's modification time in epoch ms; None when there is no file."""
    status = storage.status(heartbeat_path(instant_time))
    if status is None:
        return None
    return (status.mtime_ns or 0) // 1_000_000


def is_expired(storage: Storage, instant_time: str, now_ms: int, settings: HeartbeatSettings) -> bool:
    """Java's `isHeartbeatExpired` read from storage: a missing heartbeat counts as a beat at 0."""
    last = last_heartbeat_ms(storage, instant_time) or 0
    return now_ms - last > settings.window_ms


@dataclass(frozen=True)
class Ownership:
    """Whether a pending instant is still being worked on by someone, and the evidence."""

    instant: Instant
    alive: bool
    heartbeat_age_seconds: float | None  # None: no heartbeat file
    pending_file_age_seconds: float | None  # age of the `.inflight` file when there is no heartbeat
    window_seconds: float

    def evidence(self) -> str:
        if self.heartbeat_age_seconds is not None:
            seen = f"heartbeat {self.heartbeat_age_seconds:.1f} s old"
        elif self.pending_file_age_seconds is not None:
            seen = f"no heartbeat, inflight file {self.pending_file_age_seconds:.1f} s old"
        else:
            seen = "no heartbeat"
        return f"{seen}, expiry window {self.window_seconds:g} s"

    def describe(self) -> str:
        verdict = "alive" if self.alive else "abandoned"
        return f"{instant_name(self.instant)} is {verdict} ({self.evidence()})"


def instant_name(instant: Instant) -> str:
    """`replacecommit 20240101000000000 (inflight)`: how messages name a pending instant."""
    return f"{instant.action.value} {instant.timestamp} ({instant.state.name.lower()})"


def judge(
    storage: Storage, layout: TimelineLayout, instant: Instant, settings: HeartbeatSettings, now_s: float
) -> Ownership:
    """Is pending `instant` being executed by someone (alive) or abandoned?

    A heartbeat file decides when present. Without one: an INFLIGHT instant is alive while its
    `.inflight` file is younger than the window (Hudi's clustering and cleaning executors keep no
    heartbeat; a young inflight file may be one of them at work); a REQUESTED one is free (our
    executors claim by heartbeat and inflight file under one lock hold).
    """
    window_s = settings.window_seconds
    beat_ms = last_heartbeat_ms(storage, instant.timestamp)
    if beat_ms is not None:
        age = now_s - beat_ms / 1000
        return Ownership(instant, age <= window_s, age, None, window_s)
    if instant.state is State.INFLIGHT:
        status = storage.status(layout.instant_path(instant))
        if status is not None and status.mtime_ns is not None:
            age = now_s - status.mtime_ns / 1e9
            return Ownership(instant, age <= window_s, None, age, window_s)
    return Ownership(instant, False, None, None, window_s)


def refuse_if_alive(
    storage: Storage,
    layout: TimelineLayout,
    instant: Instant,
    settings: HeartbeatSettings,
    now_s: float,
    doing: str,
) -> Ownership:
    """`judge`, raising `InstantOwnedError` (naming the instant and the evidence) when alive."""
    verdict = judge(storage, layout, instant, settings, now_s)
    if verdict.alive:
        raise InstantOwnedError(
            f"{storage.base_uri}: not {doing} {instant_name(instant)}: another executor owns it "
            f"({verdict.evidence()})",
            instant=instant.timestamp,
            heartbeat_age_seconds=verdict.heartbeat_age_seconds,
        )
    return verdict


# ------------------------------------------------------------------------------- keeping one


class Heartbeat:
    """The heartbeat of one instant this process executes; a context manager (`start` / `stop`)."""

    def __init__(
        self,
        storage: Storage,
        instant_time: str,
        settings: HeartbeatSettings,
        *,
        table_name: str = "",
        clock: Clock = time.monotonic,
    ) -> None:
        self.storage = storage
        self.instant_time = instant_time
        self.settings = settings
        self.table_name = table_name or storage.base_uri
        self._clock = clock
        self._stop = threading.Event()
        self._state = threading.Lock()  # guards the fields below against the beat thread
        self._thread: threading.Thread | None = None
        self._last_beat: float | None = None
        self._lost_reason: str | None = None
        self.beats = 0
        self.failed_beats = 0

    @property
    def path(self) -> str:
        return heartbeat_path(self.instant_time)

    def start(self) -> Heartbeat:
        """Write the first beat (errors propagate: no heartbeat, no claim), then beat in the background."""
        if self._thread is not None:
            raise RuntimeError(f"heartbeat of {self.instant_time} already started")
        self._write()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{self.instant_time}", daemon=True)
        self._thread.start()
        return self

    def beat(self) -> bool:
        """One refresh (what the thread does every interval); False when ownership is (now) lost."""
        with self._state:
            if self._lost_reason is None and self._last_beat is not None:
                gap = self._clock() - self._last_beat
                if gap * 1000 > self.settings.window_ms:
                    self._lose(f"no successful heartbeat for {gap:.1f} s")
            if self._lost_reason is not None:
                return False
        try:
            self._write()
        except OSError as exc:
            with self._state:
                self.failed_beats += 1
            log.warning(
                "table %s: heartbeat of %s could not be written: %s", self.table_name, self.instant_time, exc
            )
        return True

    def check_owned(self) -> None:
        """Raise `HeartbeatLostError` unless the last successful beat is within the expiry window."""
        with self._state:
            if self._lost_reason is None:
                if self._last_beat is None:
                    raise HeartbeatLostError(
                        f"table {self.table_name}: heartbeat of {self.instant_time} was never started",
                        instant=self.instant_time,
                    )
                gap = self._clock() - self._last_beat
                if gap * 1000 > self.settings.window_ms:
                    self._lose(f"no successful heartbeat for {gap:.1f} s")
            if self._lost_reason is not None:
                raise HeartbeatLostError(
                    f"table {self.table_name}: lost ownership of {self.instant_time}: {self._lost_reason} "
                    f"(expiry window {self.settings.window_seconds:g} s); another executor may have taken "
                    "it over, so this attempt neither commits nor rolls back",
                    instant=self.instant_time,
                )

    @property
    def lost(self) -> bool:
        with self._state:
            return self._lost_reason is not None

    def stop(self) -> None:
        """Stop beating and delete the file (`HoodieHeartbeatClient.stop`); keep it if ownership was lost."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._last_beat is None or self.lost:
            return  # never claimed, or the file may be a new owner's now
        try:
            self.storage.delete_file(self.path)
        except OSError as exc:  # an expired leftover misleads no one: it reads as abandoned
            log.warning(
                "table %s: heartbeat of %s could not be deleted: %s", self.table_name, self.instant_time, exc
            )

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -------------------------------------------------------------------------- internals
    def _write(self) -> None:
        started = self._clock()
        self.storage.write_bytes(self.path, b"")
        with self._state:
            previous = self._last_beat
            if previous is not None and (self._clock() - previous) * 1000 > self.settings.window_ms:
                # The write landed after the window: someone may have taken over meanwhile.
                self._lose(f"a heartbeat write completed {self._clock() - previous:.1f} s after the last one")
                return
            # The file's mtime is no older than the start of the write: count from there.
            self._last_beat = started
            self.beats += 1

    def _lose(self, reason: str) -> None:
        self._lost_reason = reason
        log.error(
            "table %s: lost ownership of %s: %s (expiry window %g s)",
            self.table_name, self.instant_time, reason, self.settings.window_seconds,
        )  # fmt: skip

    def _run(self) -> None:
        interval_s = self.settings.interval_ms / 1000
        while not self._stop.wait(interval_s):
            try:
                if not self.beat():
                    return
            except Exception:  # a beat must never end the thread silently; the gap check decides
                with self._state:
                    self.failed_beats += 1
                log.exception("table %s: heartbeat of %s failed", self.table_name, self.instant_time)
