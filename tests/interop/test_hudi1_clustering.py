"""Clustering of tables Hudi 1.0.2 (version 8) and 1.1.1 (version 9) wrote, copy-on-write and
merge-on-read, with the metadata table on with each version's Spark defaults (`files`,
`column_stats`, `partition_stats`) and the record index, against Hudi 1.x's own clustering of an
identical copy.

- We schedule and execute: the plan is `clustering.requested` in 1.x's schema, the commit an Avro
  `replacecommit` named with its completion time; Hudi's snapshot reads (metadata table on and off,
  with data skipping) and hudi-rs hold the snapshot from before; `validate_metadata_table_files`
  agrees with storage; the `partition_stats` equal those Hudi's clustering of a copy writes (bounds
  and counts), and the record index points every moved key at its new file group: a Hudi writer with
  `hoodie.index.type=RECORD_INDEX` updates each key once, inserts land, its compaction goes on.
- Plans cross over: Hudi executes our plan, and we execute Hudi's.
- SIGKILL at each step of our execution: readers see the table as before, the next run completes.

Our clustering runs in a child process (the command stops the Spark session it used).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table import codecs
from service.table.instant import Action
from service.table.mdt.index_keys import RECORD_INDEX_PARTITION
from service.table.mdt.index_records import RecordIndexInfo
from service.table.table import HudiTable
from tests.support.crash_at import (
    HEARTBEAT_1S,
    check_only_the_commits_files_left,
    layout_2_kill_points,
    run_killed_at,
)
from tests.support.hudi1_histories import (
    PARTITIONS,
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
from tests.support.mdt_records import mdt_index_records
from tests.support.paths import REPO_ROOT
from tests.support.service_runs import SMALL_FILES, execute_our_clustering, schedule_our_clustering

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
_names = iter(range(1_000_000))


def _options(table_type: str, operation: str, **extra: str) -> dict[str, str]:
    return {
        **writer_options("template", table_type, True),
        **RLI_OPTIONS,
        "hoodie.datasource.write.operation": operation,
        **extra,
    }


@pytest.fixture(scope="module")
def templates(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per table type: three inserts (three small file groups per partition), then upserts (log files
    on merge-on-read, new base files on copy-on-write)."""
    root = tmp_path_factory.mktemp(f"clustering-{hudi1.version}")
    out = {}
    for table_type in TABLE_TYPES:
        base = root / table_type.lower() / "template"
        for batch, ids in enumerate((range(0, 8), range(8, 16), range(16, 24))):
            hudi1.write(base, rows(ids, batch), SCHEMA, _options(table_type, "insert"))
        hudi1.write(base, rows([*range(2, 20, 3)], 3), SCHEMA, _options(table_type, "upsert"))
        out[table_type] = base
    return out


def _copy(template: Path, tmp_path: Path, name: str) -> Path:
    base = tmp_path / name
    shutil.copytree(template, base, symlinks=True)
    return base


def _cluster(base: Path, mode: str, *conf: str) -> dict[str, Any]:
    """`cluster --mode <mode>` in a child process, every file small, with `conf` (`k=v`) besides."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    settings = [a for kv in (SMALL_FILES, *conf) for a in ("--hoodie-conf", kv)]
    argv = [sys.executable, "-m", "service.cli", "cluster", "--base-path", str(base), "--timezone", "UTC",
            "--mode", mode, "--spark-master", "local[2]", "--json", *settings]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def _hudi_clustering(jvm: HudiJvm, base: Path, op: str, instant: str | None = None) -> None:
    name = f"c{next(_names)}"
    jvm.sql(f"create table {name} using hudi location '{base}'")
    at = f", instants => '{instant}'" if instant else ""
    options = ",".join([SMALL_FILES, *(f"{k}={v}" for k, v in RLI_OPTIONS.items())])
    jvm.sql(f"call run_clustering(op => '{op}', table => '{name}'{at}, options => '{options}')")


def _replacecommit(base: Path, instant: str) -> codecs.ReplaceCommitMetadata:
    table = HudiTable.open(str(base))
    [done] = [i for i in table.load_timeline().completed() if i.timestamp == instant]
    assert done.action is Action.REPLACE_COMMIT and done.completion_time is not None
    return table.facts_reader.metadata(done, codecs.ReplaceCommitMetadata)


def _timeline_names(base: Path) -> set[str]:
    return {p.name for p in (base / ".hoodie" / "timeline").iterdir()}


def _completed_clustering(base: Path) -> str:
    [instant] = [
        i.timestamp
        for i in HudiTable.open(str(base)).load_timeline().completed()
        if i.action is Action.REPLACE_COMMIT
    ]
    return instant


# CI: copy-on-write on 1.1.1, merge-on-read on 1.0.2; the other two pairs are long variants.
@pytest.mark.long(hudi1="1.0.2", table_type="COPY_ON_WRITE")
@pytest.mark.long(hudi1="1.1.1", table_type="MERGE_ON_READ")
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_our_clustering_reads_the_same_and_hudi_writes_on_with_the_record_index(
    hudi1: HudiJvm, templates: dict[str, Path], tmp_path: Path, table_type: str
) -> None:
    ours, theirs = (
        _copy(templates[table_type], tmp_path, "ours"),
        _copy(templates[table_type], tmp_path, "hudi"),
    )
    before = snapshot_reads(hudi1, ours)
    reply = _cluster(ours, "scheduleAndExecute")  # the command, once: the rest run in this process
    assert reply["result"]["committed"], reply
    instant = _completed_clustering(ours)
    assert f"{instant}.clustering.requested" in _timeline_names(ours)
    assert not any(n.startswith(f"{instant}.replacecommit.") for n in _timeline_names(ours))
    metadata = _replacecommit(ours, instant)
    assert metadata.operation_type is codecs.WriteOperationType.CLUSTER
    replaced = {(p, f) for p, ids in metadata.partition_to_replace_file_ids.items() for f in ids}
    assert len(replaced) >= 6  # every small file group of both partitions
    assert snapshot_reads(hudi1, ours) == before
    check_mdt_files_agree(hudi1, ours)
    skipping = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
    filtered = hudi1.read(ours, skipping, where="id >= 10")
    assert sorted((r["id"], r["region"], r["ts"], r["value"]) for r in filtered) == [
        r for r in before["mdt"] if r[0] >= 10
    ]

    # The record index: every key points at its new file group.
    located = {
        key: record.payload
        for key, (record, _) in mdt_index_records(ours, RECORD_INDEX_PARTITION, instant).items()
    }
    assert sorted(int(k) for k in located) == sorted(r[0] for r in before["mdt"])
    new_groups = {(s.partition_path, s.file_id) for s in metadata.write_stats}
    assert all(
        isinstance(p, RecordIndexInfo) and (p.partition_name, _file_id(p)) in new_groups
        for p in located.values()
    )

    # Hudi clusters the identical copy: the same partitions' stats, bound for bound, count for count.
    _hudi_clustering(hudi1, theirs, "scheduleAndExecute")
    assert partition_stats_written(ours, instant) == partition_stats_written(
        theirs, _completed_clustering(theirs)
    )

    # Hudi's writer goes on with the record index: updates land once, inserts land.
    index = {"hoodie.index.type": "RECORD_INDEX"}
    upserted = [*range(0, 24, 5), 70, 71]
    hudi1.write(ours, rows(upserted, 9), SCHEMA, _options(table_type, "upsert", **index))
    expected = {r[0]: r for r in before["mdt"]}
    expected.update({i: (i, PARTITIONS[i % 2], 9, "v9") for i in upserted})
    after = hudi_rows(hudi1, ours, metadata=True)
    assert after == sorted(expected.values())
    assert hudi_rows(hudi1, ours, metadata=False) == after == hudi_rs_rows(ours)


def _file_id(info: RecordIndexInfo) -> str:
    """The file id a record-index entry names (`fileIdEncoding` 0: UUID halves and the `-N` index)."""
    if info.file_id_encoding != 0:
        return info.file_id
    import uuid

    assert info.file_id_high_bits is not None and info.file_id_low_bits is not None
    value = ((info.file_id_high_bits & (2**64 - 1)) << 64) | (info.file_id_low_bits & (2**64 - 1))
    return f"{uuid.UUID(int=value)}-{info.file_index}"


@pytest.mark.long(hudi1="1.0.2")
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_hudi_executes_our_plan(
    hudi1: HudiJvm, templates: dict[str, Path], tmp_path: Path, table_type: str
) -> None:
    base = _copy(templates[table_type], tmp_path, "ours_plan")
    before = snapshot_reads(hudi1, base)
    instant = schedule_our_clustering(base)
    assert f"{instant}.clustering.requested" in _timeline_names(base)
    _hudi_clustering(hudi1, base, "execute", instant)
    assert _completed_clustering(base) == instant
    assert snapshot_reads(hudi1, base) == before


@pytest.mark.long(hudi1="1.0.2")
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_we_execute_hudis_plan(
    spark: SparkSession, hudi1: HudiJvm, templates: dict[str, Path], tmp_path: Path, table_type: str
) -> None:
    base = _copy(templates[table_type], tmp_path, "hudi_plan")
    before = snapshot_reads(hudi1, base)
    _hudi_clustering(hudi1, base, "schedule")
    [instant] = [n[:17] for n in _timeline_names(base) if n.endswith(".clustering.requested")]
    assert execute_our_clustering(spark, base, instant)
    assert _completed_clustering(base) == instant
    assert snapshot_reads(hudi1, base) == before
    check_mdt_files_agree(hudi1, base)


KILL_POINTS = layout_2_kill_points("clustering", "replacecommit")


# Long variants only: the fault matrix (`test_hudi1_fault_matrix.py`) kills at these steps and more in
# CI, on versions 8 and 9; this one kills while executing a plan scheduled apart.
@pytest.mark.long
@pytest.mark.parametrize("step", list(KILL_POINTS))
def test_clustering_killed_is_never_half_visible_and_the_next_run_completes_it(
    spark: SparkSession, hudi1: HudiJvm, templates: dict[str, Path], tmp_path: Path, step: str
) -> None:
    """SIGKILL at each step of executing our plan on a merge-on-read table with the record index:
    readers see the table as before, and the next run rolls the attempt back (the metadata table's
    deltacommit of it too) and completes, leaving only the commit's files of the instant."""
    base = _copy(templates["MERGE_ON_READ"], tmp_path, f"killed_{step}")
    before = snapshot_reads(hudi1, base)
    instant = schedule_our_clustering(base)
    kill_mode, pattern = KILL_POINTS[step]
    args = ["cluster", "--base-path", str(base), "--mode", "execute", "--instant-time", instant,
            "--timezone", "UTC", "--spark-master", "local[2]", *HEARTBEAT_1S]  # fmt: skip
    run_killed_at(pattern, args, tmp_path / "killed.log", mode=kill_mode, timeout=600)
    committed = any(re.fullmatch(rf"{instant}_\d{{17}}\.replacecommit", n) for n in _timeline_names(base))
    assert committed == (step == "committed")
    if step == "files_written":
        assert list(base.rglob(f"*_{instant}.parquet")), "the attempt wrote its base files"
    assert snapshot_reads(hudi1, base) == before

    time.sleep(2.5)
    if not committed:
        heartbeat = {"hoodie.client.heartbeat.interval_in_ms": "1000"}
        assert execute_our_clustering(spark, base, instant, **heartbeat)
    metadata = _replacecommit(base, instant)
    check_only_the_commits_files_left(base, instant, [s.path for s in metadata.write_stats if s.path])
    assert snapshot_reads(hudi1, base) == before
    check_mdt_files_agree(hudi1, base)


@pytest.mark.long(hudi1="1.0.2")
def test_clustering_keeps_the_secondary_index_valid(
    spark: SparkSession, hudi1: HudiJvm, templates: dict[str, Path], tmp_path: Path
) -> None:
    """A secondary index (`CREATE INDEX`, needing the record index) maps secondary keys to record keys,
    whose locations the record index holds: our clustering writes nothing into it (as Hudi's leaves
    it), and Hudi's lookups through it and through the record index find the rows they found before."""
    base = _copy(templates["COPY_ON_WRITE"], tmp_path, "secondary")
    name = f"secondary{hudi1.table_version}_{next(_names)}"
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    hudi1.sql("set hoodie.write.lock.provider=org.apache.hudi.client.transaction.lock.InProcessLockProvider")
    hudi1.sql(f"create index idx_value on {name} (value)")
    assert "secondary_index_idx_value" in HudiTable.open(str(base)).config.metadata_partitions
    reader = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
    lookups = {where: sorted(r["id"] for r in hudi1.read(base, reader, where=where)) for where in
               ("id = 4", "value = 'v3'", "value = 'v1'")}  # fmt: skip
    assert all(lookups.values())
    assert execute_our_clustering(spark, base, schedule_our_clustering(base))
    instant = _completed_clustering(base)
    secondary = base / ".hoodie" / "metadata" / "secondary_index_idx_value"
    assert not [p for p in secondary.iterdir() if f"_{instant}.log." in p.name]
    for where, found in lookups.items():
        assert sorted(r["id"] for r in hudi1.read(base, reader, where=where)) == found, where
    check_mdt_files_agree(hudi1, base)


@pytest.mark.long(table_type="COPY_ON_WRITE")
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_our_clustering_without_the_metadata_table(
    spark: SparkSession, hudi1: HudiJvm, tmp_path: Path, table_type: str
) -> None:
    """A version-8/9 table written with the metadata table off: our clustering writes none, and Hudi
    and hudi-rs read the snapshot from before; Hudi's writer goes on."""
    base = tmp_path / "no_mdt"
    no_mdt = {**_options(table_type, "insert"), "hoodie.metadata.enable": "false"}
    for batch, ids in enumerate((range(0, 8), range(8, 16))):
        hudi1.write(base, rows(ids, batch), SCHEMA, no_mdt)
    hudi1.write(
        base, rows(range(2, 14, 3), 2), SCHEMA, {**no_mdt, "hoodie.datasource.write.operation": "upsert"}
    )
    assert not (base / ".hoodie" / "metadata").exists()
    before = snapshot_reads(hudi1, base)
    assert execute_our_clustering(spark, base, schedule_our_clustering(base))
    _completed_clustering(base)
    assert snapshot_reads(hudi1, base) == before
    assert not (base / ".hoodie" / "metadata").exists()
    hudi1.write(base, rows([0, 5, 50], 3), SCHEMA, {**no_mdt, "hoodie.datasource.write.operation": "upsert"})
    expected = {r[0]: r for r in before["no_mdt"]}
    expected.update({i: (i, PARTITIONS[i % 2], 3, "v3") for i in (0, 5, 50)})
    assert hudi_rows(hudi1, base, metadata=False) == sorted(expected.values()) == hudi_rs_rows(base)


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.hudi1_only("1.2.0")  # rolling metadata is new in Hudi 1.2
def test_our_clusterings_carry_hudi_1_2s_rolling_metadata_keys_forward(
    hudi1: HudiJvm, tmp_path: Path
) -> None:
    """A writer with `hoodie.write.rolling.metadata.keys=_ckpt` and a lookback of one commit sets the
    key once; two of our clusterings follow, each carrying it forward from the commit before it (as
    Hudi 1.2.0's table services do, `BaseHoodieTableServiceClient.preCommit`), so the writer's next
    commit, which looks back at our last one only, still carries it. Hudi's own
    `show_commit_extra_metadata` reads it in each of those commits."""
    base = tmp_path / "rolling"
    rolling = {
        "hoodie.write.rolling.metadata.keys": "_ckpt",
        "hoodie.write.rolling.metadata.timeline.lookback.commits": "1",
    }
    insert = {**_options("COPY_ON_WRITE", "insert"), **rolling}
    hudi1.write(base, rows(range(0, 8), 0), SCHEMA, insert)
    hudi1.write(base, rows(range(8, 16), 1), SCHEMA, {**insert, "_ckpt": "offset-42"})  # `_`: extra metadata
    for _ in range(2):  # sorted: a partition's one file slice is clustered again
        reply = _cluster(base, "scheduleAndExecute", "hoodie.clustering.plan.strategy.sort.columns=id",
                         *(f"{k}={v}" for k, v in rolling.items()))  # fmt: skip
        assert reply["result"]["committed"], reply
    hudi1.write(base, rows(range(16, 24), 2), SCHEMA, insert)
    name = f"rolling_{next(_names)}"
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    timeline = HudiTable.open(str(base)).load_timeline()
    ours = [i.timestamp for i in timeline.completed() if i.action is Action.REPLACE_COMMIT]
    assert len(ours) == 2
    last = timeline.completed().commits().last
    assert last is not None and last.action is Action.COMMIT and last.timestamp > max(ours)
    for instant in [*ours, last.timestamp]:
        found = hudi1.sql(
            f"call show_commit_extra_metadata(table => '{name}', instant_time => '{instant}', "
            "metadata_key => '_ckpt')"
        )
        assert [r["metadata_value"] for r in found] == ["offset-42"], (instant, found)
    assert sorted(r[0] for r in hudi_rows(hudi1, base)) == list(range(24))
