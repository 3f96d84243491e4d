"""The normal clean after a clustering does not trip the volume breaker (issue 31), on real Hudi 0.15.

Hudi writes small files with the metadata table on (its default); our `cluster --mode
scheduleAndExecute` replaces them; our `clean` with KEEP_LATEST_FILE_VERSIONS = 1 then deletes every
file of the replaced file groups (Hudi's `CleanPlanner.getReplacedFilesEligibleToClean`), most of the
table's files. Those files are garbage once retention releases them: the breaker counts only files of
live file groups, so the clean runs, and Hudi reads the same rows before and after, through the
metadata table and through storage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cli import main
from tests.support import hudi_tables as ht
from tests.support.hudi_tables import data_files as _data_files
from tests.support.mdt_histories import MDT_ON
from tests.support.mor_tables import _MorBuilder
from tests.support.paths import REPO_ROOT

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

KEEP_ONE_VERSION = [
    "--hoodie-conf", "hoodie.cleaner.policy=KEEP_LATEST_FILE_VERSIONS",
    "--hoodie-conf", "hoodie.cleaner.fileversions.retained=1",
]  # fmt: skip


def _reads(spark: SparkSession, base: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hudi's snapshot rows listing files through the metadata table, and through storage."""
    out = []
    for mdt in ("true", "false"):
        reader = spark.read.format("hudi").option("hoodie.metadata.enable", mdt)
        rows = [r.asDict() for r in reader.load(str(base)).collect()]
        out.append(ht.normalise_rows(rows))
    return out[0], out[1]


def _cluster(base: Path) -> dict[str, Any]:
    """Our `cluster --mode scheduleAndExecute`, in its own process (its own Spark driver)."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    argv = [
        sys.executable, "-m", "service.cli", "--log-level", "WARNING", "cluster", "--base-path", str(base),
        "--timezone", "UTC", "--mode", "scheduleAndExecute", "--spark-master", "local[1]", "--json",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["result"]["committed"], report
    return report


def _clean(base: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any] | None]:
    capsys.readouterr()
    code = main(["clean", "--base-path", str(base), "--timezone", "UTC", *KEEP_ONE_VERSION, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


def _cluster_then_clean(
    spark: SparkSession, base: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> tuple[set[str], set[str]]:
    """Cluster and clean `base`; returns (files replaced by the clustering, files it wrote), after
    checking that the clean deleted exactly the replaced ones and that Hudi reads the same rows."""
    before_rows = _reads(spark, base)
    assert before_rows[0] == before_rows[1] and before_rows[0]
    before = _data_files(base)
    report = _cluster(base)
    written = _data_files(base) - before
    groups = report["plan"]["groups"]
    replaced = {path for g in groups for s in g["slices"] for path in _slice_paths(g["partition_path"], s)}
    assert replaced == before, "the clustering should replace every file group of the table"

    code, result = _clean(base, capsys)
    assert code == 0, caplog.text[-3000:]
    assert result is not None and result["files_deleted"] == len(replaced), result
    assert _data_files(base) == written
    assert _reads(spark, base) == before_rows
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == before_rows[0]
    return replaced, written


def _slice_paths(partition: str, s: dict[str, Any]) -> list[str]:
    names = [s["base_file_path"], *s["log_files"]] if s["base_file_path"] else list(s["log_files"])
    return [f"{partition}/{n.rsplit('/', 1)[-1]}" if partition else n.rsplit("/", 1)[-1] for n in names]


def test_clean_after_clustering_twelve_small_files_is_not_refused(
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The issue's table: 12 small files in 3 partitions (copy-on-write, metadata table on), clustered
    into 3; the clean deletes the 12 (80 % of the 15 files, which the old breaker refused)."""
    base = tmp_path / "cow_small_files"
    for batch in range(4):
        df = ht.generate(spark, range(batch * 30, (batch + 1) * 30), batch=batch)
        ht.write(spark, base, df, "insert", "cow_small_files", partition_fields=[ht.PARTITION_FIELD],
                 extra_opts=MDT_ON)  # fmt: skip
    assert len(_data_files(base)) == 12 and len(ht.partition_paths(base)) == 3
    replaced, written = _cluster_then_clean(spark, base, capsys, caplog)
    assert (len(replaced), len(written)) == (12, 3)


def test_clean_after_clustering_one_merge_on_read_group_is_not_refused(
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The issue's merge-on-read variant: one file group, a base file and log files of three upserts,
    clustered into one base file; the clean deletes the old slice (4 of 5 files)."""
    base = tmp_path / "mor_one_group"
    b = _MorBuilder(spark, "mor_one_group", base, False, {"hoodie.metadata.enable": "true"})
    b.write("insert", range(0, 20), tag=0, ts=10)
    for tag in (1, 2, 3):
        b.write("upsert", range(tag, 20, 4), tag=tag, ts=10 + tag)
    assert len(_data_files(base)) >= 4
    replaced, written = _cluster_then_clean(spark, base, capsys, caplog)
    assert len(replaced) >= 4 and len(written) == 1


def test_a_first_clean_over_the_breaker_is_held_and_runs_exactly_once_approved(
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A table onboarded with a backlog (Hudi 0.15's writer, services handed over, the metadata table
    on): five upserts of the same keys, never cleaned. The first clean keeping one version is over the
    breaker's limit: `check` and `clean` say it is on hold, with the same counts and digest and the
    command approving it; nothing is deleted. Once approved, `clean` deletes exactly what Hudi's own
    `run_clean` deletes from a copy with the same policy, and Hudi and hudi-rs read the same rows."""
    base = tmp_path / "backlog"
    opts = {**MDT_ON, "hoodie.table.services.enabled": "false"}
    for batch in range(5):
        df = ht.generate(spark, range(0, 60), batch=batch)
        ht.write(spark, base, df, "upsert", "backlog", partition_fields=[ht.PARTITION_FIELD], extra_opts=opts)
    twin = tmp_path / "hudi"
    shutil.copytree(base, twin, symlinks=True)
    before, rows = _data_files(base), _reads(spark, base)
    capsys.readouterr()
    assert main(["check", "--base-path", str(base), "--timezone", "UTC", *KEEP_ONE_VERSION, "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)["services"]["cleaning"]["next"]["on_hold"]
    code, reply = _clean(base, capsys)
    assert code == 2 and reply is not None
    held = reply["held"]
    assert (
        held == checked and held["files_to_delete"] == len(before) - 3 and held["live_files"] == len(before)
    )
    assert "--approve" in caplog.text and _data_files(base) == before
    assert main(held["approve"].split()[1:]) == 0
    code, result = _clean(base, capsys)
    assert code == 0 and result is not None and result["files_deleted"] == held["files_to_delete"]
    with ht.registered_table(spark, twin) as name:
        spark.sql(
            f"CALL run_clean(table => '{name}', clean_policy => 'KEEP_LATEST_FILE_VERSIONS', "
            "file_versions_retained => 1)"
        ).collect()
    assert _data_files(base) == _data_files(twin) and len(_data_files(base)) == 3
    assert _reads(spark, base) == rows
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == rows[0]
