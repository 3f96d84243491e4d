"""The archival window against Hudi 1.x's own archiver (`TimelineArchiverV2`, table versions 8 and 9).

One history per table type, written by Hudi 1.0.2 or 1.1.1 with its table services handed over
(`hoodie.table.services.enabled=false`, nothing archives) and the metadata table on: inserts and
upserts, Hudi's cleans, an insert overwrite, a clustering (copy-on-write) or compaction
(merge-on-read), a savepoint, more upserts and a clean, then a clustering or compaction left pending.
On identical copies Hudi's `archive_commits` archives and our window is computed for the same
settings: the instants Hudi moved to its LSM history are exactly the window's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.archival import SETTINGS, active_instants, our_window
from tests.support.hudi1_histories import SCHEMA, rows, writer_options
from tests.support.hudi_jvm import HudiJvm

pytestmark = [pytest.mark.hudi, pytest.mark.slow]


def _build(jvm: HudiJvm, base: Path, table_type: str) -> Path:
    name = f"archival_{jvm.table_version}_{table_type.lower()}"
    opts = {**writer_options(name, table_type, True), "hoodie.table.services.enabled": "false"}

    def write(ids: Any, batch: int, operation: str = "upsert") -> None:
        jvm.write(
            base, rows(list(ids), batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": operation}
        )

    write(range(0, 20), 0, "insert")
    write(range(20, 40), 1, "insert")
    for batch in range(2, 6):
        write(range(batch, 40, 3 + batch), batch)
    jvm.sql(f"create table {name} using hudi location '{base}'")
    jvm.sql(f"call run_clean(table => '{name}', retain_commits => 3)")
    write([i for i in range(100, 110) if i % 2 == 0], 6, "insert_overwrite")
    write(range(0, 20, 2), 7)
    if table_type == "MERGE_ON_READ":
        jvm.sql(f"call run_compaction(op => 'scheduleAndExecute', table => '{name}')")
    else:
        jvm.sql(f"call run_clustering(table => '{name}', op => 'scheduleAndExecute')")
    [latest] = jvm.sql(f"call show_commits(table => '{name}', limit => 1)")
    savepoint = latest["commit_time"]
    jvm.sql(f"call create_savepoint(table => '{name}', commit_time => '{savepoint}')")
    for batch in range(8, 14):
        write(range(batch, 40, batch), batch)
    jvm.sql(f"call run_clean(table => '{name}', retain_commits => 2)")
    write(range(10, 20), 14)
    if table_type == "MERGE_ON_READ":
        jvm.sql(f"call run_compaction(op => 'schedule', table => '{name}')")
    else:
        jvm.sql(f"call run_clustering(table => '{name}', op => 'schedule')")
    write(range(200, 205), 15, "insert")  # new file groups beside the pending plan
    jvm.sql(f"drop table {name}")
    return base


@pytest.fixture(scope="module")
def histories(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp(f"archival-{hudi1.version}")
    return {t: _build(hudi1, root / t.lower(), t) for t in ("COPY_ON_WRITE", "MERGE_ON_READ")}


@pytest.mark.long(hudi1="1.0.2", low=3)
@pytest.mark.long(hudi1="1.1.1", low=4)
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("low", "high", "retained"), SETTINGS)
def test_the_window_is_what_hudi_1x_archives(
    hudi1: HudiJvm,
    histories: dict[str, Path],
    tmp_path: Path,
    table_type: str,
    low: int,
    high: int,
    retained: int,
) -> None:
    theirs, ours = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(histories[table_type], theirs, symlinks=True)
    shutil.copytree(histories[table_type], ours, symlinks=True)
    before = active_instants(theirs)
    hudi1.sql(f"call archive_commits(path => '{theirs}', min_commits => {low}, max_commits => {high}, "
              f"retain_commits => {retained})")  # fmt: skip
    hudi_archived = before - active_instants(theirs)
    ours_archived, window = our_window(ours, low, high, retained)
    assert ours_archived == hudi_archived, (window.stops, sorted(before))
    if (low, high) == (2, 3):
        assert hudi_archived, "the smallest window archives something"
