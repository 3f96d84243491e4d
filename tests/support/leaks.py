"""Leak checks: no ZooKeeper client, HTTP server, scheduler, Spark gateway thread or child process
started by a test may outlive it.

A kazoo client left open keeps reconnecting in the background (logging, and drawing on `random`,
which Hypothesis turns into an error in whatever test runs next); a server thread or a ZooKeeper or
Prometheus process left behind holds ports and CPU. `tests/conftest.py` snapshots before each test
and calls `find_leaks` after it. What session fixtures start on purpose (the shared SparkSession's JVM
and py4j threads, the session ZooKeeper) is registered by identity with `expect_started_since`, never by
name patterns: a leak that merely looks like them is still caught.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

# Where a thread's target function lives -> what kind of resource the thread serves.
_THREAD_KINDS = (
    ("kazoo", "kazoo (ZooKeeper client)"),
    ("apscheduler", "APScheduler"),
    ("concurrent.futures", "thread pool worker"),
    ("socketserver", "HTTP/socket server"),
    ("http.server", "HTTP/socket server"),
    ("wsgiref", "HTTP/socket server"),
    ("prometheus_client", "HTTP/socket server"),
    ("py4j", "Spark (py4j)"),
    ("pyspark", "Spark (py4j)"),
)

_expected_threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_expected_owners: weakref.WeakSet[object] = weakref.WeakSet()
_expected_pids: set[int] = set()


@dataclass(frozen=True)
class Snapshot:
    threads: frozenset[threading.Thread]  # held, not by `id()`: a new thread could reuse an ended one's
    pids: frozenset[int]


@dataclass(frozen=True)
class Leak:
    kind: str
    description: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.description}"


def snapshot() -> Snapshot:
    return Snapshot(frozenset(threading.enumerate()), frozenset(_descendants()))


def expect_started_since(before: Snapshot) -> None:
    """What a session fixture started since `before` is expected to outlive tests: its threads, the
    objects whose methods they run (a server's later request threads are its own), its processes and
    their children."""
    for thread in threading.enumerate():
        if thread in before.threads:
            continue
        _expected_threads.add(thread)
        owner = _owner(thread)
        if owner is not None:
            _expected_owners.add(owner)
    _expected_pids.update(_descendants() - before.pids)


def find_leaks(before: Snapshot, grace_s: float = 3.0) -> list[Leak]:
    """What the test started and left running; waits up to `grace_s` for things that are ending."""
    deadline = time.monotonic() + grace_s
    while True:
        leaks = _leaks(before)
        remaining = deadline - time.monotonic()
        if not leaks or remaining <= 0:
            return leaks
        time.sleep(min(0.05, remaining))


def _leaks(before: Snapshot) -> list[Leak]:
    leaks = []
    for thread in threading.enumerate():
        if thread in before.threads or not thread.is_alive() or _is_expected(thread):
            continue
        kind = _thread_kind(thread)
        if kind is not None:
            leaks.append(Leak(f"{kind} thread", f"{thread.name!r} running {_target_name(thread)}"))
    parents = _parents()
    for pid in sorted(_descendants(parents) - before.pids):
        if not _expected_process(pid, parents):
            leaks.append(Leak("child process", f"pid {pid}: {_cmdline(pid)}"))
    return leaks


def _is_expected(thread: threading.Thread) -> bool:
    owner = _owner(thread)
    return thread in _expected_threads or (owner is not None and owner in _expected_owners)


def _target(thread: threading.Thread) -> object | None:
    # `Thread.run` deletes `_target` when it returns; a live thread still has it.
    return getattr(thread, "_target", None)


def _owner(thread: threading.Thread) -> object | None:
    """The object whose bound method the thread runs (a server, a scheduler, a py4j connection)."""
    owner = getattr(_target(thread), "__self__", None)
    try:
        weakref.ref(owner)  # type: ignore[arg-type]
    except TypeError:
        return None
    return owner


def _thread_kind(thread: threading.Thread) -> str | None:
    target = _target(thread)
    module = getattr(target, "__module__", None) or type(thread).__module__
    if thread.name == "APScheduler":
        module = "apscheduler"
    for prefix, kind in _THREAD_KINDS:
        if module == prefix or module.startswith(prefix + "."):
            return kind
    return None


def _target_name(thread: threading.Thread) -> str:
    target = _target(thread)
    name = getattr(target, "__qualname__", None) or type(thread).__qualname__
    return f"{getattr(target, '__module__', type(thread).__module__)}.{name}"


# ---------------------------------------------------------------------- processes (Linux /proc)
def _parents() -> dict[int, int]:
    """pid -> parent pid of every running (not zombie) process."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields and fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    return parents


def _descendants(parents: dict[int, int] | None = None) -> set[int]:
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, []))
    return found


def _expected_process(pid: int, parents: dict[int, int]) -> bool:
    """An expected process or one of its descendants (e.g. the Spark JVM's Python workers).

    The stdlib's multiprocessing resource tracker is expected too: the first spawn-context pool
    (the benchmark's floor) starts it once for the whole interpreter, and it ends with it.
    """
    if parents.get(pid) == os.getpid() and "multiprocessing.resource_tracker" in _cmdline(pid):
        return True
    me = os.getpid()
    while pid != me and pid in parents:
        if pid in _expected_pids:
            return True
        pid = parents[pid]
    return False


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text if len(text) <= 200 else text[:200] + "..."
