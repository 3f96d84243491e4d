"""The archival window against Hudi 0.15's own archiver (`HoodieTimelineArchiver`, table version 6).

One history per table type, written by Hudi with its table services handed over (nothing archives):
inserts and upserts, Hudi's cleans (`run_clean`), an insert overwrite and a clustering
(replacecommits), a failed write and its rollback, a savepoint, and on merge-on-read a compaction;
then a clustering (copy-on-write) or a compaction (merge-on-read) left pending. The metadata table is
on (Hudi's default) and compacted by Hudi's writer along the way. On identical copies, Hudi's
`archive_commits` procedure archives and our window is computed for the same settings: the instants
Hudi moved off the active timeline are exactly the window's.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from service.cli import main
from service.table.archived_log import archive_file_version
from service.table.instant import Action
from service.table.table import HudiTable
from strategies.archival import Bound
from tests.support import hudi_tables as ht
from tests.support.archival import (
    EDGE_ARCHIVE_ARGUMENTS,
    EDGE_ARCHIVE_SETTINGS,
    SETTINGS,
    LazyHistories,
    active_instants,
    archived_commits,
    assert_hudi_reads_our_archive_as_its_own,
    assert_window_is_what_hudi_archives,
    avro_record,
    timeline_files,
    twin_copies,
)
from tests.support.crash_at import run_killed_at

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

NAME = "archival"
PARTITION_FIELDS = [ht.PARTITION_FIELD]
# Writers that hand their table services over: nothing cleans, compacts, clusters or archives inline.
# The metadata table at Hudi's default (on; the test writers' default is off). The small archival
# settings reach the metadata table's own archival (its minimum and maximum are these plus one), which
# the writer still runs.
HANDED_OVER = {
    "hoodie.table.services.enabled": "false",
    "hoodie.metadata.enable": "true",
    "hoodie.keep.min.commits": "2",
    "hoodie.keep.max.commits": "3",
}


@dataclass(frozen=True)
class History:
    base: Path
    table_type: str
    savepoint: str
    pending: str  # the clustering (copy-on-write) or compaction (merge-on-read) left pending


def _write(spark: SparkSession, base: Path, op: str, ids: Any, batch: int, extra: dict[str, str]) -> str:
    df = ht.generate(spark, ids, batch)
    return ht.write(spark, base, df, op, NAME, ht.RECORD_KEY, ht.PRECOMBINE, PARTITION_FIELDS, extra)


def _call(spark: SparkSession, base: Path, procedure: str, args: str = "") -> list[Any]:
    with ht.registered_table(spark, base) as name:
        return spark.sql(f"CALL {procedure}(table => '{name}'{', ' + args if args else ''})").collect()


def _build(spark: SparkSession, base: Path, table_type: str) -> History:
    opts = {**HANDED_OVER, "hoodie.datasource.write.table.type": table_type}
    write = lambda op, ids, batch: _write(spark, base, op, ids, batch, opts)  # noqa: E731
    write("insert", range(0, 60), 0)
    write("insert", range(60, 120), 1)
    for batch in range(2, 6):
        write("upsert", range(batch, 120, 3 + batch), batch)
    _call(spark, base, "run_clean", "retain_commits => 3")
    write("insert_overwrite", [i for i in range(1000, 1030) if ht.PARTITIONS[i % 3] == "asia"], 6)
    write("upsert", range(0, 60, 2), 7)
    if table_type == "MERGE_ON_READ":
        _call(spark, base, "run_compaction", "op => 'scheduleAndExecute'")
    else:
        _call(spark, base, "run_clustering", "op => 'scheduleAndExecute'")
    ht.write_failing(spark, base, ht.generate(spark, range(5, 25), 8), "upsert", NAME,
                     partition_fields=PARTITION_FIELDS, extra_opts=opts)  # fmt: skip
    savepoint = write("upsert", range(30, 90, 4), 9)
    assert _call(spark, base, "create_savepoint", f"commit_time => '{savepoint}'")[0][0] is True
    for batch in range(10, 16):
        write("upsert", range(batch, 120, batch), batch)
    _call(spark, base, "run_clean", "retain_commits => 2")
    write("upsert", range(40, 50), 16)
    if table_type == "MERGE_ON_READ":
        [pending] = _call(spark, base, "run_compaction", "op => 'schedule'")
        instant = str(pending[0])
    else:
        [pending] = _call(spark, base, "run_clustering", "op => 'schedule'")
        instant = pending["timestamp"]
    write("insert", range(2000, 2010), 17)  # new file groups beside the pending plan
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    # What the window must get right is there: the metadata table, the savepoint, the pending plan.
    assert table.lists_through_mdt
    assert timeline.find(savepoint, Action.SAVEPOINT) is not None
    pending_plan = timeline.find(instant)
    assert pending_plan is not None and pending_plan.is_pending
    return History(base, table_type, savepoint, instant)


@pytest.fixture(scope="module")
def histories(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> LazyHistories[History]:
    root = tmp_path_factory.mktemp("archival-histories")
    return LazyHistories(lambda table_type: _build(spark, root / table_type.lower(), table_type))


@pytest.mark.long(table_type="MERGE_ON_READ")  # CI: copy-on-write (one history); both with HTS_LONG_TESTS
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("low", "high", "retained"), SETTINGS)
def test_the_window_is_what_hudi_archives(
    spark: SparkSession,
    histories: LazyHistories[History],
    tmp_path: Path,
    table_type: str,
    low: int,
    high: int,
    retained: int,
) -> None:
    assert_window_is_what_hudi_archives(
        histories[table_type].base,
        tmp_path,
        low,
        high,
        retained,
        lambda copy, arguments: _call(spark, copy, "archive_commits", arguments),
    )


def test_check_says_nobody_archives_the_table_and_what_archival_would_do(
    spark: SparkSession, histories: LazyHistories[History], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` on a table whose writers handed their services over: the active timeline's length, no
    archived timeline, the note that nobody archives it, and the window (the same as Hudi's archiver
    then archives); after Hudi's archival the archived timeline is there and the note is gone."""
    base = tmp_path / "table"
    shutil.copytree(histories["COPY_ON_WRITE"].base, base, symlinks=True)
    settings = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
                "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]  # fmt: skip

    def check() -> dict[str, Any]:
        capsys.readouterr()
        main(["check", "--base-path", str(base), "--timezone", "UTC", "--json", *settings])
        report: dict[str, Any] = json.loads(capsys.readouterr().out)["archival"]
        return report

    before = check()
    active = len(HudiTable.open(str(base)).load_timeline())
    assert before["active_instants"] == active and before["archived_timeline"]["files"] == []
    assert before["would_archive"] > 0 and "nobody archives this table" in before["note"]
    assert before["held_by"]["bound"] in {b.value for b in Bound} and before["held_by"]["way_out"]
    assert before["last_archived"] is None
    instants = active_instants(base)
    _call(spark, base, "archive_commits", "min_commits => 2, max_commits => 3, retain_commits => 1")
    assert len(instants - active_instants(base)) == before["would_archive"]
    after = check()
    assert after["archived_timeline"]["files"] and "note" not in after
    assert after["last_archived"]["file"] in after["archived_timeline"]["files"]
    assert after["active_instants"] == active - before["would_archive"]


def _rows(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    return ht.normalise_rows(ht.read_snapshot(spark, base))


@pytest.mark.long(table_type="MERGE_ON_READ")  # CI: copy-on-write (one history); both with HTS_LONG_TESTS
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_our_archival_is_read_by_hudi_as_its_own(
    spark: SparkSession,
    histories: LazyHistories[History],
    tmp_path: Path,
    table_type: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Our `archive` and Hudi's `archive_commits` on identical copies leave the same active timeline;
    Hudi's archived-timeline reader returns the same commits from our `archived/` log file as from its
    own; Hudi and hudi-rs read the same rows; Hudi's writer goes on, and Hudi's next archival
    continues from ours."""
    theirs, ours = twin_copies(histories[table_type].base, tmp_path)
    rows_before = _rows(spark, ours)
    _call(spark, theirs, "archive_commits", "min_commits => 2, max_commits => 3, retain_commits => 1")
    capsys.readouterr()
    argv = ["archive", "--base-path", str(ours), "--timezone", "UTC", "--json", *_SETTINGS]
    assert main(argv) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["instants"] and reply["data_file"]
    assert timeline_files(ours) == timeline_files(theirs)
    our_view = assert_hudi_reads_our_archive_as_its_own(
        lambda t: archived_commits(spark, t), theirs, ours, tmp_path
    )
    assert _rows(spark, ours) == rows_before
    assert ht.normalise_rows(ht.hudi_rs_snapshot(ours).to_pylist()) == rows_before
    # Hudi's writer goes on (new keys beside the pending plan); its next archival continues from ours.
    opts = {**HANDED_OVER, "hoodie.datasource.write.table.type": table_type}
    _write(spark, ours, "insert", range(3000, 3006), 20, opts)
    assert len(_rows(spark, ours)) == len(rows_before) + 6
    before_second = active_instants(ours)
    _call(spark, ours, "archive_commits", "min_commits => 1, max_commits => 2, retain_commits => 1")
    assert active_instants(ours) <= before_second
    assert len(archived_commits(spark, ours)) >= len(our_view)


_SETTINGS = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
             "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]  # fmt: skip


@pytest.mark.long(table_type="MERGE_ON_READ")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_a_writer_that_handed_its_services_over_still_compacts_and_archives_its_metadata_table(
    histories: LazyHistories[History], table_type: str
) -> None:
    """What stays inside Hudi 0.15's writer commits with `hoodie.table.services.enabled=false` (the
    README's hand-over): its data table is neither archived nor cleaned (the only cleans are the
    history's two `run_clean` calls, when they found something to delete), but its metadata table is
    compacted and archived."""
    history = histories[table_type]
    meta = history.base / ".hoodie"
    assert not [p for p in (meta / "archived").iterdir() if archive_file_version(p.name)]
    timeline = HudiTable.open(str(history.base)).load_timeline()
    assert len(timeline.by_actions([Action.CLEAN]).completed()) <= 2  # `run_clean`'s at most
    mdt = meta / "metadata" / ".hoodie"
    assert [p for p in mdt.iterdir() if p.name.endswith(".commit")], "the writer compacted its metadata table"
    assert [p for p in (mdt / "archived").iterdir() if archive_file_version(p.name)], "and archived it"


def _incremental_and_time_travel(spark: SparkSession, base: Path, end: str, as_of: str) -> dict[str, Any]:
    """Hudi's incremental query from the start up to `end`, and its time travel to `as_of`: (commit
    time, record key) of every row, sorted; or Hudi's refusal (a time travel to a cleaned commit)."""

    def rows(**options: str) -> list[tuple[str, str]] | str:
        reader = spark.read.format("hudi").option("hoodie.metadata.enable", "false")
        for key, value in options.items():
            reader = reader.option(key, value)
        try:
            frame = reader.load(str(base)).select("_hoodie_commit_time", "_hoodie_record_key")
            return sorted((r[0], r[1]) for r in frame.collect())
        except Exception as exc:  # pyspark's wrapper of Hudi's exception
            return str(exc).splitlines()[0]

    return {
        "incremental": rows(**{
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": "000",
            "hoodie.datasource.read.end.instanttime": end,
        }),
        "time_travel": rows(**{"as.of.instant": as_of}),
    }  # fmt: skip


def test_queries_reaching_archived_commits_read_the_same_after_our_archival_as_after_hudis(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six inserts of new keys (no file is ever rewritten or cleaned), archived down to two commits,
    on a copy we archived and one Hudi archived: a time travel to the last archived commit returns the
    rows of the four archived commits on both; an incremental query from the start returns the same
    on both (Hudi 0.15 answers it from the active timeline: the two active commits' rows)."""
    source = tmp_path / "inserts"
    opts = {**HANDED_OVER, "hoodie.metadata.enable": "false"}
    commits = [_write(spark, source, "insert", range(n * 10, n * 10 + 10), n, opts) for n in range(6)]
    theirs, ours = twin_copies(source, tmp_path)
    _call(spark, theirs, "archive_commits", "min_commits => 2, max_commits => 3, retain_commits => 1")
    capsys.readouterr()
    assert main(["archive", "--base-path", str(ours), "--timezone", "UTC", "--json", *_SETTINGS]) == 0
    archived = {i["instant"] for i in json.loads(capsys.readouterr().out)["instants"]}
    assert archived == set(commits[:4])
    ours_read = _incremental_and_time_travel(spark, ours, commits[-1], max(archived))
    assert isinstance(ours_read["time_travel"], list)
    assert {time for time, _ in ours_read["time_travel"]} == archived and len(ours_read["time_travel"]) == 40
    assert isinstance(ours_read["incremental"], list)
    assert {time for time, _ in ours_read["incremental"]} == set(commits[4:])
    assert ours_read == _incremental_and_time_travel(spark, theirs, commits[-1], max(archived))


def test_hudi_reads_our_merged_archive_files(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`hoodie.archive.merge.enable` with batches of three: three archival runs between inserts leave
    three small archive files, merged into one; Hudi's `show_archived_commits` returns every commit
    the runs archived, each once."""
    base = tmp_path / "merged"
    opts = {**HANDED_OVER, "hoodie.metadata.enable": "false"}
    argv = ["archive", "--base-path", str(base), "--timezone", "UTC", "--json",
            "--hoodie-conf", "hoodie.keep.min.commits=1", "--hoodie-conf", "hoodie.keep.max.commits=2",
            "--hoodie-conf", "hoodie.cleaner.commits.retained=1",
            "--hoodie-conf", "hoodie.archive.merge.enable=true",
            "--hoodie-conf", "hoodie.archive.merge.files.batch.size=3"]  # fmt: skip
    archived: list[str] = []
    batch = 0
    for writes in (4, 2, 2):  # the minimum is 2: the cleaner retains one commit, plus two
        for _ in range(writes):
            _write(spark, base, "insert", range(batch * 10, batch * 10 + 10), batch, opts)
            batch += 1
        capsys.readouterr()
        assert main(argv) == 0
        archived += [i["instant"] for i in json.loads(capsys.readouterr().out)["instants"]]
    files = [p.name for p in (base / ".hoodie" / "archived").iterdir() if archive_file_version(p.name)]
    assert files == [".commits_.archive.4_1-0-1"] and len(archived) == 6
    assert sorted(r["commit_time"] for r in archived_commits(spark, base)) == sorted(archived)


def _replaced_files(base: Path, replacecommit: str) -> set[str]:
    """The data files of the file groups Hudi's replacecommit names as replaced (its JSON metadata)."""
    metadata = json.loads((base / ".hoodie" / f"{replacecommit}.replacecommit").read_text())
    groups = {(p, g) for p, ids in metadata["partitionToReplaceFileIds"].items() for g in ids}
    return {str(f.relative_to(base)) for p, g in groups for f in (base / p).glob(f"{g}_*.parquet")}


def _keys_once(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    """Hudi's snapshot rows (listing through the metadata table and without it) and hudi-rs's, all
    equal, every record key once: a replaced file group read again would repeat its keys."""
    rows = _rows(spark, base)
    through_mdt = spark.read.format("hudi").option("hoodie.metadata.enable", "true").load(str(base))
    assert ht.normalise_rows([r.asDict() for r in through_mdt.collect()]) == rows
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == rows
    keys = [r[ht.RECORD_KEY] for r in rows]
    assert len(keys) == len(set(keys)) > 0
    return rows


def test_no_replaced_file_group_is_read_again_when_the_clean_edge_meets_the_window(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A clustering's replacecommit R is the last completed clean's earliest commit to retain, so that
    clean kept R's replaced file groups; a later clean is pending (our clean, killed once its plan was
    written), its plan deleting them. Archival, ours as Hudi's, stops before R: archiving it while the
    replaced files exist would show their rows again to every reader. Once that clean completes, the
    next archival passes R, as Hudi's does; each time Hudi (with and without the metadata table) and
    hudi-rs read every key once."""
    base = tmp_path / "edge"
    # The metadata table compacted often: its latest compaction bounds the data table's archival.
    opts = {**HANDED_OVER, "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.metadata.compact.max.delta.commits": "2"}  # fmt: skip
    write = lambda op, ids, batch: _write(spark, base, op, ids, batch, opts)  # noqa: E731
    write("insert", range(0, 60), 0)
    write("insert", range(60, 120), 1)
    write("upsert", range(0, 120, 5), 2)
    # One partition clustered: the others' older file slices give the clean below files to delete.
    _call(spark, base, "run_clustering", "op => 'scheduleAndExecute', selected_partitions => 'asia'")
    [replacecommit] = ht.instants_with_action(base, "replacecommit")
    write("upsert", range(1, 120, 7), 3)
    write("upsert", range(2, 120, 9), 4)
    _call(spark, base, "run_clean", "retain_commits => 3")  # R is the third commit from the end
    [clean] = [p for p in (base / ".hoodie").iterdir() if p.name.endswith(".clean")]
    assert avro_record(clean)["earliestCommitToRetain"] == replacecommit
    replaced = _replaced_files(base, replacecommit)
    assert replaced and all((base / f).exists() for f in replaced)  # that clean kept them
    for batch in (5, 6):
        write("upsert", range(batch, 120, 11), batch)
    clean_argv = lambda table: ["clean", "--base-path", str(table), "--timezone", "UTC", "--force",  # noqa: E731
                                "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]  # fmt: skip
    run_killed_at(r"^\.hoodie/\d{17}\.clean\.requested$", clean_argv(base), tmp_path / "killed.log")
    plan_file = max((base / ".hoodie").glob("*.clean.requested"))  # Hudi's completed clean's is older
    assert not plan_file.with_name(plan_file.name.replace(".requested", "")).exists()
    plan = avro_record(plan_file)
    assert plan["earliestInstantToRetain"]["timestamp"] > replacecommit
    planned = {f["filePath"] for fs in plan["filePathsToBeDeletedPerPartition"].values() for f in fs}
    assert {str(base / f) for f in replaced} <= {p.removeprefix("file:") for p in planned}
    rows = _keys_once(spark, base)

    def archive_both(source: Path, label: str) -> tuple[Path, set[tuple[str, Action]]]:
        theirs, ours = twin_copies(source, tmp_path / label)
        before = active_instants(ours)
        _call(spark, theirs, "archive_commits", EDGE_ARCHIVE_ARGUMENTS)
        assert main(["archive", "--base-path", str(ours), "--timezone", "UTC", *EDGE_ARCHIVE_SETTINGS]) == 0
        assert timeline_files(ours) == timeline_files(theirs)
        return ours, before - active_instants(ours)

    ours, archived = archive_both(base, "pending-clean")
    assert archived and max(t for t, _ in archived) < replacecommit  # something went, R stayed
    assert f"{replacecommit}.replacecommit" in timeline_files(ours)
    assert _keys_once(spark, ours) == rows
    # The pending clean completes (on the table its plan names; it deletes the replaced files); now
    # the window passes R.
    assert main(clean_argv(base)) == 0
    assert not any((base / f).exists() for f in replaced)
    assert _keys_once(spark, base) == rows
    ours, archived = archive_both(base, "clean-done")
    assert replacecommit in {t for t, _ in archived}
    assert _keys_once(spark, ours) == rows
