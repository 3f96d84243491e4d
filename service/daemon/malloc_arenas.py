"""Fewer C heaps for the daemon's threads: glibc gives each thread that allocates while others do a
malloc arena of its own, up to eight per core, and memory freed in one arena serves no other. The
daemon ticks tables on a pool of threads (two per core, and the scheduler's, the metrics server's,
ZooKeeper's): at 10,000 tables each arena kept its own share of every tick's garbage. Two arenas are
what glibc's documentation suggests for such processes (`mallopt(M_ARENA_MAX)`, the setting behind
`MALLOC_ARENA_MAX`); Python's small objects come from its own allocator and are not affected.

`MALLOC_ARENA_MAX` in the environment wins (glibc reads it at start-up); elsewhere than glibc
(musl, macOS) nothing is done.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's malloc.h
DAEMON_ARENAS = 2


def limit_malloc_arenas(arenas: int = DAEMON_ARENAS) -> bool:
    """Cap the C heaps new threads may create; True when glibc took the setting. Call it before
    starting threads (arenas already made stay)."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):
            return False  # not glibc: its mallopt may take no M_ARENA_MAX
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(M_ARENA_MAX, arenas))
    if not done:
        log.info("mallopt(M_ARENA_MAX, %d) was refused; threads keep glibc's default arenas", arenas)
    return done
