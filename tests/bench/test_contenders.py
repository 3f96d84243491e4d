"""What makes a contender pair's figures comparable (`bench.contenders`): the order alternates, the
memory of a contender's whole process tree is sampled, and the row digest tells apart outputs that a
row count would call equal."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from bench.contenders import (
    MB,
    PeakRss,
    Spread,
    executor_processes,
    process_tree,
    round_order,
    row_digest,
    tree_memory_bytes,
)
from tests.support import hudi_tables as ht

# A child that holds 200 MB and starts a grandchild holding 150 MB, both until killed.
_HOLDER = """
import subprocess, sys, time
held = bytearray({size}) ; held[::4096] = b"x" * len(held[::4096])
if {nest}:
    subprocess.Popen([sys.executable, "-c", {inner!r}])
print("ready", flush=True)
time.sleep(120)
"""


def _holder(nest: bool) -> str:
    inner = _HOLDER.format(size=150 * MB, nest=False, inner="")
    return _HOLDER.format(size=200 * MB, nest=nest, inner=inner)


def test_rounds_alternate_who_goes_first() -> None:
    assert [round_order(("hudi", "ours"), i) for i in range(4)] == [
        ("hudi", "ours"), ("ours", "hudi"), ("hudi", "ours"), ("ours", "hudi")
    ]  # fmt: skip
    assert Spread.of([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0)
    with pytest.raises(ValueError):
        Spread.of([])


def test_peak_memory_counts_the_whole_process_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", _holder(nest=True)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while tree_memory_bytes(child.pid)[0] < 350 * MB and time.monotonic() < deadline:
            time.sleep(0.1)  # the grandchild fills its 150 MB
        with PeakRss(child.pid) as peak:
            time.sleep(0.2)
        # Both processes' memory: the child's own 200 MB alone would be under 350 MB.
        assert 350 * MB <= peak.peak_bytes < 500 * MB
    finally:
        for pid in process_tree(child.pid)[::-1]:
            subprocess.run(["kill", "-9", str(pid)], check=False)
        child.wait()


# A child that maps a 200 MB file and reads every page of it, until killed.
_MAPPER = """
import mmap, sys, time
with open(sys.argv[1], "rb") as f:
    mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
total = sum(mapped[i] for i in range(0, len(mapped), 4096))
print("ready", flush=True)
time.sleep(120)
"""


def test_peak_memory_tells_the_file_backed_part_apart(tmp_path: Path) -> None:
    """A memory-mapped file's pages count in the resident set (as a writer task's spill does) and
    in its file-backed part; a heap's do not."""
    spill = tmp_path / "spill"
    with open(spill, "wb") as f:
        f.write(b"\x01" * (200 * MB))
    for argv, file_backed in (
        ([sys.executable, "-c", _MAPPER, str(spill)], True),
        ([sys.executable, "-c", _holder(nest=False)], False),
    ):
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            with PeakRss(child.pid) as peak:
                time.sleep(0.2)
            assert peak.peak_bytes >= 190 * MB
            if file_backed:
                assert peak.peak_file_bytes >= 190 * MB
            else:
                assert peak.peak_file_bytes < 100 * MB
        finally:
            child.kill()
            child.wait()


def test_a_cluster_applications_executors_count_though_outside_its_tree() -> None:
    """On a standalone cluster a worker starts the application's executor JVMs as its own children,
    `--app-id <application>` on their command line: their memory is the contender's."""
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    # An "executor" holding 200 MB, not descended from the driver; and another application's.
    ours, theirs = (
        subprocess.Popen(
            [sys.executable, "-c", _holder(nest=False), "--app-id", app], stdout=subprocess.PIPE, text=True
        )
        for app in ("app-20261205000000-0007", "app-20261205000000-0008")
    )
    try:
        for executor in (ours, theirs):
            assert executor.stdout is not None and executor.stdout.readline().strip() == "ready"
        assert executor_processes("app-20261205000000-0007") == [ours.pid]
        assert executor_processes("local-1733400000000") == [] and executor_processes(None) == []
        with PeakRss(driver.pid, application_id="app-20261205000000-0007") as peak:
            time.sleep(0.2)
        assert 200 * MB <= peak.peak_bytes < 380 * MB  # the driver and our executor, not theirs
        with PeakRss(driver.pid) as alone:
            time.sleep(0.2)
        assert alone.peak_bytes < 100 * MB
    finally:
        for process in (driver, ours, theirs):
            process.kill()
            process.wait()


@pytest.mark.spark
@pytest.mark.hudi
def test_row_digest_tells_apart_a_changed_value_that_a_count_misses(spark: Any, tmp_path: Path) -> None:
    original = tmp_path / "original"
    ht.write(spark, original, ht.generate(spark, range(40)), "insert", partition_fields=[ht.PARTITION_FIELD])
    ht.write(
        spark, original, ht.generate(spark, range(40, 60), 1), "insert", partition_fields=[ht.PARTITION_FIELD]
    )
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    assert row_digest(spark, copy) == row_digest(spark, original)

    # One value of one row changed in place, the file's name and row count kept.
    [path, *_] = sorted(p for p in copy.rglob("*.parquet") if ".hoodie" not in p.parts)
    table = pq.read_table(path)
    qty = table.column("qty").to_pylist()
    qty[0] += 1
    changed = table.set_column(
        table.schema.get_field_index("qty"), "qty", pc.cast(qty, table.schema.field("qty").type)
    )
    pq.write_table(changed.replace_schema_metadata(table.schema.metadata), path)
    path.with_name(f".{path.name}.crc").unlink()  # Hadoop's local checksum of the old bytes

    before, after = row_digest(spark, original), row_digest(spark, copy)
    assert after.rows == before.rows == 60
    assert after != before
