"""The daemon caps glibc's malloc arenas before its threads start (`limit_malloc_arenas`): counted
with glibc's own `malloc_info`, in a fresh interpreter whose eight threads each allocate."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.paths import REPO_ROOT

CHILD = textwrap.dedent(
    """
    import ctypes, re, sys, threading
    from service.daemon.malloc_arenas import limit_malloc_arenas

    limited = limit_malloc_arenas() if sys.argv[1] == "limit" else None
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    start, done = threading.Barrier(8), threading.Barrier(8)

    def allocate():
        start.wait()
        blocks = [libc.malloc(4096) for _ in range(64)]  # below the mmap threshold: from an arena
        done.wait()  # every thread holds its blocks until all have allocated

    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    out = libc.fopen(sys.argv[2].encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    heaps = len(re.findall(r'<heap nr="', open(sys.argv[2]).read()))
    print(limited, heaps)
    """
)


def _arenas(tmp_path: Path, mode: str, env: dict[str, str]) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(tmp_path / f"{mode}.xml")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    limited, heaps = done.stdout.split()
    return limited, int(heaps)


def test_the_daemon_caps_the_arenas_its_threads_allocate_from(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _arenas(tmp_path, "limit", env) == ("True", 2)
    limited, heaps = _arenas(tmp_path, "default", env)
    assert limited == "None" and heaps > 2  # glibc's default: an arena per allocating thread


def test_malloc_arena_max_in_the_environment_wins(tmp_path: Path) -> None:
    env = {**os.environ, "MALLOC_ARENA_MAX": "3"}
    assert _arenas(tmp_path, "limit", env) == ("False", 3)
