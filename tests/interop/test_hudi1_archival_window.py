"""The archival window against Hudi 1.x's own archiver (`TimelineArchiverV2`, table versions 8 and 9).

One history per table type, written by Hudi 1.0.2 or 1.1.1 with its table services handed over
(`hoodie.table.services.enabled=false`, nothing archives) and the metadata table on: inserts and
upserts, Hudi's cleans, an insert overwrite, a clustering (copy-on-write) or compaction
(merge-on-read), a savepoint, more upserts and a clean, then a clustering or compaction left pending.
On identical copies Hudi's `archive_commits` archives and our window is computed for the same
settings: the instants Hudi moved to its LSM history are exactly the window's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from service.cli import main
from service.table.instant import Action
from service.table.lsm_writer import (
    COMPACTION_BATCH_SIZE,
    ArchivedAction,
    compact_and_clean,
    write_archived_actions,
)
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.support.archival import (
    EDGE_ARCHIVE_ARGUMENTS,
    EDGE_ARCHIVE_SETTINGS,
    SETTINGS,
    LazyHistories,
    active_instants,
    archived_commits_1x,
    assert_hudi_reads_our_archive_as_its_own,
    assert_window_is_what_hudi_archives,
    avro_record,
    timeline_files,
    twin_copies,
)
from tests.support.crash_at import run_killed_at
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


def _build(jvm: HudiJvm, base: Path, table_type: str) -> Path:
    name = f"archival_{jvm.table_version}_{table_type.lower()}"
    # The metadata table's `files` partition only: Hudi 1.0.2's writer intermittently failed reading its
    # own column-stats log blocks by key prefix in an executor (a ClassCastException between two class
    # loaders of HoodieDeleteRecord), building this history; archival only needs the metadata table and
    # its compactions.
    opts = {
        **writer_options(name, table_type, True),
        "hoodie.table.services.enabled": "false",
        # Reach the metadata table's own archival, which the writer still runs (its bounds follow these).
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.metadata.index.column.stats.enable": "false",
        "hoodie.metadata.index.partition.stats.enable": "false",
    }

    def write(ids: Any, batch: int, operation: str = "upsert") -> None:
        jvm.write(
            base, rows(list(ids), batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": operation}
        )

    write(range(0, 20), 0, "insert")
    write(range(20, 40), 1, "insert")
    for batch in range(2, 6):
        write(range(batch, 40, 3 + batch), batch)
    jvm.sql(f"create table {name} using hudi location '{base}'")
    jvm.sql(f"call run_clean(table => '{name}', retain_commits => 3)")
    write([i for i in range(100, 110) if i % 2 == 0], 6, "insert_overwrite")
    write(range(0, 20, 2), 7)
    if table_type == "MERGE_ON_READ":
        jvm.sql(f"call run_compaction(op => 'scheduleAndExecute', table => '{name}')")
    else:
        jvm.sql(f"call run_clustering(table => '{name}', op => 'scheduleAndExecute')")
    [latest] = jvm.sql(f"call show_commits(table => '{name}', limit => 1)")
    savepoint = latest["commit_time"]
    jvm.sql(f"call create_savepoint(table => '{name}', commit_time => '{savepoint}')")
    for batch in range(8, 14):
        write(range(batch, 40, batch), batch)
    jvm.sql(f"call run_clean(table => '{name}', retain_commits => 2)")
    write(range(10, 20), 14)
    if table_type == "MERGE_ON_READ":
        jvm.sql(f"call run_compaction(op => 'schedule', table => '{name}')")
    else:
        jvm.sql(f"call run_clustering(table => '{name}', op => 'schedule')")
    write(range(200, 205), 15, "insert")  # new file groups beside the pending plan
    jvm.sql(f"drop table {name}")
    return base


@pytest.fixture(scope="module")
def histories(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> LazyHistories[Path]:
    root = tmp_path_factory.mktemp(f"archival-{hudi1.version}")
    return LazyHistories(lambda table_type: _build(hudi1, root / table_type.lower(), table_type))


# CI: merge-on-read on 1.0.2, copy-on-write on 1.1.1 (one history each); all with HTS_LONG_TESTS.
@pytest.mark.long(hudi1="1.0.2", table_type="COPY_ON_WRITE")
@pytest.mark.long(hudi1="1.1.1", table_type="MERGE_ON_READ")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(("low", "high", "retained"), SETTINGS)
def test_the_window_is_what_hudi_1x_archives(
    hudi1: HudiJvm,
    histories: LazyHistories[Path],
    tmp_path: Path,
    table_type: str,
    low: int,
    high: int,
    retained: int,
) -> None:
    assert_window_is_what_hudi_archives(
        histories[table_type],
        tmp_path,
        low,
        high,
        retained,
        lambda copy, arguments: hudi1.sql(f"call archive_commits(path => '{copy}', {arguments})"),
    )


@pytest.mark.long(hudi1="1.0.2", table_type="COPY_ON_WRITE")
@pytest.mark.long(hudi1="1.1.1", table_type="MERGE_ON_READ")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_our_archival_is_read_by_hudi_as_its_own(
    hudi1: HudiJvm,
    histories: LazyHistories[Path],
    tmp_path: Path,
    table_type: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Our `archive` and Hudi's `archive_commits` on identical copies leave the same active timeline;
    Hudi's archived-timeline reader returns the same commits from our LSM history as from its own;
    Hudi and hudi-rs read the same rows; Hudi's writer upserts exactly once afterwards, and Hudi's own
    next archival continues from ours."""
    theirs, ours = twin_copies(histories[table_type], tmp_path)
    rows_before = hudi_rows(hudi1, ours, metadata=True)
    hudi1.sql(
        f"call archive_commits(path => '{theirs}', min_commits => 2, max_commits => 3, retain_commits => 1)"
    )
    capsys.readouterr()
    settings = ["hoodie.keep.min.commits=2", "hoodie.keep.max.commits=3", "hoodie.cleaner.commits.retained=1"]
    argv = ["archive", "--base-path", str(ours), "--timezone", "UTC", "--json"]
    assert main([*argv, *(a for s in settings for a in ("--hoodie-conf", s))]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["instants"] and reply["data_file"]
    assert timeline_files(ours) == timeline_files(theirs)
    # Hudi reads its archived timeline from a copy it never cached.
    assert_hudi_reads_our_archive_as_its_own(lambda t: archived_commits_1x(hudi1, t), theirs, ours, tmp_path)
    assert hudi_rows(hudi1, ours, metadata=True) == rows_before == hudi_rows(hudi1, ours, metadata=False)
    assert hudi_rs_rows(ours) == rows_before
    # Hudi's writer goes on (new keys: the pending clustering refuses updates of its file groups); its
    # next archival (smaller still) continues from our history.
    opts = {
        **writer_options(HudiTable.open(str(ours)).name, table_type, True),
        "hoodie.table.services.enabled": "false",
        "hoodie.datasource.write.operation": "insert",
    }
    hudi1.write(ours, rows([300, 301], 50), SCHEMA, opts)
    after = hudi_rows(hudi1, ours, metadata=True)
    assert after == sorted([*rows_before, (300, "americas", 50, "v50"), (301, "asia", 50, "v50")])
    before_second = active_instants(ours)
    hudi1.sql(
        f"call archive_commits(path => '{ours}', min_commits => 1, max_commits => 2, retain_commits => 1)"
    )
    assert active_instants(ours) <= before_second


_SETTINGS_ARGS = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
                  "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]  # fmt: skip


@pytest.mark.long(hudi1="1.0.2")
def test_a_writer_that_handed_its_services_over_still_compacts_and_archives_its_metadata_table(
    hudi1: HudiJvm, histories: LazyHistories[Path]
) -> None:
    """What stays inside Hudi 1.x's writer commits with `hoodie.table.services.enabled=false` (the
    README's hand-over): nothing goes to its data table's history and the only cleans are the
    history's two `run_clean` calls, but its metadata table is compacted and archived (the metadata
    table's archival never passes the data table's first active instant, so it advances as the data
    table's archival does)."""
    table_type = "COPY_ON_WRITE" if hudi1.version == "1.1.1" else "MERGE_ON_READ"
    timeline = histories[table_type] / ".hoodie" / "timeline"
    assert not list((timeline / "history").glob("*.parquet"))
    assert len([p for p in timeline.iterdir() if p.name.endswith(".clean")]) <= 2  # `run_clean`'s at most
    mdt = histories[table_type] / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    assert [p for p in mdt.iterdir() if p.name.endswith(".commit")], "the writer compacted its metadata table"
    assert list((mdt / "history").glob("*.parquet")), "and archived it"


@pytest.mark.long(hudi1="1.0.2")
def test_hudi_reads_our_history_after_its_layers_are_merged(
    hudi1: HudiJvm, histories: LazyHistories[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our archive written as one layer-0 file per archived action (what as many runs leave), then
    merged by our `compact_and_clean`: Hudi's `show_archived_commits` returns the same commits as
    from Hudi's own history, reading the merged layer-1 file and the manifests the merge wrote."""
    table_type = "COPY_ON_WRITE" if hudi1.version == "1.1.1" else "MERGE_ON_READ"
    theirs, ours = twin_copies(histories[table_type], tmp_path)
    hudi1.sql(
        f"call archive_commits(path => '{theirs}', min_commits => 2, max_commits => 3, retain_commits => 1)"
    )
    assert main(["archive", "--base-path", str(ours), "--timezone", "UTC", *_SETTINGS_ARGS]) == 0
    history = ours / ".hoodie" / "timeline" / "history"
    [data_file] = history.glob("*.parquet")
    records = pq.read_table(data_file).to_pylist()
    assert len(records) >= 5
    for path in history.iterdir():
        path.unlink()
    storage = Storage.for_base_uri(str(ours))
    rel = ".hoodie/timeline/history"
    for r in records:
        action = ArchivedAction(r["instantTime"], r["completionTime"], r["action"], r["metadata"], r["plan"])
        write_archived_actions(storage, rel, [action])
    # A batch of them all (Hudi's default is ten; the history archives fewer actions).
    [merged] = compact_and_clean(storage, rel, batch=min(len(records), COMPACTION_BATCH_SIZE))
    assert merged.endswith("_1.parquet")
    assert_hudi_reads_our_archive_as_its_own(lambda t: archived_commits_1x(hudi1, t), theirs, ours, tmp_path)


def _replaced_files(base: Path, replacecommit: str) -> set[str]:
    """The data files of the file groups Hudi's completed replacecommit names as replaced (its Avro
    metadata, `HoodieReplaceCommitMetadata`)."""
    [completed] = (base / ".hoodie" / "timeline").glob(f"{replacecommit}_*.replacecommit")
    replaced = avro_record(completed)["partitionToReplaceFileIds"]
    groups = {(p, g) for p, ids in replaced.items() for g in ids}
    return {str(f.relative_to(base)) for p, g in groups for f in (base / p).glob(f"{g}_*.parquet")}


def _keys_once(jvm: HudiJvm, base: Path) -> list[tuple[Any, ...]]:
    """Hudi's snapshot rows (through the metadata table and without it) and hudi-rs's, all equal, every
    record key once: a replaced file group read again would repeat its keys."""
    read = hudi_rows(jvm, base, metadata=True)
    assert hudi_rows(jvm, base, metadata=False) == read == hudi_rs_rows(base)
    keys = [r[0] for r in read]
    assert len(keys) == len(set(keys)) > 0
    return read


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.long(hudi1=("1.0.2", "1.1.1"))  # CI: 1.2.0
def test_no_replaced_file_group_is_read_again_when_the_clean_edge_meets_the_window(
    hudi1: HudiJvm, tmp_path: Path
) -> None:
    """A clustering's replacecommit R is the last completed clean's earliest commit to retain, so that
    clean kept R's replaced file groups; a later clean is pending (our clean, killed once its plan was
    written), its plan deleting them. Archival, ours as Hudi's, stops before R: archiving it while the
    replaced files exist would show their rows again to every reader. Once that clean completes, the
    next archival passes R, as Hudi's does; each time Hudi (with and without the metadata table) and
    hudi-rs read every key once."""
    base = tmp_path / "edge"
    name = f"edge_{hudi1.table_version}"
    opts = {
        **writer_options(name, "COPY_ON_WRITE", True),
        "hoodie.table.services.enabled": "false",
        # The metadata table compacted often: its latest compaction bounds the data table's archival.
        "hoodie.metadata.compact.max.delta.commits": "2",
    }

    def write(ids: Any, batch: int, operation: str = "upsert") -> None:
        hudi1.write(
            base, rows(list(ids), batch), SCHEMA, {**opts, "hoodie.datasource.write.operation": operation}
        )

    write(range(0, 40), 0, "insert")
    write(range(40, 80), 1, "insert")
    write(range(0, 80, 5), 2)
    hudi1.sql(f"create table {name} using hudi location '{base}'")
    # One partition clustered: the other's older file slices give the clean below files to delete.
    hudi1.sql(
        f"call run_clustering(table => '{name}', op => 'scheduleAndExecute', selected_partitions => 'asia')"
    )
    [(replacecommit, _)] = completed_instants(base, "replacecommit")
    write(range(1, 80, 7), 3)
    write(range(2, 80, 9), 4)
    hudi1.sql(f"call run_clean(table => '{name}', retain_commits => 3)")  # R: third commit from the end
    hudi1.sql(f"drop table {name}")
    timeline = base / ".hoodie" / "timeline"
    [clean] = timeline.glob("*_*.clean")
    assert avro_record(clean)["earliestCommitToRetain"] == replacecommit
    replaced = _replaced_files(base, replacecommit)
    assert replaced and all((base / f).exists() for f in replaced)  # that clean kept them
    for batch in (5, 6):
        write(range(batch, 80, 11), batch)

    def clean_argv(table: Path) -> list[str]:
        return ["clean", "--base-path", str(table), "--timezone", "UTC", "--force",
                "--hoodie-conf", "hoodie.cleaner.commits.retained=1"]  # fmt: skip

    run_killed_at(r"^\.hoodie/timeline/\d{17}\.clean\.requested$", clean_argv(base), tmp_path / "killed.log")
    plan_file = max(timeline.glob("*.clean.requested"))  # Hudi's completed clean's is older
    assert not list(timeline.glob(f"{plan_file.name.split('.')[0]}_*.clean"))
    plan = avro_record(plan_file)
    assert plan["earliestInstantToRetain"]["timestamp"] > replacecommit
    planned = {f["filePath"] for fs in plan["filePathsToBeDeletedPerPartition"].values() for f in fs}
    assert {str(base / f) for f in replaced} <= {p.removeprefix("file:") for p in planned}
    read = _keys_once(hudi1, base)

    def archive_both(source: Path, label: str) -> tuple[Path, set[tuple[str, Action]]]:
        theirs, ours = twin_copies(source, tmp_path / label)
        before = active_instants(ours)
        hudi1.sql(f"call archive_commits(path => '{theirs}', {EDGE_ARCHIVE_ARGUMENTS})")
        assert main(["archive", "--base-path", str(ours), "--timezone", "UTC", *EDGE_ARCHIVE_SETTINGS]) == 0
        assert timeline_files(ours) == timeline_files(theirs)
        return ours, before - active_instants(ours)

    ours, archived = archive_both(base, "pending-clean")
    assert archived and max(t for t, _ in archived) < replacecommit  # something went, R stayed
    assert replacecommit in {t for t, _ in active_instants(ours)}
    assert _keys_once(hudi1, ours) == read
    # The pending clean completes (on the table its plan names; it deletes the replaced files); now
    # the window passes R.
    assert main(clean_argv(base)) == 0
    assert not any((base / f).exists() for f in replaced)
    assert _keys_once(hudi1, base) == read
    ours, archived = archive_both(base, "clean-done")
    assert replacecommit in {t for t, _ in archived}
    assert _keys_once(hudi1, ours) == read


def _latest_manifest_files(base: Path) -> list[str]:
    """The data files the LSM history's latest snapshot lists (`_version_` names the manifest), read
    as JSON, not with the project's reader."""
    history = base / ".hoodie" / "timeline" / "history"
    version = int((history / "_version_").read_text().strip())
    manifest = json.loads((history / f"manifest_{version}").read_text())
    return sorted(f["fileName"] for f in manifest["files"])


@pytest.mark.hudi_1_2_in_ci
@pytest.mark.long(hudi1=("1.0.2", "1.1.1"))  # CI: 1.2.0
def test_hudis_layer_compaction_merges_our_history_files(
    hudi1: HudiJvm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our archival writes a layer-0 file; Hudi's writer, archiving inline with layers merged two at a
    time (`hoodie.timeline.compaction.batch.size=2`), writes its own and merges both into one layer-1
    file (`LSMTimelineWriter.compactAndClean`): the latest snapshot lists that file alone, Hudi's
    `show_archived_commits` returns every archived commit once, and Hudi and hudi-rs read the rows."""
    base = tmp_path / "lsm"
    name = f"lsm_{hudi1.table_version}"
    opts = {**writer_options(name, "COPY_ON_WRITE", False), "hoodie.table.services.enabled": "false",
            "hoodie.datasource.write.operation": "insert"}  # fmt: skip
    for batch in range(8):
        hudi1.write(base, rows(range(batch * 4, batch * 4 + 4), batch), SCHEMA, opts)
    capsys.readouterr()
    settings = ["hoodie.keep.min.commits=4", "hoodie.keep.max.commits=5", "hoodie.cleaner.commits.retained=1"]
    argv = ["archive", "--base-path", str(base), "--timezone", "UTC", "--json"]
    assert main([*argv, *(a for s in settings for a in ("--hoodie-conf", s))]) == 0
    ours = json.loads(capsys.readouterr().out)
    [our_file] = _latest_manifest_files(base)
    assert our_file.endswith("_0.parquet") and len(ours["instants"]) == 4
    archiving = {
        **opts,
        "hoodie.table.services.enabled": "true",
        "hoodie.archive.automatic": "true",
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.timeline.compaction.batch.size": "2",
    }
    hudi1.write(base, rows(range(100, 104), 8), SCHEMA, archiving)
    [merged] = _latest_manifest_files(base)
    assert merged.endswith("_1.parquet") and our_file != merged
    commits = [t for t, _ in completed_instants(base, "commit")]
    assert len(commits) == 2  # Hudi archived three more
    archived = [r["commit_time"] for r in archived_commits_1x(hudi1, base)]
    assert len(archived) == len(set(archived)) == 7
    assert {i["instant"] for i in ours["instants"]} < set(archived)
    assert max(archived) < min(commits)
    read = hudi_rows(hudi1, base)
    assert read == hudi_rs_rows(base) and len(read) == 9 * 4
