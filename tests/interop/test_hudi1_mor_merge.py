"""The merged read of merge-on-read file slices on tables Hudi 1.0.2 (version 8) and 1.1.1 (version 9)
wrote, against Hudi 1.x's own snapshot read: the base of compaction and clustering on those tables.

Hudi 1.x names the merge in `hoodie.record.merge.mode`: EVENT_TIME_ORDERING (its default with an
ordering field) and COMMIT_TIME_ORDERING. Each table gets, over one insert: newer updates, updates
older than the base and older than a log record, updates with an equal ordering value, deletes with a
lower and a higher ordering value, and `_hoodie_is_deleted` rows. Our merged read of every latest
slice must hold exactly Hudi's rows.

Partial updates: Spark SQL's MERGE INTO on merge-on-read tables writes IS_PARTIAL log blocks holding
only the columns it sets. Tables of such updates (over the base, older than it, partial under and
over partial and whole log records, deleted after) read through our merged read, and after our
compaction and our clustering, as Hudi reads them before.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.table.log_format.blocks import DataBlock
from service.table.log_format.merge import MergeConfig, PayloadClass
from service.table.log_format.slice_reader import instant_filter, read_file_slice, read_log_file
from service.table.table import HudiTable
from tests.support.hudi1_histories import writer_options
from tests.support.hudi_jvm import HudiJvm, HudiJvmError, hudi_jvm
from tests.support.hudi_tables import hudi_rs_snapshot
from tests.support.service_runs import compact_with_cli, execute_our_clustering, schedule_our_clustering

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

SCHEMA = "id long, region string, ts long, value string, _hoodie_is_deleted boolean"
MODES = ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]


def _rows(ids: Sequence[int], ts: int, tag: str, deleted: bool = False) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "region": ("americas", "asia")[i % 2],
            "ts": ts,
            "value": f"{tag}{i}",
            "_hoodie_is_deleted": deleted,
        }
        for i in ids
    ]


def _build(jvm: HudiJvm, base: Path, mode: str) -> None:
    options = {
        **writer_options(base.name, "MERGE_ON_READ", False),
        "hoodie.record.merge.mode": mode,
        "hoodie.write.record.merge.mode": mode,
    }

    def write(rows: list[dict[str, Any]], operation: str) -> None:
        jvm.write(base, rows, SCHEMA, {**options, "hoodie.datasource.write.operation": operation})

    write(_rows(range(0, 16), 10, "a"), "insert")
    write(_rows(range(0, 6), 20, "b"), "upsert")  # newer
    write(_rows(range(3, 9), 5, "c"), "upsert")  # older than the log (3-5) and than the base (6-8)
    write(_rows([9, 10], 10, "d"), "upsert")  # equal ordering value
    write(_rows([11, 12], 1, "e"), "delete")  # a delete with a lower ordering value
    write(_rows([13], 99, "f"), "delete")  # a delete with a higher one
    write(_rows([14], 30, "g", deleted=True), "upsert")  # _hoodie_is_deleted, newer
    write(_rows([15], 1, "h", deleted=True), "upsert")  # _hoodie_is_deleted, older
    write(_rows([0, 1], 20, "i"), "upsert")  # equal to the log's
    # (Not written: an upsert after the deletes above. Hudi 1.0.2 and 1.1.1 then fail their own reads
    # comparing the delete's Integer 0 with the Long ordering value.)
    write(_rows([14], 25, "k"), "upsert")  # after a _hoodie_is_deleted row with a higher value


@pytest.fixture(scope="module")
def tables(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp(f"merge-{hudi1.version}")
    out = {}
    for mode in MODES:
        base = root / f"m{hudi1.table_version}_{mode.split('_')[0].lower()}"
        _build(hudi1, base, mode)
        out[mode] = base
    return out


def _our_rows(base: Path) -> list[tuple[Any, ...]]:
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    view = table.load_view(timeline)
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    out = []
    for group in view.live_file_groups:
        assert group.latest_slice is not None
        merged = read_file_slice(table.storage, group.latest_slice, instant_filter(timeline), config)
        out += [(r["id"], r["region"], r["ts"], r["value"]) for r in merged.to_pylist()]
    return sorted(out)


@pytest.mark.parametrize("mode", MODES)
def test_merged_read_of_1x_slices_equals_hudis_snapshot(
    hudi1: HudiJvm, tables: dict[str, Path], mode: str
) -> None:
    base = tables[mode]
    table = HudiTable.open(str(base))
    assert table.config.raw.get("hoodie.record.merge.mode") == mode
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    expected_payload = (
        PayloadClass.DEFAULT if mode == "EVENT_TIME_ORDERING" else PayloadClass.OVERWRITE_WITH_LATEST
    )
    assert (config.payload_class, config.ordering_field) == (expected_payload, "ts")
    theirs = sorted(
        (r["id"], r["region"], r["ts"], r["value"])
        for r in hudi1.read(base, {"hoodie.metadata.enable": "false"})
    )
    assert _our_rows(base) == theirs
    by_id = {r[0]: r for r in theirs}
    if mode == "EVENT_TIME_ORDERING":
        assert by_id[3][3] == "b3" and by_id[6][3] == "a6"  # the older updates lost
        assert 14 not in by_id  # the later, lower update lost to the delete
    else:
        assert by_id[3][3] == "c3" and by_id[6][3] == "c6"  # the later write won
        assert by_id[14][3] == "k14"
    assert 13 not in by_id


# What Hudi reads after `_build_partial` (id, name, price, ts): measured with Hudi 1.1.1 in both modes
# and 1.0.2 on EVENT_TIME_ORDERING. Every record started as (id, f"n{id}", id, 10).
PARTIAL_EXPECTED = {
    "EVENT_TIME_ORDERING": [
        (1, "n1", 101.0, 20),  # a partial update over the base record
        (2, "n2", 2.0, 10),  # one older than the base record: lost
        (3, "p3", 103.0, 20),  # an older partial update under a newer one fills the columns it leaves out
        (4, "p4", 104.0, 30),  # two newer partial updates, one over the other
        (5, "f5", 205.0, 20),  # an older partial update under a whole log record: lost
        (6, "f6", 306.0, 25),  # a newer whole record over a partial update
        (7, "f7", 107.0, 20),  # an older whole record under a partial update: the columns it leaves out
        (8, "n8", 108.0, 10),  # an equal ordering value: the update wins
        (11, "n11", 111.0, 20),  # the second file group
    ],
    "COMMIT_TIME_ORDERING": [
        (1, "n1", 101.0, 20),
        (2, "n2", 102.0, 5),
        (3, "p3", 103.0, 15),
        (4, "p4", 104.0, 30),
        (5, "p5", 205.0, 15),
        (6, "f6", 306.0, 25),
        (7, "f7", 307.0, 15),
        (8, "n8", 108.0, 10),
        (11, "n11", 111.0, 20),
    ],
}  # 9 and 10 deleted; 12 updated partially, then deleted
# Hudi 1.0.2 cannot merge partial updates by commit time: its own reads fail, and so does its next
# MERGE INTO (which reads the table). Its table gets the first partial update only: these rows, as
# Hudi 1.1.1's reader reads that table.
PARTIAL_EXPECTED_102_COMMIT_TIME = [
    (1, "n1", 101.0, 20),
    (2, "n2", 102.0, 5),
    (3, "n3", 103.0, 20),
    (4, "n4", 104.0, 20),
    (5, "n5", 5.0, 10),
    (6, "n6", 106.0, 20),
    (7, "n7", 107.0, 20),
    (8, "n8", 108.0, 10),
    (9, "n9", 9.0, 10),
    (10, "n10", 10.0, 10),
    (11, "n11", 111.0, 20),
    (12, "n12", 112.0, 20),
]
HUDI_102_FAILS = (
    "Partial merging logic is not implemented by org.apache.hudi.OverwriteWithLatestSparkRecordMerger"
)
_PARTIAL_SESSION = {
    "hoodie.compact.inline": "false",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
    "hoodie.parquet.small.file.limit": "0",  # the second insert opens a second file group
}


def _build_partial(jvm: HudiJvm, base: Path, mode: str) -> None:
    name = f"partial_{jvm.table_version}_{mode.split('_')[0].lower()}"

    def source(columns: str, rows: str) -> None:
        jvm.sql(
            f"create or replace temporary view src as select * from values {rows} as s({columns}, region)"
        )

    def partial(columns: str, rows: str) -> None:
        source(columns, rows)
        assign = ", ".join(f"{c} = s.{c}" for c in columns.split(", ") if c != "id")
        jvm.sql(f"merge into {name} t using src s on t.id = s.id when matched then update set {assign}")

    def whole(rows: str) -> None:
        source("id, name, price, ts", rows)
        jvm.sql(f"merge into {name} t using src s on t.id = s.id when matched then update set *")

    for key, value in _PARTIAL_SESSION.items():
        jvm.sql(f"set {key}={value}")
    try:
        jvm.sql(
            f"create table {name} (id int, name string, price double, ts long, region string) using hudi "
            "partitioned by (region) tblproperties (type = 'mor', primaryKey = 'id', "
            f"preCombineField = 'ts', 'hoodie.record.merge.mode' = '{mode}') location '{base}'"
        )
        for ids in (range(1, 11), range(11, 13)):
            jvm.sql(f"insert into {name} values " + ", ".join(f"({i}, 'n{i}', {i}.0, 10, 'eu')" for i in ids))
        partial("id, price, ts", ", ".join(
            f"({i}, {p}D, {t}L, 'eu')"
            for i, p, t in [(1, 101, 20), (2, 102, 5), (3, 103, 20), (4, 104, 20), (6, 106, 20), (7, 107, 20),
                            (8, 108, 10), (11, 111, 20), (12, 112, 20)]
        ))  # fmt: skip
        if _hudi_cannot_merge(jvm, mode):
            return
        whole("(5, 'f5', 205D, 20L, 'eu')")
        partial("id, name, ts", "(3, 'p3', 15L, 'eu'), (4, 'p4', 30L, 'eu'), (5, 'p5', 15L, 'eu')")
        whole("(6, 'f6', 306D, 25L, 'eu'), (7, 'f7', 307D, 15L, 'eu')")
        jvm.sql(f"delete from {name} where id in (9, 10, 12)")
    finally:
        for key in _PARTIAL_SESSION:
            jvm.sql(f"reset {key}")


@pytest.fixture(scope="module")
def partial_tables(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp(f"partial-{hudi1.version}")
    out = {}
    for mode in MODES:
        out[mode] = root / mode.split("_")[0].lower()
        _build_partial(hudi1, out[mode], mode)
    return out


def _hudi_cannot_merge(jvm: HudiJvm, mode: str) -> bool:
    return jvm.version == "1.0.2" and mode == "COMMIT_TIME_ORDERING"


def _expected(jvm: HudiJvm, mode: str) -> list[tuple[Any, ...]]:
    return PARTIAL_EXPECTED_102_COMMIT_TIME if _hudi_cannot_merge(jvm, mode) else PARTIAL_EXPECTED[mode]


def _partial_rows(rows: Any) -> list[tuple[Any, ...]]:
    return sorted((r["id"], r["name"], r["price"], r["ts"]) for r in rows)


def _hudi_reads(jvm: HudiJvm, base: Path, mode: str) -> dict[str, list[tuple[Any, ...]]]:
    """Hudi's snapshot reads (metadata table on and off) and hudi-rs's; on Hudi 1.0.2 with commit-time
    merging, only those that do not merge partial updates (Hudi's fail)."""
    reads = {"hudi_rs": _partial_rows(hudi_rs_snapshot(base).to_pylist())}
    for metadata in ("true", "false"):
        try:
            reads[f"mdt_{metadata}"] = _partial_rows(jvm.read(base, {"hoodie.metadata.enable": metadata}))
        except HudiJvmError as failure:
            assert _hudi_cannot_merge(jvm, mode), failure
            assert HUDI_102_FAILS in str(failure)
    return reads


@pytest.mark.parametrize("mode", MODES)
def test_merged_read_of_partial_updates_equals_hudis_snapshot(
    hudi1: HudiJvm, partial_tables: dict[str, Path], tmp_path: Path, mode: str
) -> None:
    base = partial_tables[mode]
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    slices = [
        g.latest_slice for g in table.load_view(timeline).live_file_groups if g.latest_slice is not None
    ]
    blocks = [b for s in slices for log in s.log_files for b in read_log_file(table.storage, log)]
    assert any(isinstance(b, DataBlock) and b.is_partial for b in blocks), "no partial update written"
    expected = _expected(hudi1, mode)
    reads = _hudi_reads(hudi1, base, mode)
    if _hudi_cannot_merge(hudi1, mode):
        # Hudi 1.0.2 cannot read its own table back: Hudi 1.1.1's reader, in a child of its own, is
        # the independent reader of the rows expected here (a copy: nothing may change the module's).
        copy = _copy(base, tmp_path)
        with hudi_jvm("1.1.1", tmp_path / "hudi-1.1.1") as newer:
            for metadata in ("true", "false"):
                reads[f"1.1.1_mdt_{metadata}"] = _partial_rows(
                    newer.read(copy, {"hoodie.metadata.enable": metadata})
                )
    hudi_read = {name: rows for name, rows in reads.items() if name != "hudi_rs"}
    assert len(hudi_read) == 2 and all(rows == expected for rows in hudi_read.values()), reads
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    ours = [read_file_slice(table.storage, s, instant_filter(timeline), config) for s in slices]
    assert _partial_rows(r for t in ours for r in t.to_pylist()) == expected


def _copy(template: Path, tmp_path: Path) -> Path:
    base = tmp_path / template.name
    shutil.copytree(template, base, symlinks=True)
    return base


@pytest.mark.long(hudi1="1.0.2", mode="EVENT_TIME_ORDERING")
@pytest.mark.parametrize("mode", MODES)
def test_our_compaction_of_partial_updates_reads_as_hudi_merges_them(
    spark: SparkSession,
    hudi1: HudiJvm,
    partial_tables: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    """After our compaction, Hudi's snapshot and read-optimized reads and hudi-rs hold what Hudi merged
    before; on Hudi 1.0.2 with commit-time merging, the table is readable again, as 1.1.1 merges it."""
    base = _copy(partial_tables[mode], tmp_path)
    assert compact_with_cli(base, "scheduleAndExecute", capsys)["result"]["committed"]
    reads = _hudi_reads(hudi1, base, mode)
    reads["read_optimized"] = _partial_rows(
        hudi1.read(base, {"hoodie.datasource.query.type": "read_optimized"})
    )
    assert reads == dict.fromkeys(
        ["hudi_rs", "mdt_true", "mdt_false", "read_optimized"], _expected(hudi1, mode)
    )


@pytest.mark.long(hudi1="1.0.2")
@pytest.mark.parametrize("mode", MODES)
def test_our_clustering_of_partial_updates_reads_as_hudi_merges_them(
    spark: SparkSession, hudi1: HudiJvm, partial_tables: dict[str, Path], tmp_path: Path, mode: str
) -> None:
    base = _copy(partial_tables[mode], tmp_path)
    assert execute_our_clustering(spark, base, schedule_our_clustering(base))
    reads = _hudi_reads(hudi1, base, mode)
    assert reads == dict.fromkeys(["hudi_rs", "mdt_true", "mdt_false"], _expected(hudi1, mode))
