"""Hudi's heartbeat rule and our heartbeat keeper (pure logic on a local table, injected clocks)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from service.errors import HeartbeatLostError, InstantOwnedError
from service.table.heartbeat import (
    Heartbeat,
    HeartbeatSettings,
    heartbeat_path,
    is_expired,
    judge,
    refuse_if_alive,
)
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1
from service.table.storage import Storage

T = "20240101000000000"
SETTINGS = HeartbeatSettings(interval_ms=1000, tolerable_misses=2)  # window 2 s
NOW = 1_700_000_000.0


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _storage(tmp_path: Path) -> Storage:
    (tmp_path / ".hoodie").mkdir(parents=True, exist_ok=True)
    return Storage.for_base_uri(str(tmp_path))


def _touch(tmp_path: Path, rel: str, mtime: float) -> None:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    os.utime(path, (mtime, mtime))


INFLIGHT = Instant(T, Action.REPLACE_COMMIT, State.INFLIGHT)
REQUESTED = Instant(T, Action.REPLACE_COMMIT, State.REQUESTED)


@pytest.mark.parametrize(
    ("age", "alive"),
    [(0.5, True), (2.0, True), (2.5, False), (600, False)],  # Java: expired iff now - last > window
)
def test_a_heartbeat_file_decides_by_its_age(tmp_path: Path, age: float, alive: bool) -> None:
    storage = _storage(tmp_path)
    _touch(tmp_path, heartbeat_path(T), NOW - age)
    _touch(tmp_path, f".hoodie/{T}.replacecommit.inflight", NOW - 3600)  # ignored when a heartbeat exists
    verdict = judge(storage, LAYOUT_1, INFLIGHT, SETTINGS, NOW)
    assert verdict.alive is alive
    assert verdict.heartbeat_age_seconds == pytest.approx(age, abs=0.01)
    assert is_expired(storage, T, int(NOW * 1000), SETTINGS) is not alive


def test_a_heartbeat_on_a_requested_instant_is_a_claim(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    assert not judge(storage, LAYOUT_1, REQUESTED, SETTINGS, NOW).alive  # nobody claimed it
    _touch(tmp_path, heartbeat_path(T), NOW - 1)  # e.g. a takeover between rollback and inflight
    assert judge(storage, LAYOUT_1, REQUESTED, SETTINGS, NOW).alive


@pytest.mark.parametrize(("inflight_age", "alive"), [(1.0, True), (5.0, False)])
def test_without_heartbeat_a_young_inflight_file_is_alive(
    tmp_path: Path, inflight_age: float, alive: bool
) -> None:
    storage = _storage(tmp_path)
    _touch(tmp_path, f".hoodie/{T}.replacecommit.inflight", NOW - inflight_age)
    verdict = judge(storage, LAYOUT_1, INFLIGHT, SETTINGS, NOW)
    assert verdict.alive is alive and verdict.heartbeat_age_seconds is None
    assert verdict.pending_file_age_seconds == pytest.approx(inflight_age, abs=0.01)
    # Java's LAZY rule alone: a missing heartbeat is a beat at 0, i.e. expired.
    assert is_expired(storage, T, int(NOW * 1000), SETTINGS)


def test_refusal_names_the_instant_and_the_heartbeat_age(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    _touch(tmp_path, heartbeat_path(T), NOW - 1.25)
    expected = rf"replacecommit {T} \(inflight\).*heartbeat 1\.2 s old"
    with pytest.raises(InstantOwnedError, match=expected) as e:
        refuse_if_alive(storage, LAYOUT_1, INFLIGHT, SETTINGS, NOW, "executing")
    assert e.value.instant == T and e.value.heartbeat_age_seconds == pytest.approx(1.25, abs=0.01)


def test_settings_come_from_hudis_keys() -> None:
    from service.config.hoodie import HoodieConfig

    assert HeartbeatSettings.from_config(HoodieConfig.from_mapping({}, "t")).window_ms == 120_000
    assert HeartbeatSettings() == HeartbeatSettings(60_000, 2)  # unset: Hudi's defaults, from the registry
    config = HoodieConfig.from_mapping(
        {"hoodie.client.heartbeat.interval_in_ms": "500", "hoodie.client.heartbeat.tolerable.misses": "3"},
        "t",
    )
    assert HeartbeatSettings.from_config(config) == HeartbeatSettings(500, 3)


# ------------------------------------------------------------------------------- the keeper


def test_heartbeat_is_refreshed_then_stopped_and_deleted(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    path = tmp_path / heartbeat_path(T)
    heartbeat = Heartbeat(storage, T, HeartbeatSettings(interval_ms=20, tolerable_misses=50))
    with heartbeat:
        assert path.exists() and path.read_bytes() == b""  # Java writes an empty file
        first = path.stat().st_mtime_ns
        deadline = time.monotonic() + 10
        while heartbeat.beats < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert heartbeat.beats >= 4
        assert path.stat().st_mtime_ns >= first
        heartbeat.check_owned()
        thread = heartbeat._thread
    assert thread is not None and not thread.is_alive()  # joined: it never outlives its owner
    assert not path.exists()


def test_a_gap_longer_than_the_window_loses_ownership_for_good(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    clock = FakeClock()
    heartbeat = Heartbeat(storage, T, SETTINGS, clock=clock)
    heartbeat._write()  # start() without the thread: beats are driven by hand
    heartbeat.check_owned()
    clock.t += 1.5
    assert heartbeat.beat()  # within the window: refreshed
    clock.t += 2.5  # e.g. the process was stalled; another executor may have taken over by now
    (tmp_path / heartbeat_path(T)).unlink()  # ...and rolled back, deleting the file
    assert not heartbeat.beat()  # the late beat does not write (the file may be the new owner's)...
    assert not (tmp_path / heartbeat_path(T)).exists()
    with pytest.raises(HeartbeatLostError, match=r"no successful heartbeat for 2\.5 s"):
        heartbeat.check_owned()  # ...and does not restore ownership
    _touch(tmp_path, heartbeat_path(T), time.time())  # the new owner's heartbeat
    heartbeat.stop()
    assert (tmp_path / heartbeat_path(T)).exists()  # left alone


def test_failing_writes_lose_ownership_once_the_window_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = _storage(tmp_path)
    clock = FakeClock()
    heartbeat = Heartbeat(storage, T, SETTINGS, clock=clock)
    heartbeat._write()

    def unavailable(rel: str, data: bytes) -> None:
        raise OSError("storage unavailable")

    monkeypatch.setattr(storage, "write_bytes", unavailable)
    clock.t += 1.0
    assert heartbeat.beat() and heartbeat.failed_beats == 1
    heartbeat.check_owned()  # one missed beat is tolerated
    clock.t += 1.5  # 2.5 s since the last successful beat
    assert heartbeat.beat() is False
    with pytest.raises(HeartbeatLostError, match=r"no successful heartbeat for 2\.5 s"):
        heartbeat.check_owned()


def test_a_write_landing_after_the_window_loses_ownership(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = _storage(tmp_path)
    clock = FakeClock()
    heartbeat = Heartbeat(storage, T, SETTINGS, clock=clock)
    heartbeat._write()
    real_write = storage.write_bytes

    def slow(rel: str, data: bytes) -> None:
        clock.t += 3.0  # the write hung past the window
        real_write(rel, data)

    monkeypatch.setattr(storage, "write_bytes", slow)
    clock.t += 1.0
    heartbeat.beat()
    with pytest.raises(HeartbeatLostError, match=r"completed 4\.0 s after"):
        heartbeat.check_owned()


def test_check_owned_before_start_refuses(tmp_path: Path) -> None:
    with pytest.raises(HeartbeatLostError, match="never started"):
        Heartbeat(_storage(tmp_path), T, SETTINGS).check_owned()
