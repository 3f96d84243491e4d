"""Compaction of merge-on-read tables Hudi 1.0.2 (version 8) and 1.1.1 (version 9) wrote, with the
metadata table on with each version's Spark defaults (`files`, `column_stats`, `partition_stats`) and
the record index, against Hudi 1.x's own compaction of an identical copy.

- We schedule and execute: Hudi's snapshot and read-optimized reads (metadata table on and off) and
  hudi-rs hold the snapshot from before; the commit is Avro with `compacted` and COMPACT; Hudi's
  `validate_metadata_table_files` agrees with storage; the `partition_stats` we recomputed equal
  Hudi's for the same compaction (bounds and counts: sizes follow each writer's files); a Hudi writer
  upserting with the record index lands each key once and goes on across its own compaction.
- Plans cross over: Hudi executes our plan, and we execute Hudi's.
- A log whose deltacommit completed after the compaction instant stays out of the plan.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table import codecs
from service.table.codecs.commit import WriteOperationType
from service.table.instant import Action
from service.table.table import HudiTable
from tests.support.crash_at import (
    HEARTBEAT_1S,
    check_only_the_commits_files_left,
    layout_2_kill_points,
    run_killed_at,
)
from tests.support.hudi1_histories import (
    RLI_OPTIONS,
    SCHEMA,
    check_mdt_files_agree,
    hudi_rows,
    hudi_rs_rows,
    partition_stats_written,
    rows,
    snapshot_reads,
    writer_options,
)
from tests.support.hudi_jvm import HudiJvm
from tests.support.service_runs import compact_with_cli

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

_names = iter(range(1_000_000))


def _options(name: str, operation: str, **extra: str) -> dict[str, str]:
    return {
        **writer_options(name, "MERGE_ON_READ", True),
        **RLI_OPTIONS,
        "hoodie.datasource.write.operation": operation,
        **extra,
    }


@pytest.fixture(scope="module")
def template(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Inserts into two partitions, two upserts (log files in every file group), then inserts that open
    file groups of base files only."""
    base = tmp_path_factory.mktemp(f"compaction-{hudi1.version}") / "template"
    hudi1.write(base, rows(range(0, 16), 0), SCHEMA, _options("template", "insert"))
    hudi1.write(base, rows(range(0, 12), 1), SCHEMA, _options("template", "upsert"))
    hudi1.write(base, rows([*range(6, 16), 40, 41], 2), SCHEMA, _options("template", "upsert"))
    # New file groups without logs: not compacted, their ranges count in the partitions' stats.
    hudi1.write(base, rows(range(100, 104), 3), SCHEMA, _options("template", "insert"))
    return base


@pytest.fixture(autouse=True)
def _shared_session(spark: SparkSession) -> None:
    """Our executor runs in the test session's shared SparkSession (started once, by its fixture)."""


def _copy(template: Path, tmp_path: Path, name: str) -> Path:
    base = tmp_path / name
    shutil.copytree(template, base, symlinks=True)
    return base


def _hudi_compaction(jvm: HudiJvm, base: Path, op: str, instant: str | None = None) -> None:
    name = f"c{next(_names)}"
    jvm.sql(f"create table {name} using hudi location '{base}'")
    at = f", timestamp => {instant}" if instant else ""
    options = ",".join(
        f"{k}={v}" for k, v in {**RLI_OPTIONS, "hoodie.compact.inline.max.delta.commits": "1"}.items()
    )
    jvm.sql(f"call run_compaction(op => '{op}', table => '{name}'{at}, options => '{options}')")


def _commit(base: Path, instant: str) -> codecs.CommitMetadata:
    table = HudiTable.open(str(base))
    [done] = [i for i in table.load_timeline().completed() if i.timestamp == instant]
    assert done.action is Action.COMMIT and done.completion_time is not None
    return table.facts_reader.metadata(done, codecs.CommitMetadata)


def _pending_compaction(base: Path) -> str:
    [pending] = [
        p.name[:17]
        for p in (base / ".hoodie" / "timeline").iterdir()
        if p.name.endswith(".compaction.requested")
    ]
    return pending


def _read_optimized(jvm: HudiJvm, base: Path) -> list[tuple[Any, ...]]:
    got = jvm.read(base, {"hoodie.datasource.query.type": "read_optimized"})
    return sorted((r["id"], r["region"], r["ts"], r["value"]) for r in got)


def test_our_compaction_reads_the_same_and_hudi_writes_on(
    hudi1: HudiJvm, template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ours, theirs = _copy(template, tmp_path, "ours"), _copy(template, tmp_path, "hudi")
    before = snapshot_reads(hudi1, ours)
    reply = compact_with_cli(ours, "scheduleAndExecute", capsys)
    instant = reply["instant_time"]
    assert reply["result"]["committed"], reply
    metadata = _commit(ours, instant)
    assert metadata.compacted and metadata.operation_type is WriteOperationType.COMPACT
    assert all(s.path and s.path.endswith(f"_{instant}.parquet") for s in metadata.write_stats)
    plan = codecs.decode(
        codecs.CompactionPlan,
        (ours / ".hoodie" / "timeline" / f"{instant}.compaction.requested").read_bytes(),
        "plan",
    )
    assert plan.missing_schedule_partitions == ()  # every slice with logs was taken
    assert snapshot_reads(hudi1, ours) == before
    assert _read_optimized(hudi1, ours) == before["mdt"]
    check_mdt_files_agree(hudi1, ours)
    skipping = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
    filtered = hudi1.read(ours, skipping, where="ts >= 2")
    assert sorted((r["id"], r["region"], r["ts"], r["value"]) for r in filtered) == [
        r for r in before["mdt"] if r[2] >= 2
    ]

    # Hudi compacts the identical copy: the same partitions' stats, bound for bound and count for count.
    _hudi_compaction(hudi1, theirs, "scheduleAndExecute")
    [hudi_instant] = [i.timestamp for i in HudiTable.open(str(theirs)).load_timeline().completed()
                      if i.action is Action.COMMIT]  # fmt: skip
    ours_stats = partition_stats_written(ours, instant)
    hudi_stats = partition_stats_written(theirs, hudi_instant)
    assert len(ours_stats) == 2 * 7  # two partitions, seven indexed columns (meta fields and data)
    assert ours_stats == hudi_stats

    # Hudi's writer goes on with the record index: updates land once, inserts land; told to compact
    # its metadata table at once, it does so over our deltacommit.
    mdt_timeline = ours / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    mdt_compacted = re.compile(r"^(\d{17})_\d{17}\.commit$")
    compactions = {p.name for p in mdt_timeline.iterdir() if mdt_compacted.match(p.name)}
    index = {"hoodie.index.type": "RECORD_INDEX", "hoodie.metadata.compact.max.delta.commits": "1"}
    hudi1.write(ours, rows([*range(0, 20, 3), 60], 5), SCHEMA, _options("template", "upsert", **index))
    new = [
        n for n in (p.name for p in mdt_timeline.iterdir()) if mdt_compacted.match(n) and n not in compactions
    ]
    assert new and all(n[:17] > instant for n in new), "Hudi's writer compacted its metadata table"
    expected = {r[0]: r for r in before["mdt"]}
    expected.update({i: (i, ("americas", "asia")[i % 2], 5, "v5") for i in [*range(0, 20, 3), 60]})
    after = hudi_rows(hudi1, ours, metadata=True)
    assert after == sorted(expected.values())
    assert hudi_rows(hudi1, ours, metadata=False) == after == hudi_rs_rows(ours)
    _hudi_compaction(hudi1, ours, "scheduleAndExecute")
    assert hudi_rows(hudi1, ours, metadata=True) == after
    check_mdt_files_agree(hudi1, ours)


@pytest.mark.long(hudi1="1.0.2")
def test_our_compaction_without_the_metadata_table(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A version-8/9 table written with the metadata table off: our compaction writes none; Hudi's
    snapshot and read-optimized reads and hudi-rs hold the snapshot from before."""
    base = tmp_path / "no_mdt"
    no_mdt = {**_options("template", "insert"), "hoodie.metadata.enable": "false"}
    hudi1.write(base, rows(range(0, 12), 0), SCHEMA, no_mdt)
    hudi1.write(
        base, rows(range(0, 12, 2), 1), SCHEMA, {**no_mdt, "hoodie.datasource.write.operation": "upsert"}
    )
    assert not (base / ".hoodie" / "metadata").exists()
    before = snapshot_reads(hudi1, base)
    reply = compact_with_cli(base, "scheduleAndExecute", capsys)
    assert reply["result"]["committed"], reply
    assert _commit(base, reply["instant_time"]).compacted
    assert snapshot_reads(hudi1, base) == before
    assert _read_optimized(hudi1, base) == before["mdt"]
    assert not (base / ".hoodie" / "metadata").exists()


@pytest.mark.long(hudi1="1.0.2")
def test_hudi_executes_our_plan(
    hudi1: HudiJvm, template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _copy(template, tmp_path, "ours_plan")
    before = snapshot_reads(hudi1, base)
    instant = compact_with_cli(base, "schedule", capsys)["instant_time"]
    assert instant == _pending_compaction(base)
    _hudi_compaction(hudi1, base, "run", instant)
    metadata = _commit(base, instant)
    assert metadata.compacted and len(metadata.write_stats) == 2
    assert snapshot_reads(hudi1, base) == before
    assert _read_optimized(hudi1, base) == before["mdt"]


@pytest.mark.long(hudi1="1.0.2")
def test_we_execute_hudis_plan(
    hudi1: HudiJvm, template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _copy(template, tmp_path, "hudi_plan")
    before = snapshot_reads(hudi1, base)
    _hudi_compaction(hudi1, base, "schedule")
    instant = _pending_compaction(base)
    reply = compact_with_cli(base, "execute", capsys)
    assert reply["instant_time"] == instant and reply["result"]["committed"]
    assert _commit(base, instant).compacted
    assert snapshot_reads(hudi1, base) == before
    assert _read_optimized(hudi1, base) == before["mdt"]
    check_mdt_files_agree(hudi1, base)


@pytest.mark.long(hudi1="1.0.2")
def test_a_log_completed_after_the_instant_stays_for_the_next_slice(
    hudi1: HudiJvm, template: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deltacommit requested before the compaction instant but completed after it: its logs are not
    compacted, and they join the slice the compaction opens (reads still see them)."""
    base = _copy(template, tmp_path, "late_log")
    hudi1.write(base, rows([1, 2, 3], 4), SCHEMA, _options("template", "upsert"))
    timeline = base / ".hoodie" / "timeline"
    done = re.compile(r"^(\d{17})_(\d{17})\.deltacommit$")
    [late] = sorted(p for p in timeline.iterdir() if done.match(p.name))[-1:]
    requested, completed = done.match(late.name).groups()  # type: ignore[union-attr]
    before = snapshot_reads(hudi1, base)
    # A compaction instant between the last deltacommit's requested and completion times.
    instant = str(int(requested) + 1)
    assert requested < instant < completed
    compact_with_cli(base, "schedule", capsys, "--instant-time", instant)
    plan = codecs.decode(
        codecs.CompactionPlan, (timeline / f"{instant}.compaction.requested").read_bytes(), "p"
    )
    logs = [name for op in plan.operations or () for name in op.delta_file_paths or ()]
    assert logs and not any(f"_{requested}.log." in name for name in logs)
    reply = compact_with_cli(base, "execute", capsys)
    assert reply["result"]["committed"]
    assert snapshot_reads(hudi1, base) == before


KILL_POINTS = layout_2_kill_points("compaction", "commit")


# Long variants only: the fault matrix (`test_hudi1_fault_matrix.py`) kills at these steps and more in
# CI, on versions 8 and 9; this one kills while executing a plan scheduled apart.
@pytest.mark.long
@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_compaction_killed_is_never_half_visible_and_the_next_run_completes_it(
    hudi1: HudiJvm, template: Path, tmp_path: Path, step: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL at each step of executing our plan, on a table with the record index: readers see the
    table as before (or, once committed, compacted: the same rows), and the next run rolls the attempt
    back (the metadata table's deltacommit of it too) and completes, leaving only the commit's files."""
    base = _copy(template, tmp_path, f"killed_{step}")
    before = snapshot_reads(hudi1, base)
    instant = compact_with_cli(base, "schedule", capsys)["instant_time"]
    kill_mode, pattern = KILL_POINTS[step]
    compact = ["compact", "--base-path", str(base), "--mode", "execute", "--instant-time", instant,
               "--timezone", "UTC", "--spark-master", "local[2]", *HEARTBEAT_1S]  # fmt: skip
    run_killed_at(pattern, compact, tmp_path / "killed.log", mode=kill_mode, timeout=600)
    timeline = base / ".hoodie" / "timeline"
    committed = any(re.fullmatch(rf"{instant}_\d{{17}}\.commit", p.name) for p in timeline.iterdir())
    assert committed == (step == "committed")
    if step == "files_written":
        assert list(base.rglob(f"*_{instant}.parquet")), "the attempt wrote its base files"
    assert snapshot_reads(hudi1, base) == before

    time.sleep(2.5)
    compact_with_cli(base, "execute", capsys, *HEARTBEAT_1S)
    metadata = _commit(base, instant)
    check_only_the_commits_files_left(base, instant, [s.path for s in metadata.write_stats if s.path])
    assert snapshot_reads(hudi1, base) == before
    assert _read_optimized(hudi1, base) == before["mdt"]
    check_mdt_files_agree(hudi1, base)
