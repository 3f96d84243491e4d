"""`python -m bench scale` end to end at its smallest size: every operation measured in a child of
its own, both cleans planning the same files, the result file and chart written; with `--hudi`, Hudi's
schedule-only planning of the same table beside ours, plans compared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import scale, scale_hudi


def test_scale_bench_measures_every_operation_in_its_own_process(tmp_path: Path) -> None:
    payload = scale.run((3,), (9,), rounds=1, work_dir=tmp_path, results_dir=tmp_path / "results")
    [point] = payload["points"]
    assert point["files"] == scale.shape_of(3).data_files and point["table_version"] == 9
    assert point["plans_equal"] and point["operations"]["clean_files_planned"] > 0
    for name in scale.OPERATIONS:
        measured = point["operations"][name]
        # A child of its own: at least the interpreter and the service's imports, never the test's.
        assert 30 < measured["peak_rss_mb"]["median"] < 1024 and measured["seconds"]["median"] > 0
        assert measured["exit_codes"] == [0]
    written = json.loads((tmp_path / "results" / "scale.json").read_text())
    assert (
        written["points"][0]["operations"]["status"]["peak_rss_mb"]
        == point["operations"]["status"]["peak_rss_mb"]
    )
    assert (tmp_path / "results" / "scale.png").stat().st_size > 0
    assert written["goals"]["peak_mb_at_10m"]["met"] is None  # not measured at this size


def test_a_childs_peak_memory_is_its_own_whatever_the_benchmark_holds() -> None:
    """The benchmark holds the table it built (gigabytes at 10^7 files) while it measures: a child's
    `ru_maxrss` taken as the kernel reports it would start from this process's size."""
    ballast = b"\x01" * (600 << 20)  # resident in this process while the child runs
    measured = scale.measure_command([sys.executable, "-c", "pass"])
    assert measured.exit_code == 0 and ballast[-1] == 1
    assert measured.peak_rss_mb < 100  # an interpreter that imports nothing
    assert scale.measure_command([sys.executable, "-c", "raise SystemExit(3)"]).exit_code == 3


def test_a_program_reads_its_own_peak_not_the_one_before_its_exec() -> None:
    """What the daemon benchmark's child reports of itself (`own_peak_rss_kb`), started by a parent
    holding 600 MB: `getrusage` says 600 MB and more, the program's own high-water mark does not."""
    ballast = b"\x01" * (600 << 20)
    code = (
        "import resource; from bench.common import own_peak_rss_kb; "
        "print(own_peak_rss_kb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, cwd=root).stdout
    own_kb, rusage_kb = map(int, out.split())
    assert ballast[-1] == 1 and rusage_kb > 600 << 10  # the kernel's figure: the parent's size too
    assert own_kb < 150 << 10  # the interpreter and bench.common's imports


@pytest.mark.spark
@pytest.mark.hudi
@pytest.mark.slow
@pytest.mark.long(table_version=9)
@pytest.mark.parametrize("table_version", [6, 9])
def test_hudi_plans_the_same_tables_schedule_only_and_the_plans_are_compared(
    tmp_path: Path, table_version: int
) -> None:
    """`--hudi`: Hudi's clean and clustering, scheduled by Hudi (0.15.0 on version 6, 1.1.1 on 9) on the
    same table, plan what ours plans; its figures are its JVM's, and its instants are gone after."""
    payload = scale.run(
        (3,),
        (table_version,),
        rounds=1,
        hudi=True,
        work_dir=tmp_path,
        results_dir=tmp_path / "r",
        chart=False,
    )
    [point] = payload["points"]
    assert (
        point["operations"]["clean_files_planned"] > 0 and point["operations"]["cluster_groups_planned"] > 0
    )
    hudi = point["hudi"]
    assert hudi["hudi_version"] == scale_hudi.HUDI_OF_VERSION[table_version]
    assert set(hudi["operations"]) == set(scale_hudi.COMPARED) == set(hudi["ours_over_hudi"])
    for name, op in hudi["operations"].items():
        assert op["plans_equal"] and op["compared_with"] == scale_hudi.COMPARED[name], name
        assert op["seconds"]["median"] > 0 and hudi["ours_over_hudi"][name] > 0, name
        assert op["peak_rss_mb"]["median"] > 200, name  # a JVM's, not this process's
    assert payload["goals"]["ours_over_hudi_seconds"]["measured"] is not None
