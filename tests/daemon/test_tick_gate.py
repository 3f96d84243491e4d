"""The tick gate: the scheduler's job pool, where a tick due waits in a queue, not in a thread."""

from __future__ import annotations

import threading
import time

import pytest

from service.daemon.tick_gate import TickGate
from tests.support.waiting import wait_until


def test_a_hundred_ticks_due_at_once_queue_for_two_threads() -> None:
    """A thousand tables' first ticks parked each on a thread of its own: two thousand threads."""
    gate = TickGate(2)
    active, most = [0], [0]
    guard = threading.Lock()

    def tick(i: int) -> int:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0], gate.threads())
        time.sleep(0.002)
        with guard:
            active[0] -= 1
        if i == 7:
            raise ValueError("tick 7 failed")
        return i

    futures = [gate.submit(tick, i) for i in range(100)]
    assert [f.result(10) for f in futures if f is not futures[7]] == [i for i in range(100) if i != 7]
    with pytest.raises(ValueError, match="tick 7"):
        futures[7].result()
    assert most[0] == 2 and gate.threads() == 2
    gate.shutdown()
    assert gate.threads() == 0
    with pytest.raises(RuntimeError, match="shut down"):
        gate.submit(tick, 0)


def test_a_tick_that_leaves_finishes_on_its_thread_and_another_thread_takes_its_place() -> None:
    gate = TickGate(1)
    release = threading.Event()
    ran: list[str] = []

    def waiting_for_a_slot() -> None:
        gate.leave()
        gate.leave()  # a no-op: it left already
        release.wait(10)
        ran.append("left")

    first = gate.submit(waiting_for_a_slot)
    others = [gate.submit(ran.append, f"planned {i}") for i in range(3)]
    for f in others:
        f.result(10)  # ran while the first still waits
    assert not first.done() and gate.threads() == 2
    release.set()
    first.result(10)
    wait_until(lambda: gate.threads() == 1)  # the thread that left ended with its tick
    assert ran == ["planned 0", "planned 1", "planned 2", "left"]
    gate.leave()  # outside the pool: a no-op
    gate.shutdown()


def test_shutdown_runs_what_is_queued_and_joins_every_thread() -> None:
    gate = TickGate(1)
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def first() -> None:
        started.set()
        release.wait(10)
        ran.append(0)

    gate.submit(first)
    started.wait(10)
    queued = [gate.submit(ran.append, i) for i in (1, 2)]
    stopper = threading.Thread(target=gate.shutdown)
    stopper.start()
    time.sleep(0.05)
    assert stopper.is_alive()  # waiting for the running tick
    release.set()
    stopper.join(10)
    assert not stopper.is_alive() and ran == [0, 1, 2] and all(f.done() for f in queued)
    assert gate.threads() == 0


def test_a_gate_without_a_place_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        TickGate(0)
