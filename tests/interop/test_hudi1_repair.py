"""`repair` on a table Hudi 1.x wrote (table version 8 or 9, the metadata table on): a retried task's
leftover beside a committed base file and the file of a write whose rollback was killed are moved to
the trash; every read (Hudi through the metadata table and listing storage, hudi-rs) then returns the
committed rows; `--undo` puts both back byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from service.cli import main
from tests.support.hudi1_histories import (
    SCHEMA,
    completed_instants,
    hudi_rows,
    hudi_rs_rows,
    rows,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm

pytestmark = [pytest.mark.hudi, pytest.mark.slow]

DAY_AGO = time.time() - 2 * 86400


def _digests(base: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in base.glob("*/*.parquet")}


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.long(hudi1=("1.0.2", "1.1.1"))  # CI: 1.2.0
def test_repair_moves_a_leftover_and_a_lost_file_and_every_reader_reads_the_committed_rows(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "orphans"
    opts = {**writer_options(f"orphans_{hudi1.table_version}", "COPY_ON_WRITE", True),
            "hoodie.table.services.enabled": "false"}  # fmt: skip
    for batch in range(3):
        hudi1.write(
            base, rows(range(0, 20), batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": "upsert"}
        )
    commits = [requested for requested, _ in completed_instants(base, "commit")]
    truth = hudi_rows(hudi1, base, metadata=True)
    partition = base / "americas"
    older = sorted(partition.glob(f"*_{commits[0]}.parquet"))[0]
    file_id = older.name.split("_")[0]
    leftover = partition / f"{file_id}_9-9-9_{commits[-1]}.parquet"
    lost = partition / f"ffffffff-0000-0000-0000-000000000000-0_0-1-1_{commits[1][:-3]}500.parquet"
    for target in (leftover, lost):
        shutil.copyfile(older, target)
        os.utime(target, (DAY_AGO, DAY_AGO))
    digests = _digests(base)
    capsys.readouterr()
    assert main(["repair", "--base-path", str(base), "--timezone", "UTC", "--json", "--execute"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {Path(o["path"]).name for o in report["orphans"]} == {leftover.name, lost.name} and report["run"]
    assert not leftover.exists() and not lost.exists()
    assert hudi_rows(hudi1, base, metadata=True) == truth == hudi_rows(hudi1, base, metadata=False)
    assert hudi_rs_rows(base) == truth
    assert main(["repair", "--base-path", str(base), "--undo", report["run"]]) == 0
    assert _digests(base) == digests
