"""Storage faults: the services on an S3-compatible server (moto) whose requests fail.

The fault matrix's Hudi 0.15 tables (metadata table with `files`, `column_stats`, `bloom_filters`)
are copied to moto; the service runs against them through `FaultyProxy`, which answers a chosen
share of one kind of request (the PUT of an instant file, the DELETE of a data file, the GET of a
plan, a LIST) with 500 InternalError, 503 SlowDown or ServiceUnavailable, or drops the connection.
pyarrow's S3 client retries each request a bounded number of times (3 attempts, AWS's standard
strategy), so a transient fault is retried and the service completes; a persistent one fails the run
with an error naming the table. Either way, read back through Hudi (the metadata table on and off)
and hudi-rs the table holds exactly its records, and once the faults stop the next run completes the
work: no instant left pending, every file on storage one the metadata table lists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.fs as pafs
import pytest

from bench.s3_proxy import DROP, INTERNAL_ERROR, SERVICE_UNAVAILABLE, SLOW_DOWN
from service.cli import main
from tests.faults.checks import EXPIRY_S, assert_exact, assert_recovered, service_argv, service_instants
from tests.faults.matrix import Service, TableType
from tests.faults.paths import DATA_FILE, INSTANT_FILE, PLAN
from tests.faults.tables import FaultTables
from tests.support.s3 import moto_server, s3_filesystem, s3_options
from tests.support.s3_faults import FaultRule, FaultyProxy

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

BUCKET = "faults"


@dataclass(frozen=True)
class StorageCase:
    name: str
    service: Service
    rule: FaultRule
    outcome: str  # "completes", "fails", or "either" (a share of requests fails: the draw decides)


CASES = [
    StorageCase("put_instant_slowdown_once", Service.CLEANING,
                FaultRule("PUT", INSTANT_FILE, SLOW_DOWN, limit=1), "completes"),
    StorageCase("put_instant_500", Service.CLEANING, FaultRule("PUT", INSTANT_FILE, INTERNAL_ERROR), "fails"),
    StorageCase("delete_data_file_dropped", Service.CLEANING, FaultRule("DELETE", DATA_FILE, DROP), "fails"),
    StorageCase("delete_data_file_503_half", Service.CLEANING,
                FaultRule("DELETE", DATA_FILE, SERVICE_UNAVAILABLE, share=0.5), "either"),
    StorageCase("list_dropped", Service.CLEANING, FaultRule("LIST", "", DROP), "fails"),
    StorageCase("get_plan_500", Service.CLUSTERING, FaultRule("GET", PLAN, INTERNAL_ERROR), "fails"),
    StorageCase("put_instant_dropped_half", Service.CLUSTERING,
                FaultRule("PUT", INSTANT_FILE, DROP, share=0.5), "either"),
    StorageCase("rollback_delete_500", Service.ROLLBACK,
                FaultRule("DELETE", DATA_FILE, INTERNAL_ERROR), "fails"),
]  # fmt: skip


@pytest.fixture(scope="module")
def moto() -> Iterator[tuple[str, pafs.S3FileSystem]]:
    with moto_server() as endpoint:
        fs = s3_filesystem(endpoint)
        fs.create_dir(BUCKET)
        yield endpoint, fs


def _storage(endpoint: str) -> list[str]:
    return [a for k, v in s3_options(endpoint).items() for a in ("--storage-option", f"{k}={v}")]


def _download(fs: pafs.S3FileSystem, key: str, dest: Path) -> Path:
    pafs.copy_files(f"{BUCKET}/{key}", str(dest), fs, pafs.LocalFileSystem())
    return dest


# CI: each request kind once, each refusal once, transient and persistent faults; the rest are long.
IN_CI = {
    "put_instant_slowdown_once", "delete_data_file_503_half", "list_dropped", "get_plan_500",
}  # fmt: skip


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=() if c.name in IN_CI else pytest.mark.long) for c in CASES]
)
def test_a_service_meeting_storage_faults_completes_or_fails_cleanly_and_the_next_run_recovers(
    spark: SparkSession,
    fault_tables: FaultTables,
    moto: tuple[str, pafs.S3FileSystem],
    case: StorageCase,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    endpoint, fs = moto
    source = fault_tables.get(TableType.COW)
    history = source.failed if case.service is Service.ROLLBACK else source.base
    expected = history.expected_rows()
    before = service_instants(history.base_path, case.service)
    key = case.name
    pafs.copy_files(str(history.base_path), f"{BUCKET}/{key}", pafs.LocalFileSystem(), fs)
    uri = f"s3a://{BUCKET}/{key}"

    with FaultyProxy(endpoint, f"{BUCKET}/{key}", seed=7) as proxy:
        if case.rule.kind == "GET":  # a plan to read: scheduled before the faults start
            assert main(service_argv(case.service, uri, "schedule", _storage(proxy.endpoint))) == 0
        proxy.arm(case.rule)
        mode = "execute" if case.rule.kind == "GET" else "scheduleAndExecute"
        with caplog.at_level(logging.ERROR):
            rc = main(service_argv(case.service, uri, mode, _storage(proxy.endpoint)))
        injected = sum(proxy.injected.values())
        proxy.disarm()
        assert injected, f"no {case.rule.kind} request matched {case.rule.key!r}: the case tests nothing"
        if case.outcome != "either":
            assert (rc == 0) == (case.outcome == "completes"), f"exit {rc} after {injected} faults"
        if rc != 0:
            errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            assert any(uri in e for e in errors), f"no error names {uri}: {errors}"
        # Whatever the outcome, readers see exactly the table's records.
        assert_exact(spark, _download(fs, key, tmp_path / "after_faults"), expected, f"{injected} faults")

        time.sleep(EXPIRY_S)  # an attempt the faults stopped is the next run's to take over
        assert main(service_argv(case.service, uri, mode, _storage(proxy.endpoint))) == 0
    base = _download(fs, key, tmp_path / "recovered")
    after = service_instants(base, case.service)
    done = [t for t, i in after.items() if i.is_completed and t not in before]
    assert done, f"no {case.service} completed"
    assert_recovered(
        spark, base, expected, source.failed_instant if case.service is Service.ROLLBACK else None
    )
