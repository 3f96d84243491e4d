"""Run the CLI in this process and SIGKILL it right after (or right before) it creates a file whose
path matches.

`python -m tests.support.crash_at [--before] REGEX <cli args...>`: every file the services create on
a table goes through `Storage.create_if_absent` (instant files, MDT log files, rollback blocks), so a
kill placed after one of them stops the process exactly between two steps of an instant's
completion, as a lost machine would (no `finally`, no atexit, no flush). `--before` kills just
before the file would be created: the last moment the step before it left behind (e.g. a
compaction's files written, its commit not yet).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from service.cli import main
from service.table.storage import Storage
from tests.support.paths import REPO_ROOT


def run_killed_at(
    pattern: str, cli_args: Sequence[str], log: Path, *, before: bool = False, timeout: float = 300
) -> None:
    """Run the CLI with `cli_args` in a child that SIGKILLs itself at the first file matching
    `pattern` (see the module docstring); its output goes to `log`. Asserts it was killed there."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    flags = ["--before"] if before else []
    with log.open("wb") as out:
        killed = subprocess.run(
            [sys.executable, "-m", "tests.support.crash_at", *flags, pattern, *cli_args],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False,
        )  # fmt: skip
    assert killed.returncode == -9, f"not killed at {pattern!r}:\n{log.read_text()[-3000:]}"


def _install(pattern: re.Pattern[str], before: bool = False) -> None:
    create = Storage.create_if_absent

    def create_then_die(self: Storage, rel: str, data: bytes) -> None:
        if before and pattern.search(rel):
            os.kill(os.getpid(), signal.SIGKILL)
        create(self, rel, data)
        if pattern.search(rel):
            os.kill(os.getpid(), signal.SIGKILL)

    Storage.create_if_absent = create_then_die  # type: ignore[method-assign]


if __name__ == "__main__":
    args = sys.argv[1:]
    before = args[:1] == ["--before"]
    if before:
        args = args[1:]
    _install(re.compile(args[0]), before)
    sys.exit(main(args[1:]))


# Heartbeats of 1 s x 2 misses: a restarted run takes over the killed one's attempt after 2 s.
HEARTBEAT_1S = ["--hoodie-conf", "hoodie.client.heartbeat.interval_in_ms=1000"]


def layout_2_kill_points(pending_action: str, completed_action: str) -> dict[str, tuple[bool, str]]:
    """Where a table service's execution on a layout-2 table is killed: step -> (kill just before the
    file rather than after it, its path pattern). After claiming the plan (`T.<pending>.inflight`),
    after the metadata table's deltacommit T completed, with every file written (just before
    `T_<completion>.<completed>`), and after it."""
    completed = rf"^\.hoodie/timeline/\d{{17}}_\d{{17}}\.{completed_action}$"
    return {
        "claimed": (False, rf"^\.hoodie/timeline/\d{{17}}\.{pending_action}\.inflight$"),
        "after_mdt": (False, r"^\.hoodie/metadata/\.hoodie/timeline/\d{17}_\d{17}\.deltacommit$"),
        "files_written": (True, completed),
        "committed": (False, completed),
    }


def check_only_the_commits_files_left(base: Path, instant: str, written: Sequence[str]) -> None:
    """After recovery: the base files of `instant` on storage are exactly the commit's (`written`,
    base-relative), and the metadata table holds one completed deltacommit of it."""
    assert {str(p) for p in base.rglob(f"*_{instant}.parquet")} == {str(base / p) for p in written}
    mdt_timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    done = [p for p in mdt_timeline.iterdir() if re.fullmatch(rf"{instant}_\d{{17}}\.deltacommit", p.name)]
    assert len(done) == 1, done
