"""Run the CLI in a child process and SIGKILL it at a chosen step, as a lost machine would.

`python -m tests.support.crash_at [--before | --on-delete | --on-appear] REGEX <cli args...>`:
- default: right after the process creates a file whose table-relative path matches. Every file the
  services create on a table (instant files, MDT log files, rollback blocks) goes through
  `Storage.create_if_absent`, or `Storage.write_bytes` where a stopped run's leftover of the same name
  is replaced (the LSM history's data files), so the kill lands exactly between two steps of an
  instant's completion (no `finally`, no atexit, no flush);
- `--before`: just before such a file would be created: the last moment the step before it left
  behind (e.g. a compaction's files written, its commit not yet);
- `--on-delete`: right after the process deleted a file whose path matches (`Storage.delete_file`:
  a clean's or a rollback's deletes, from any of its threads), so the kill lands mid-deletes;
- `--on-copy`: right after the process copied a file to a path that matches (`Storage.copy_file`:
  `repair` moving a file to the trash, before it deletes the original);
- `--on-appear`: as soon as a file whose path matches and that was not there when the process
  started appears under the table (`--base-path`), whoever wrote it: Spark's writer tasks run in
  other processes, so "after some data files" is watched for on storage.

`run_killed_at` then kills what the process left running (its JVM and Spark's Python workers, in
the child's own process group) before it returns: a lost machine takes its executors with it, and
no straggling task may write after the kill.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from service.cli import main
from service.table.storage import Storage
from tests.faults.paths import completed_file, instant_file
from tests.support.paths import REPO_ROOT

MODES = ("after", "before", "on-delete", "on-copy", "on-appear")


def run_killed_at(
    pattern: str,
    cli_args: Sequence[str],
    log: Path,
    *,
    mode: str = "after",
    timeout: float = 300,
) -> None:
    """Run the CLI with `cli_args` in a child that SIGKILLs itself at the first file matching
    `pattern` (`mode`, one of `MODES`, see the module docstring); its output goes to `log`. Asserts
    it was killed there, then kills its process group."""
    if mode not in MODES:
        raise ValueError(f"unknown kill mode {mode!r}")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.support.crash_at", f"--{mode}", pattern, *cli_args],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            returncode = child.wait(timeout=timeout)
        finally:
            _kill_group(child.pid)
    assert returncode == -9, f"not killed at {pattern!r} ({mode}):\n{log.read_text()[-3000:]}"


def _kill_group(pgid: int) -> None:
    """SIGKILL every process left in the group and wait until none runs (zombies aside: a container's
    PID 1 may never reap them)."""
    deadline = time.monotonic() + 30
    while _live_members(pgid):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of group {pgid} outlived SIGKILL for 30 s")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        time.sleep(0.05)


def _live_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (`/proc/<pid>/stat`: state, ppid, pgrp)."""
    live = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _ppid, group = stat[stat.rindex(")") + 2 :].split()[:3]
        if int(group) == pgid and state != "Z":
            live.append(int(entry))
    return live


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _install(pattern: re.Pattern[str], mode: str, base_path: str | None) -> None:
    if mode in ("after", "before"):
        create, write = Storage.create_if_absent, Storage.write_bytes

        def create_then_die(self: Storage, rel: str, data: bytes) -> None:
            if mode == "before" and pattern.search(rel):
                _die()
            create(self, rel, data)
            if pattern.search(rel):
                _die()

        def write_then_die(self: Storage, rel: str, data: bytes) -> None:
            if mode == "before" and pattern.search(rel):
                _die()
            write(self, rel, data)
            if pattern.search(rel):
                _die()

        Storage.create_if_absent = create_then_die  # type: ignore[method-assign]
        Storage.write_bytes = write_then_die  # type: ignore[method-assign]
    elif mode == "on-delete":
        delete = Storage.delete_file

        def delete_then_die(self: Storage, rel: str, *, verify: bool = True) -> bool:
            removed = delete(self, rel, verify=verify)
            if pattern.search(rel):
                _die()
            return removed

        Storage.delete_file = delete_then_die  # type: ignore[method-assign]
    elif mode == "on-copy":
        copy = Storage.copy_file

        def copy_then_die(self: Storage, src: str, dst: str) -> None:
            copy(self, src, dst)
            if pattern.search(dst):
                _die()

        Storage.copy_file = copy_then_die  # type: ignore[method-assign]
    else:
        if base_path is None:
            raise SystemExit("--on-appear needs the CLI's --base-path")
        threading.Thread(target=_watch, args=(Path(base_path), pattern), daemon=True).start()


def _matching(root: Path, pattern: re.Pattern[str]) -> set[str]:
    found = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if pattern.search(rel):
                found.add(rel)
    return found


def _watch(root: Path, pattern: re.Pattern[str]) -> None:
    there = _matching(root, pattern)
    while True:
        if _matching(root, pattern) - there:
            _die()
        time.sleep(0.01)


# Heartbeats of 1 s x 2 misses: a restarted run takes over the killed one's attempt after 2 s.
HEARTBEAT_1S = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]


def layout_2_kill_points(pending_action: str, completed_action: str) -> dict[str, tuple[str, str]]:
    """Where a table service's execution on a layout-2 table is killed: step -> (kill mode, `before`
    the file or `after` it; its path pattern). After claiming the plan (`T.<pending>.inflight`),
    after the metadata table's deltacommit T completed, with every file written (just before
    `T_<completion>.<completed>`), and after it."""
    completed = completed_file(completed_action, 2)
    return {
        "claimed": ("after", instant_file(rf"{pending_action}\.inflight", 2)),
        "after_mdt": ("after", completed_file("deltacommit", 2, mdt=True)),
        "files_written": ("before", completed),
        "committed": ("after", completed),
    }


def check_only_the_commits_files_left(base: Path, instant: str, written: Sequence[str]) -> None:
    """After recovery: the base files of `instant` on storage are exactly the commit's (`written`,
    base-relative), and the metadata table holds one completed deltacommit of it."""
    assert {str(p) for p in base.rglob(f"*_{instant}.parquet")} == {str(base / p) for p in written}
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    done = [p for p in mdt_timeline.iterdir() if re.fullmatch(rf"{instant}_\d{{17}}\.deltacommit", p.name)]
    assert len(done) == 1, done


if __name__ == "__main__":
    flag, regex, *cli = sys.argv[1:]
    base = cli[cli.index("--base-path") + 1] if "--base-path" in cli else None
    _install(re.compile(regex), flag.removeprefix("--"), base)
    sys.exit(main(cli))
