from __future__ import annotations

import threading
import time
import uuid

import pytest

from service.errors import LockError
from service.lock.in_process import InProcessTableLock


def _table() -> str:
    return f"t_{uuid.uuid4().hex[:8]}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_in_process_lock_excludes_other_threads() -> None:
    table = _table()
    inside = 0
    overlaps: list[int] = []
    entered = 0
    guard = threading.Lock()

    def worker() -> None:
        nonlocal inside, entered
        lock = InProcessTableLock(table)
        for _ in range(25):
            with lock:
                with guard:
                    inside += 1
                    entered += 1
                    if inside != 1:
                        overlaps.append(inside)
                time.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert overlaps == []
    assert entered == 100


def test_in_process_lock_timeout_names_table_and_lock() -> None:
    table = _table()
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with InProcessTableLock(table):
            held.set()
            done.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        waiter = InProcessTableLock(table)
        with pytest.raises(LockError) as raised:
            waiter.acquire(0.2)
        assert f"table '{table}'" in str(raised.value)
        assert f"in-process:{table}" in str(raised.value)
        assert "timed out after 0.2 s" in str(raised.value)
        assert waiter.last_wait_seconds is not None and waiter.last_wait_seconds >= 0.2
        assert not waiter.is_held
    finally:
        done.set()
        thread.join(10)
    waiter.acquire(5)  # free again once the holder left
    waiter.release()


def test_in_process_lock_refuses_reentry_from_the_same_thread_at_once() -> None:
    table = _table()
    first, second = InProcessTableLock(table), InProcessTableLock(table)
    with first:
        started = time.monotonic()
        with pytest.raises(LockError, match="already held by this thread"):
            first.acquire(5)
        with pytest.raises(LockError, match="already held by this thread"):
            second.acquire(5)
        assert time.monotonic() - started < 1
        assert first.is_held


def test_in_process_lock_tables_are_independent() -> None:
    with InProcessTableLock(_table()):
        other = InProcessTableLock(_table())
        other.acquire(0)
        assert other.is_held
        other.release()


def test_in_process_lock_keyed_by_base_path_excludes_same_key_only() -> None:
    key = f"/data/{_table()}"
    with InProcessTableLock("a", key=key), pytest.raises(LockError):
        threading_acquire(InProcessTableLock("b", key=key), 0.1)


def threading_acquire(lock: InProcessTableLock, timeout_s: float) -> None:
    """Acquire from another thread, re-raising its error here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            lock.acquire(timeout_s)
            lock.release()
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10)
    if errors:
        raise errors[0]


def test_in_process_lock_records_wait_and_hold_seconds() -> None:
    clock = FakeClock()
    lock = InProcessTableLock(_table(), clock=clock)
    assert lock.last_wait_seconds is None and lock.last_hold_seconds is None
    lock.acquire(1)
    assert lock.last_wait_seconds == 0
    clock.now += 7.5
    assert lock.held_seconds == 7.5
    lock.release()
    assert lock.last_hold_seconds == 7.5
    assert lock.held_seconds is None


def test_in_process_lock_check_held_and_release_when_not_held() -> None:
    lock = InProcessTableLock(_table())
    with pytest.raises(LockError, match="is not held"):
        lock.check_held()
    lock.release()  # idempotent
    with pytest.raises(RuntimeError), lock:
        lock.check_held()
        raise RuntimeError("commit failed")
    assert not lock.is_held
    with pytest.raises(LockError, match="is not held"):
        lock.check_held()


def test_in_process_lock_object_shared_by_threads_excludes_them() -> None:
    lock = InProcessTableLock(_table())
    lock.acquire(1)
    with pytest.raises(LockError, match="timed out"):
        threading_acquire(lock, 0.1)
    lock.release()
    threading_acquire(lock, 1)


def test_in_process_lock_reports_every_wait_and_hold_to_its_observers() -> None:
    clock = FakeClock()
    table = _table()
    lock = InProcessTableLock(table, clock=clock)
    waits: list[float] = []
    holds: list[float] = []
    lock.on_wait, lock.on_hold = waits.append, holds.append
    for held in (1.0, 2.0):
        lock.acquire(1)
        clock.now += held
        lock.release()
    other = InProcessTableLock(table)
    holder = threading.Thread(target=other.acquire, args=(1,))
    holder.start()
    holder.join(10)
    try:
        with pytest.raises(LockError, match="timed out"):
            lock.acquire(0)  # a failed acquire's wait is reported too; it held nothing
    finally:
        other.release()
    assert holds == [1.0, 2.0]
    assert waits == [0.0, 0.0, 0.0]
