"""The gate that caps how many ticks do their own work at once, across tables and services.

A daemon starting with a thousand tables has three thousand first ticks (each opening its table,
rebuilding its run history, measuring its files) due within one poll interval. Run all at once,
threads contending for the interpreter lock spent more time handing it over than working: the first
round took from 43 s to 170 s on the same machine, and the rounds after it never caught up with the
poll interval. Parked on a semaphore instead, each waiting tick still held a thread of its own: two
thousand threads, whose stacks and interpreter state were a quarter of the daemon's memory.

So the gate is the scheduler's job pool: a tick due waits in its queue, not in a thread, and at most
`capacity` threads run ticks. A tick holds its place while it reads and plans, and leaves it when it
starts waiting for a slot (`service.daemon.slots`): what runs in a slot is capped by the slots, and a
tick waiting for one must not keep others from planning, nor must a long clustering hold up another
table's tick. The thread that left finishes that tick alone and ends; a new thread takes its place.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def default_capacity() -> int:
    """Two ticks per core: one may wait on storage while the other computes."""
    return max(2, 2 * (os.cpu_count() or 1))


_Work = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class TickGate:
    """A thread pool (the `submit`/`shutdown` of `concurrent.futures.Executor` that APScheduler's pool
    executors call) whose threads hold a place each, and may give it up mid-job (`leave`)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"tick gate capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._queue: deque[_Work] = deque()
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._seated = 0  # threads holding a place, running a tick or waiting for one
        self._idle = 0  # of those, the ones waiting for a tick
        self._closed = False
        self._threads: set[threading.Thread] = set()
        self._place = threading.local()
        self._names = itertools.count(1)

    # ------------------------------------------------------------------ the executor side
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the tick gate is shut down: no new ticks")
            self._queue.append((future, fn, args, kwargs))
            self._wake_or_seat()
        return future

    def shutdown(self, wait: bool = True) -> None:
        """No new ticks; the threads run what is queued (a tick that finds the daemon stopping returns
        at once) and end. `wait` joins every thread, the ones that left included."""
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()

    def threads(self) -> int:
        """Threads alive: the seated ones plus those finishing a tick after leaving."""
        with self._lock:
            return len(self._threads)

    # ------------------------------------------------------------------ the tick side
    def leave(self) -> None:
        """Give this thread's place to the queue, for the rest of its tick; a no-op on a thread that
        holds none (it left already, or runs a tick outside the pool)."""
        if not getattr(self._place, "held", False):
            return
        self._place.held = False
        with self._lock:
            self._seated -= 1
            self._wake_or_seat()

    # ------------------------------------------------------------------ inside
    def _wake_or_seat(self) -> None:
        """With the lock held: an idle thread takes the queued work, else a new one if a place is free."""
        if not self._queue:
            return
        if self._idle > 0:
            self._ready.notify()
        elif self._seated < self.capacity:
            self._seated += 1
            thread = threading.Thread(target=self._serve, name=f"tick-{next(self._names)}", daemon=True)
            self._threads.add(thread)
            thread.start()

    def _serve(self) -> None:
        self._place.held = True
        try:
            while self._place.held:
                with self._lock:
                    while not self._queue and not self._closed:
                        self._idle += 1
                        self._ready.wait()
                        self._idle -= 1
                    if not self._queue:
                        self._seated -= 1
                        self._place.held = False
                        return
                    future, fn, args, kwargs = self._queue.popleft()
                if future.set_running_or_notify_cancel():
                    try:
                        result = fn(*args, **kwargs)
                    except BaseException as e:  # handed to the future, as concurrent.futures does
                        future.set_exception(e)
                    else:
                        future.set_result(result)
                del future, fn, args, kwargs  # nothing of a finished tick is kept while idle
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
