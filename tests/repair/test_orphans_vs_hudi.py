"""`repair` on a table Hudi 0.15 wrote (metadata table on) with the orphans issue 48 names
planted, as failures leave them: a retried task's leftover beside a committed base file (a copy of the
group's older version under the committed instant), a file of a write whose rollback was killed before
it deleted the file (an instant on no timeline), a file of a write still pending (a failed write left
inflight), and a young copy. Exactly the first two are orphans. Hudi's reader listing storage may
read the leftover (the group's older rows: a lost update); `--execute` moves both to the trash, after which
every reader (Hudi through the metadata table, listing storage, time travel to each commit; hudi-rs)
reads the committed state; `--undo` puts them back byte for byte; the pending write's files are never
touched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from service.cli import main
from tests.support import hudi_tables as ht
from tests.support.mdt_histories import MDT_ON

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NAME = "orphans"
DAY_AGO = time.time() - 2 * 86400


def _reads(spark: SparkSession, base: Path, commits: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Hudi's rows through the metadata table, listing storage, and by time travel to each commit."""
    out = {}
    for label, options in [
        ("mdt", {"hoodie.metadata.enable": "true"}),
        ("listing", {"hoodie.metadata.enable": "false"}),
    ]:
        reader = spark.read.format("hudi").options(**options)
        out[label] = ht.normalise_rows([r.asDict() for r in reader.load(str(base)).collect()])
    for commit in commits:
        reader = (
            spark.read.format("hudi")
            .option("hoodie.metadata.enable", "false")
            .option("as.of.instant", commit)
        )
        out[commit] = ht.normalise_rows([r.asDict() for r in reader.load(str(base)).collect()])
    return out


def _digests(base: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in base.rglob("*.parquet")}


def _plant(source: Path, target: Path, mtime: float) -> str:
    shutil.copyfile(source, target)
    os.utime(target, (mtime, mtime))
    return target.name


def test_repair_moves_the_orphans_failures_leave_and_every_reader_then_reads_the_committed_rows(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, fields = tmp_path / NAME, [ht.PARTITION_FIELD]
    opts = {**MDT_ON, "hoodie.table.services.enabled": "false"}
    commits = [
        ht.write(
            spark,
            base,
            ht.generate(spark, range(0, 30), b),
            op,
            NAME,
            partition_fields=fields,
            extra_opts=opts,
        )
        for b, op in enumerate(["insert", "upsert", "upsert"])
    ]
    pending = ht.write_failing(spark, base, ht.generate(spark, range(100, 110), 3), "insert", NAME,
                               partition_fields=fields, extra_opts=opts)  # fmt: skip
    partition = base / "americas"
    older, newest = sorted(partition.glob(f"*_{commits[0]}.parquet"))[0], commits[-1]
    file_id = older.name.split("_")[0]
    # A retried task's leftover: the group's older version under the newest commit, another write token.
    leftover = _plant(older, partition / f"{file_id}_9-9-9_{newest}.parquet", DAY_AGO)
    # A rolled-back write's file its killed rollback did not delete: an instant between two commits.
    between = f"{commits[1][:-3]}500"
    group = "-0000-0000-0000-000000000000-0_0-1-1_"
    lost = _plant(older, partition / f"ffffffff{group}{between}.parquet", DAY_AGO)
    young = _plant(older, partition / f"eeeeeeee{group}{between}.parquet", time.time())
    # The failed write left inflight: its files, however old, are its rollback's.
    of_pending = sorted(base.glob(f"*/*_{pending}.parquet"))
    assert of_pending
    for path in of_pending:
        os.utime(path, (DAY_AGO, DAY_AGO))
    capsys.readouterr()
    assert main(["repair", "--base-path", str(base), "--timezone", "UTC", "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert report["dry_run"] and report["run"] is None
    orphans = {Path(o["path"]).name for o in report["orphans"]}
    assert orphans == {leftover, lost}
    kept = {Path(k["path"]).name: k["why"] for k in report["kept"]}
    assert "safety age" in kept[young]
    assert all("pending" in kept[p.name] for p in of_pending)
    # The committed state: what the metadata table lists (the commits' write stats). Hudi's reader
    # listing storage may read the leftover instead (`HoodieFileGroup.addBaseFile` keeps the file
    # of the instant it adds last, which follows the listing's order): the group's older rows, a
    # lost update. Time travel to the earlier commits reads neither orphan.
    reads, digests = _reads(spark, base, commits), _digests(base)
    truth = reads["mdt"]
    capsys.readouterr()
    assert main(["repair", "--base-path", str(base), "--timezone", "UTC", "--json", "--execute"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert run and not any(p.exists() for p in base.glob("*/*") if p.name in orphans)
    assert all(p.exists() for p in of_pending)
    # After the move every reader reads the committed state, and the earlier commits as before.
    after = _reads(spark, base, commits)
    assert after == {**reads, "listing": truth, commits[-1]: truth}
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == truth
    assert main(["repair", "--base-path", str(base), "--undo", run]) == 0
    assert _digests(base) == digests
