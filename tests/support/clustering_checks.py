"""Tests of an interrupted clustering: an executor whose groups wait at a gate (so a test can break
something while they run), and what such tests check afterwards: the instant's state, the rollbacks
of its dead attempts, which of its files the file-system view serves, what Hudi and hudi-rs read."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from service.executor import SparkExecutor
from service.executor.clustering_job import GroupJob
from service.table import codecs
from service.table.base_file_writer import BaseFileWriteResult
from service.table.instant import Action, State
from service.table.table import HudiTable
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory


class GatedExecutor(SparkExecutor):
    """Groups wait at `gate` until the test opens it; `entered` is set when the first one arrives."""

    def __init__(self, spark: Any, wait_s: float = 300) -> None:
        super().__init__(session=spark)
        self.wait_s = wait_s
        self.entered = threading.Event()
        self.gate = threading.Event()

    def run_group(self, job: GroupJob) -> list[BaseFileWriteResult]:
        self.entered.set()
        if not self.gate.wait(self.wait_s):
            raise RuntimeError("the test never opened the gate")
        return super().run_group(job)


def assert_readers_see(history: HudiHistory, spark: Any) -> None:
    """Hudi's reader and hudi-rs return every record exactly once, with its latest value."""
    expected = history.expected_rows()
    assert ht.normalise_rows(ht.read_snapshot(spark, history.base_path)) == expected
    assert ht.normalise_rows(ht.hudi_rs_snapshot(history.base_path).to_pylist()) == expected


def clustering_state(table: HudiTable, instant_time: str) -> State | None:
    instant = table.load_timeline().find(instant_time, Action.REPLACE_COMMIT)
    return None if instant is None else instant.state


def rollbacks_of(table: HudiTable, instant_time: str) -> list[str]:
    """Completed rollbacks whose metadata names `instant_time`."""
    out = []
    for instant in table.load_timeline().by_actions([Action.ROLLBACK]).completed():
        metadata = table.facts_reader.metadata(instant, codecs.RollbackMetadata)
        if instant_time in metadata.commits_rollback:
            out.append(instant.timestamp)
    return out


def live_outputs(base: Path, instant_time: str) -> tuple[list[str], list[str]]:
    """(files of `instant_time` on disk, those the file-system view serves as latest base files)."""
    on_disk = sorted(p.name for p in base.glob(f"*/*_{instant_time}.parquet"))
    view = HudiTable.open(str(base)).load_view()
    live = sorted(
        fg.latest_slice.base_file.file_name
        for fg in view.live_file_groups
        if fg.latest_slice and fg.latest_slice.base_file and fg.latest_slice.base_instant_time == instant_time
    )
    return on_disk, live
