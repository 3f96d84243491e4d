"""The cluster membership's partitioner releases its locks once even when two threads release at
once (the membership loop's `finish()` and kazoo's aborted allocation); kazoo's own fails then."""

from __future__ import annotations

import threading
import time

from kazoo.recipe.partitioner import SetPartitioner

from service.daemon.membership import _SetPartitioner


class _SlowLock:
    def release(self) -> None:
        time.sleep(0.05)  # both threads are inside the release loop at once


def _released_by_two_threads(cls: type[SetPartitioner]) -> tuple[list[Exception], list[object]]:
    partitioner = cls.__new__(cls)
    partitioner._locks = [_SlowLock() for _ in range(3)]
    partitioner._acquire_event = threading.Event()
    if cls is _SetPartitioner:
        partitioner._release_guard = threading.Lock()
    errors: list[Exception] = []

    def release() -> None:
        try:
            partitioner._release_locks()
        except ValueError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=release) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors, partitioner._locks


def test_two_threads_releasing_the_partition_locks_do_not_fail() -> None:
    errors, _ = _released_by_two_threads(SetPartitioner)
    assert errors, "kazoo's own release races itself"
    assert _released_by_two_threads(_SetPartitioner) == ([], [])
