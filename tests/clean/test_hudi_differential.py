"""Differential tests against real Hudi 0.15: the same history cleaned by Hudi's cleaner and by ours.

One history is written once per session with Hudi's Spark writer (inserts, updates, an
insert_overwrite, a clustering, a savepoint, a pending clustering) and copied per case. Hudi cleans
one copy (`CALL run_clean`), we clean the other: the deleted files must be identical, and Hudi's
reader must return the same rows from both copies (and from the uncleaned history) for the latest
snapshot, every retained commit (time travel) and the savepoint. KEEP_LATEST_BY_HOURS needs commits
hours apart, so it is compared on a fixture table whose instants Hudi's cleaner also reads.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from service.cleaning import Cleaner, CleanOptions, CleanRunResult
from service.cli import main
from service.table.instant import Action, State
from service.table.table import HudiTable
from service.table.timeline import format_instant_time
from tests.clean.helpers import make_cleaner
from tests.support import hudi_tables as ht
from tests.support.fixtures import FileSpec, FixtureTable
from tests.support.histories import HudiHistory
from tests.support.hudi_tables import data_files as _data_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.hudi, pytest.mark.spark, pytest.mark.slow]

NAME = "clean_history"
PARTITION_FIELDS = (ht.PARTITION_FIELD,)
NO_MDT = "hoodie.metadata.enable=false"
RETAINED_KEY = {
    "KEEP_LATEST_COMMITS": ("retain_commits", "hoodie.cleaner.commits.retained"),
    "KEEP_LATEST_FILE_VERSIONS": ("file_versions_retained", "hoodie.cleaner.fileversions.retained"),
    "KEEP_LATEST_BY_HOURS": ("hours_retained", "hoodie.cleaner.hours.retained"),
}


@dataclass
class CleanHistory:
    base: Path
    savepoint: str  # the savepointed commit
    pending_clustering: str
    commits: tuple[str, ...]  # completed commit/replacecommit instants, ascending
    truth: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # rows as of an instant, uncleaned


def _write(
    spark: SparkSession, base: Path, op: str, ids: Any, batch: int, extra: dict[str, str] | None = None
) -> str:
    df = ht.generate(spark, ids, batch)
    return ht.write(spark, base, df, op, NAME, ht.RECORD_KEY, ht.PRECOMBINE, PARTITION_FIELDS, extra)


def _call(spark: SparkSession, base: Path, procedure: str, args: str) -> list[Any]:
    with ht.registered_table(spark, base) as name:
        return spark.sql(f"CALL {procedure}(table => '{name}', {args})").collect()


@pytest.fixture(scope="session")
def clean_history(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> CleanHistory:
    base = tmp_path_factory.mktemp("clean-history") / NAME
    _write(spark, base, "insert", range(0, 60), 0)
    _write(spark, base, "insert", range(60, 120), 1)
    _write(spark, base, "upsert", range(0, 30), 2)
    _write(spark, base, "upsert", range(60, 90), 3)
    _write(
        spark, base, "insert_overwrite", [i for i in range(1000, 1030) if ht.PARTITIONS[i % 3] == "asia"], 4
    )
    _write(spark, base, "upsert", range(0, 60, 3), 5)
    options = f"options => '{NO_MDT},hoodie.clustering.plan.strategy.max.num.groups=5'"
    [clustered] = _call(spark, base, "run_clustering", f"op => 'scheduleAndExecute', {options}")
    assert clustered["state"] == "COMPLETED"
    savepoint = _write(spark, base, "upsert", range(1, 60, 4), 7)
    assert _call(spark, base, "create_savepoint", f"commit_time => '{savepoint}'")[0][0] is True
    _write(spark, base, "upsert", range(2, 120, 5), 9)
    _write(spark, base, "upsert", range(60, 120, 7), 10)
    [pending] = _call(spark, base, "run_clustering", f"op => 'schedule', {options}")
    assert pending["state"] == "REQUESTED"
    _write(spark, base, "insert", range(2000, 2030), 12)  # new file groups: allowed beside the plan
    return CleanHistory(base, savepoint, pending["timestamp"], tuple(ht.completed_instants(base)))


def _copy(history: CleanHistory, dest: Path) -> Path:
    shutil.copytree(history.base, dest, symlinks=True)
    return dest


def _read(spark: SparkSession, base: Path, as_of: str | None = None) -> list[dict[str, Any]]:
    reader = spark.read.format("hudi").option("hoodie.metadata.enable", "false")
    if as_of is not None:
        reader = reader.option("as.of.instant", as_of)
    return ht.normalise_rows(row.asDict() for row in reader.load(str(base)).collect())


def _truth(spark: SparkSession, history: CleanHistory, as_of: str) -> list[dict[str, Any]]:
    if as_of not in history.truth:
        history.truth[as_of] = _read(spark, history.base, as_of)
    return history.truth[as_of]


def _hudi_clean(spark: SparkSession, base: Path, policy: str, retained: int, extra: str = "") -> Any:
    """`CALL run_clean`; `extra` appends procedure arguments (", name => value")."""
    args = f"clean_policy => '{policy}', {RETAINED_KEY[policy][0]} => {retained}, options => '{NO_MDT}'"
    [row] = _call(spark, base, "run_clean", args + extra)
    return row


def _our_cleaner(
    base: Path, policy: str, retained: int, extra: Mapping[str, object] | None = None
) -> Cleaner:
    props = {"hoodie.cleaner.policy": policy, RETAINED_KEY[policy][1]: retained, **(extra or {})}
    return make_cleaner(base, props, CleanOptions(), now=None)  # the JVM writing these tables runs in UTC


def _our_clean(
    base: Path, policy: str, retained: int, extra: Mapping[str, object] | None = None
) -> CleanRunResult:
    return _our_cleaner(base, policy, retained, extra).run()


CONFIGS = [
    ("KEEP_LATEST_COMMITS", 1),  # the ECTR is held back by the pending clustering
    ("KEEP_LATEST_COMMITS", 2),
    ("KEEP_LATEST_COMMITS", 4),
    ("KEEP_LATEST_FILE_VERSIONS", 1),
    ("KEEP_LATEST_FILE_VERSIONS", 2),
]


@pytest.mark.parametrize(("policy", "retained"), CONFIGS)
def test_clean_deletes_what_hudi_deletes_and_hudi_reads_agree(
    spark: SparkSession, clean_history: CleanHistory, tmp_path: Path, policy: str, retained: int
) -> None:
    hudi_copy = _copy(clean_history, tmp_path / "hudi")
    our_copy = _copy(clean_history, tmp_path / "ours")
    before = _data_files(clean_history.base)

    hudi_row = _hudi_clean(spark, hudi_copy, policy, retained)
    [ours] = _our_clean(our_copy, policy, retained).cleans

    hudi_deleted = before - _data_files(hudi_copy)
    our_deleted = before - _data_files(our_copy)
    assert hudi_deleted and our_deleted == hudi_deleted
    assert ours.files_deleted == hudi_row["total_files_deleted"] == len(hudi_deleted)
    assert ours.earliest_commit_to_retain == hudi_row["earliest_commit_to_retain"]

    # Hudi refuses time travel before the last clean's ECTR; the savepoint is readable when it is not.
    ectr = ours.earliest_commit_to_retain
    retained_commits = [c for c in clean_history.commits if ectr and c >= ectr]
    as_of = sorted({clean_history.commits[-1], *retained_commits})
    if clean_history.savepoint >= ectr:
        as_of.append(clean_history.savepoint)
    for instant in as_of:
        truth = _truth(spark, clean_history, instant)
        assert truth, f"no rows as of {instant}"
        assert _read(spark, hudi_copy, instant) == truth, f"Hudi-cleaned copy as of {instant}"
        assert _read(spark, our_copy, instant) == truth, f"our cleaned copy as of {instant}"
    assert _read(spark, our_copy) == _truth(spark, clean_history, clean_history.commits[-1])


def test_hudi_finishes_our_pending_plan_and_we_finish_hudis(
    spark: SparkSession, clean_history: CleanHistory, tmp_path: Path
) -> None:
    before = _data_files(clean_history.base)
    # Ours, left requested (as after a crash right after scheduling): Hudi's cleaner runs it first.
    ours = _copy(clean_history, tmp_path / "ours")
    cleaner = _our_cleaner(ours, "KEEP_LATEST_COMMITS", 2)
    _, scheduled = cleaner._schedule()
    assert scheduled is not None
    instant, plan = scheduled.instant, scheduled.plan
    _hudi_clean(spark, ours, "KEEP_LATEST_COMMITS", 2)
    assert (ours / ".hoodie" / f"{instant.timestamp}.clean").exists()
    assert before - _data_files(ours) == {t.path for t in plan.all_targets}

    # Hudi's, left requested: we finish it and delete exactly what it lists.
    hudi = _copy(clean_history, tmp_path / "hudi")
    row = _hudi_clean(spark, hudi, "KEEP_LATEST_FILE_VERSIONS", 1)
    java_deleted = before - _data_files(hudi)
    clean_time = row["start_clean_time"]
    for name in (f"{clean_time}.clean", f"{clean_time}.clean.inflight"):
        (hudi / ".hoodie" / name).unlink()
        (hudi / ".hoodie" / f".{name}.crc").unlink(missing_ok=True)
    for rel in java_deleted:
        shutil.copy2(clean_history.base / rel, hudi / rel)
    result = _our_clean(hudi, "KEEP_LATEST_FILE_VERSIONS", 1, {"hoodie.clean.max.commits": 100})
    [finished] = result.cleans
    assert finished.resumed and finished.instant_time == clean_time
    assert finished.files_deleted == len(java_deleted)
    assert before - _data_files(hudi) == java_deleted


def test_hudi_writer_keeps_writing_after_our_cleans(
    spark: SparkSession, clean_history: CleanHistory, tmp_path: Path
) -> None:
    base = _copy(clean_history, tmp_path / "ours")
    rs_before = ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist())
    always = {"hoodie.clean.max.commits": 0}
    for policy, retained in (
        ("KEEP_LATEST_COMMITS", 4),
        ("KEEP_LATEST_COMMITS", 2),
        ("KEEP_LATEST_FILE_VERSIONS", 1),
    ):
        assert _our_clean(base, policy, retained, always).files_deleted > 0
    assert len(ht.instants_with_action(base, "clean")) == 3
    # hudi-rs reads the same latest snapshot after our cleans.
    assert ht.normalise_rows(ht.hudi_rs_snapshot(base).to_pylist()) == rs_before

    # Hudi's writer keeps writing; its automatic clean reads our clean metadata (trigger, incremental scan).
    auto_clean = {"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2"}
    _write(spark, base, "upsert", range(2000, 2030), 20, auto_clean)
    expected = {r["id"]: r for r in _truth(spark, clean_history, clean_history.commits[-1])}
    expected.update({i: ht.expected_row(i, 20) for i in range(2000, 2030)})
    assert _read(spark, base) == [expected[i] for i in sorted(expected)]


def test_hudi_archiver_archives_our_clean(spark: SparkSession, history_many_commits: HudiHistory) -> None:
    """Four of our cleans between Hudi commits; Hudi's archiver (asked to keep 1-2 instants, which it
    raises to 2-3 for 1 retained commit) moves the oldest two into the archived timeline, converting
    our HoodieCleanMetadata on the way, and the table still reads right."""
    history = history_many_commits
    base = history.base_path
    latest = dict(history.latest_batch)
    cleans = []
    for batch in (7, 8, 9, 10):
        cleans.append(_our_clean(base, "KEEP_LATEST_COMMITS", 1).cleans[0].instant_time)
        archive = {
            "hoodie.archive.automatic": "true",
            "hoodie.keep.min.commits": "1",
            "hoodie.keep.max.commits": "2",
            "hoodie.cleaner.commits.retained": "1",
        }
        ids = sorted(latest)  # every file group gets a new version, so every clean deletes something
        history.write(spark, ht.generate(spark, ids, batch), "upsert", archive)
        latest.update(dict.fromkeys(ids, batch))
    assert list((base / ".hoodie" / "archived").glob(".commits_.archive.*"))
    assert ht.instants_with_action(base, "clean") == cleans[2:]  # the first two were archived by Hudi
    assert not (base / ".hoodie" / f"{cleans[0]}.clean.requested").exists()
    assert _read(spark, base) == [ht.expected_row(i, b) for i, b in sorted(latest.items())]


def test_keep_latest_by_hours_matches_hudi_on_fixture_table(spark: SparkSession, tmp_path: Path) -> None:
    t = FixtureTable(tmp_path / "hudi", name="hours_fixture")
    now = datetime.now(UTC)
    files = [FileSpec(p, f"{n}1111111-aaaa-bbbb-cccc-dddddddddddd-0") for n, p in enumerate("abc")]
    # Commits half an hour off the hour, so Hudi's clock and ours (seconds apart) pick the same ECTR.
    for hours_ago in (11, 9, 7, 5, 3, 1):
        t.commit(
            format_instant_time(now - timedelta(hours=hours_ago, minutes=30)), files[: 1 + hours_ago % 3]
        )
    ours = tmp_path / "ours"
    shutil.copytree(t.base, ours)
    before = _data_files(t.base)
    for hours in (8, 4):  # the second clean, with a narrower window, deletes more
        hudi_row = _hudi_clean(spark, t.base, "KEEP_LATEST_BY_HOURS", hours, ", trigger_max_commits => 0")
        result = _our_clean(ours, "KEEP_LATEST_BY_HOURS", hours, {"hoodie.clean.max.commits": 0})
        assert before - _data_files(ours) == before - _data_files(t.base)
        assert result.cleans[-1].earliest_commit_to_retain == hudi_row["earliest_commit_to_retain"]
    assert before - _data_files(ours)
    timeline = HudiTable.open(str(ours)).load_timeline()
    assert [i.state for i in timeline.by_actions([Action.CLEAN])] == [State.COMPLETED] * 2


def test_an_undone_clean_is_read_and_cleaned_by_hudi_as_if_it_never_ran(
    spark: SparkSession, clean_history: CleanHistory, tmp_path: Path
) -> None:
    """Our clean with the trash on, then `clean --undo`: Hudi, which refused time travel to the
    snapshots the clean released (before its earliest commit to retain), reads every commit as the
    uncleaned history does, and its own clean then deletes exactly what it deletes on an untouched copy."""
    ours = _copy(clean_history, tmp_path / "ours")
    untouched = _copy(clean_history, tmp_path / "untouched")
    before = _digests(ours)
    props = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS", "hoodie.cleaner.commits.retained": 2}
    keep = CleanOptions(trash_retention=timedelta(hours=24))
    [clean] = make_cleaner(ours, props, keep, now=None).run().cleans
    ectr = clean.earliest_commit_to_retain
    released = [c for c in clean_history.commits if c < ectr]
    assert released and clean.files_deleted and set(_digests(ours)) < set(before)
    with pytest.raises(Exception, match="Cleaner cleaned up the timestamp of interest"):
        _read(spark, ours, released[-1])

    assert main(["clean", "--base-path", str(ours), "--timezone", "UTC", "--undo", clean.instant_time]) == 0
    assert _digests(ours) == before  # byte for byte
    assert not [p for p in (ours / ".hoodie").iterdir() if p.name.startswith(clean.instant_time)]
    for instant in [*clean_history.commits, clean_history.savepoint]:
        assert _read(spark, ours, instant) == _truth(spark, clean_history, instant), f"as of {instant}"
    theirs = _hudi_clean(spark, untouched, "KEEP_LATEST_COMMITS", 2)
    again = _hudi_clean(spark, ours, "KEEP_LATEST_COMMITS", 2)
    assert again["earliest_commit_to_retain"] == theirs["earliest_commit_to_retain"] == ectr
    assert set(before) - set(_digests(untouched)) and _digests(ours) == _digests(untouched)


def _digests(base: Path) -> dict[str, str]:
    """Data files (partitions only) -> SHA-256."""
    return {
        str(p.relative_to(base)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in base.rglob("*.parquet")
        if ".hoodie" not in p.relative_to(base).parts
    }


def test_an_undo_is_refused_once_the_metadata_table_compacted_the_clean_in(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The metadata table compacts at every delta commit here: after Hudi's next write its base file
    holds our clean's deletions for good, and the undo is refused, changing nothing."""
    base = tmp_path / "compacting"
    every = {"hoodie.metadata.enable": "true", "hoodie.metadata.compact.max.delta.commits": "1",
             "hoodie.table.services.enabled": "false"}  # fmt: skip
    for batch in range(3):
        ht.write(spark, base, ht.generate(spark, range(0, 30), batch), "upsert", "compacting",
                 partition_fields=PARTITION_FIELDS, extra_opts=every)  # fmt: skip
    props = {"hoodie.cleaner.commits.retained": 1}
    [clean] = (
        make_cleaner(base, props, CleanOptions(trash_retention=timedelta(hours=24)), now=None).run().cleans
    )
    ht.write(spark, base, ht.generate(spark, range(0, 30, 7), 3), "upsert", "compacting",
             partition_fields=PARTITION_FIELDS, extra_opts=every)  # fmt: skip
    before, timeline = _digests(base), sorted(p.name for p in (base / ".hoodie").iterdir())
    assert main(["clean", "--base-path", str(base), "--timezone", "UTC", "--undo", clean.instant_time]) == 1
    assert "the metadata table compacted" in caplog.text and "can no longer be undone" in caplog.text
    assert _digests(base) == before and sorted(p.name for p in (base / ".hoodie").iterdir()) == timeline
