"""Run the CLI in this process; once a clustering group's files are written, touch MARKER and hang.

`python -m tests.support.hang_after_groups MARKER <cli args...>`: `SparkExecutor.run_group` runs the
group (its base files are on storage, referenced by no commit) and then blocks forever, so the
attempt is caught between writing its files and committing them; the test then SIGKILLs the
process, as a machine lost in the middle of a clustering (no `finally`, no heartbeat stop).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from service.cli import main
from service.executor import SparkExecutor
from service.executor.clustering_job import GroupJob
from service.table.base_file_writer import BaseFileWriteResult


def _install(marker: Path) -> None:
    run_group = SparkExecutor.run_group

    def run_then_hang(self: SparkExecutor, job: GroupJob) -> list[BaseFileWriteResult]:
        run_group(self, job)
        marker.touch()
        threading.Event().wait()  # until SIGKILL
        raise AssertionError("unreachable")

    SparkExecutor.run_group = run_then_hang  # type: ignore[method-assign]


if __name__ == "__main__":
    _install(Path(sys.argv[1]))
    sys.exit(main(sys.argv[2:]))
