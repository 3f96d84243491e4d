"""A first clean over the volume breaker on a table Hudi 1.x wrote (issue 48's case: a table onboarded
with a backlog, never cleaned) is held, not failed, and runs exactly once approved, deleting what
Hudi's own `run_clean` deletes with the same policy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from service.cli import main
from tests.support.hudi1_histories import SCHEMA, hudi_rows, hudi_rs_rows, rows, writer_options
from tests.support.hudi_jvm import HudiJvm

pytestmark = [pytest.mark.hudi, pytest.mark.slow]

KEEP_ONE_VERSION = ["--hoodie-conf", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
                    "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1"]  # fmt: skip


def _data_files(base: Path) -> set[str]:
    return {str(p.relative_to(base)) for p in base.glob("*/*.parquet")}


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.long(hudi1=("1.0.2", "1.1.1"))  # CI: 1.2.0
def test_a_first_clean_over_the_breaker_is_held_and_runs_exactly_once_approved(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "backlog"
    name = f"backlog_{hudi1.table_version}"
    opts = {**writer_options(name, "COPY_ON_WRITE", True), "hoodie.table.services.enabled": "false"}
    for batch in range(5):
        hudi1.write(
            base, rows(range(0, 40), batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": "upsert"}
        )
    twin = tmp_path / "hudi"
    shutil.copytree(base, twin, symlinks=True)
    before, read = _data_files(base), hudi_rows(hudi1, base, metadata=True)
    argv = ["clean", "--base-path", str(base), "--timezone", "UTC", *KEEP_ONE_VERSION, "--json"]
    capsys.readouterr()
    assert main(argv) == 2
    held = json.loads(capsys.readouterr().out)["held"]
    assert held["live_files"] == len(before) and held["files_to_delete"] == len(before) - 2  # 2 groups kept
    assert _data_files(base) == before
    assert main(held["approve"].split()[1:]) == 0
    capsys.readouterr()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["files_deleted"] == held["files_to_delete"]
    hudi1.sql(f"create table {name} using hudi location '{twin}'")
    try:
        hudi1.sql(
            f"call run_clean(table => '{name}', clean_policy => 'KEEP_LATEST_FILE_VERSIONS', "
            "file_versions_retained => 1)"
        )
    finally:
        hudi1.sql(f"drop table {name}")
    assert _data_files(base) == _data_files(twin) and len(_data_files(base)) == 2
    assert hudi_rows(hudi1, base, metadata=True) == read == hudi_rs_rows(base)
