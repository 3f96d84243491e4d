"""Clustering slots: priority first, then small-file bytes, then the oldest small file's age."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import pytest

from service.daemon.slots import PrioritySlots, SlotClaim, serve_order
from strategies.clustering.small_files import PartitionSmallFiles, SmallFiles
from tests.support.fixtures import ts
from tests.support.waiting import wait_until

NOW = datetime(2024, 1, 2, tzinfo=UTC)


def test_priority_dominates_then_small_file_bytes_then_age() -> None:
    big_old = SlotClaim("big_old", 0, 10_000, 7200.0)
    big_new = SlotClaim("big_new", 0, 10_000, 60.0)
    small = SlotClaim("small", 0, 10, 99_999.0)
    urgent = SlotClaim("urgent", 1, 0, 0.0)
    assert [c.table for c in serve_order([small, big_new, urgent, big_old])] == [
        "urgent", "big_old", "big_new", "small",
    ]  # fmt: skip
    assert [c.table for c in serve_order([SlotClaim("b"), SlotClaim("a")])] == ["b", "a"]  # ties: arrival


def test_claim_of_small_files_measures_bytes_and_oldest_age() -> None:
    small = SmallFiles((PartitionSmallFiles("p1", 2, 300, ts(60)), PartitionSmallFiles("p2", 1, 200, ts(0))))
    claim = SlotClaim.of("t", 3, small, NOW)
    assert claim == SlotClaim("t", 3, 500, (NOW - datetime(2024, 1, 1, tzinfo=UTC)).total_seconds())
    assert SlotClaim.of("t", 3, None, NOW) == SlotClaim("t", 3)
    assert SlotClaim.of("t", 0, SmallFiles(), NOW).oldest_small_file_age_seconds == 0.0
    assert small.oldest_age(NOW) == timedelta(days=1)


def _start_waiters(
    slots: PrioritySlots, claims: list[SlotClaim], served: list[str]
) -> list[threading.Thread]:
    def wait(claim: SlotClaim) -> None:
        with slots.hold(claim):
            served.append(claim.table)

    threads = []
    for arrived, claim in enumerate(claims, start=1):  # one at a time: arrival order is the list's
        thread = threading.Thread(target=wait, args=(claim,), daemon=True)
        thread.start()
        threads.append(thread)
        wait_until(lambda: len(slots.waiting()) == arrived)  # noqa: B023 (called before the loop moves on)
    return threads


def test_a_freed_slot_goes_to_the_best_waiting_table_not_the_first_to_arrive() -> None:
    slots = PrioritySlots(1)
    served: list[str] = []
    slots.acquire(SlotClaim("running"))
    claims = [SlotClaim("first_low", 0, 5), SlotClaim("high", 2), SlotClaim("most_bytes", 0, 900)]
    threads = _start_waiters(slots, claims, served)
    assert [c.table for c in slots.waiting()] == ["high", "most_bytes", "first_low"]
    slots.release()
    for thread in threads:
        thread.join(10)
    assert served == ["high", "most_bytes", "first_low"]
    assert slots.in_use == 0 and slots.waiting() == []


class _CountedClaim(SlotClaim):
    """A claim that counts how often a slot pool computes its key."""

    computed: ClassVar[list[int]] = [0]

    @property
    def sort_key(self) -> tuple[int, int, float]:
        _CountedClaim.computed[0] += 1
        return super().sort_key


def test_a_release_wakes_only_the_waiter_it_serves() -> None:
    """A waiter's key is computed once, when it arrives. Woken by every release to re-sort the queue,
    a thousand tables waiting on two cleaning slots kept a core busy and held each tick for minutes."""
    slots = PrioritySlots(1)
    slots.acquire(SlotClaim("running"))
    served: list[str] = []
    threads = _start_waiters(slots, [_CountedClaim(f"t{i}", 0, i) for i in range(40)], served)
    computed_while_queued = _CountedClaim.computed[0]
    slots.release()
    for thread in threads:
        thread.join(10)
    assert served == [f"t{i}" for i in reversed(range(40))]
    assert _CountedClaim.computed[0] == computed_while_queued


def test_capacity_caps_concurrent_holders_and_a_resize_admits_waiters() -> None:
    slots = PrioritySlots(2)
    slots.acquire(SlotClaim("a"))
    slots.acquire(SlotClaim("b"))
    served: list[str] = []
    gate = threading.Event()

    def wait() -> None:
        with slots.hold(SlotClaim("c")):
            served.append("c")
            gate.wait(10)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    wait_until(lambda: len(slots.waiting()) == 1)
    assert served == [] and slots.in_use == 2
    slots.resize(3)
    wait_until(lambda: served == ["c"])
    assert slots.in_use == 3
    gate.set()
    thread.join(10)
    assert slots.in_use == 2


def test_a_waiter_gives_up_when_the_daemon_stops_and_leaves_the_queue() -> None:
    slots = PrioritySlots(1)
    slots.acquire(SlotClaim("running"))
    stopping = threading.Event()
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            slots.acquire(SlotClaim("waiting", 9), stopping, poll_s=0.05)
        except InterruptedError as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    wait_until(lambda: len(slots.waiting()) == 1)
    stopping.set()
    thread.join(10)
    assert len(errors) == 1 and slots.waiting() == [] and slots.in_use == 1


def test_bad_capacity_and_extra_release_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PrioritySlots(0)
    with pytest.raises(ValueError, match="released more often"):
        PrioritySlots(1).release()
