"""What the archival differential tests share: the settings they compare at, the instants of a table's
active timeline, our window for those settings (`service.archival.archival_window`), and the stored
Avro records the tests read to set a scene up (with fastavro, not the project's codecs)."""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import fastavro

from service.archival import archival_window
from service.config.hoodie import HoodieConfig
from service.table.instant import Action
from service.table.table import HudiTable
from strategies.archival import ArchivalWindow
from tests.support import hudi_tables as ht

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.support.hudi_jvm import HudiJvm

H = TypeVar("H")

# (hoodie.keep.min.commits, hoodie.keep.max.commits, the cleaner's commits retained): a small window,
# one the cleaner's retention widens, and one between.
SETTINGS = [(2, 3, 1), (3, 5, 8), (4, 6, 2)]


class LazyHistories(Generic[H]):
    """Each table type's history, built on first use: CI uses one table type per Hudi version, the
    other runs with the long variants."""

    def __init__(self, build: Callable[[str], H]) -> None:
        self._build = build
        self._built: dict[str, H] = {}

    def __getitem__(self, table_type: str) -> H:
        if table_type not in self._built:
            self._built[table_type] = self._build(table_type)
        return self._built[table_type]


def active_instants(base: Path) -> set[tuple[str, Action]]:
    """(time, comparable action) of every instant on the active timeline."""
    return {(i.timestamp, i.action.comparable) for i in HudiTable.open(str(base)).load_timeline()}


def our_window(
    base: Path, low: int, high: int, retained: int
) -> tuple[set[tuple[str, Action]], ArchivalWindow]:
    """Our window at these settings (Hudi's defaults otherwise, as `archive_commits` runs), and its
    instants as `active_instants` names them."""
    config = HoodieConfig.from_mapping(
        {
            "hoodie.keep.min.commits": low,
            "hoodie.keep.max.commits": high,
            "hoodie.cleaner.commits.retained": retained,
        },
        base.name,
    )
    window = archival_window(HudiTable.open(str(base)), config, UTC)
    return {(i.timestamp, i.action.comparable) for i in window.instants}, window


def twin_copies(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two identical copies of the table at `source`: Hudi's and ours."""
    theirs, ours = tmp_path / "hudi", tmp_path / "ours"
    shutil.copytree(source, theirs, symlinks=True)
    shutil.copytree(source, ours, symlinks=True)
    return theirs, ours


def assert_window_is_what_hudi_archives(
    source: Path,
    tmp_path: Path,
    low: int,
    high: int,
    retained: int,
    hudi_archive: Callable[[Path, str], object],
) -> None:
    """On twin copies of `source`, Hudi's `archive_commits` (`hudi_archive(copy, arguments)`) moves off
    the active timeline exactly the instants of our window, each once; the smallest setting archives
    something (two empty sets would be equal)."""
    theirs, ours = twin_copies(source, tmp_path)
    before = active_instants(theirs)
    hudi_archive(theirs, f"min_commits => {low}, max_commits => {high}, retain_commits => {retained}")
    hudi_archived = before - active_instants(theirs)
    ours_archived, window = our_window(ours, low, high, retained)
    assert ours_archived == hudi_archived, (window.stops, sorted(before))
    assert len(window.instants) == len(ours_archived)  # each instant once
    if (low, high) == SETTINGS[0][:2]:
        assert hudi_archived, "the smallest window archives something"


def timeline_files(base: Path) -> list[str]:
    """The active timeline's files (`.hoodie/` on layout 1, `.hoodie/timeline/` on layout 2), Hadoop's
    checksum files (`.<name>.crc`) among them: an archived instant's go with it."""
    folder = base / ".hoodie" / "timeline"
    folder = folder if folder.is_dir() else folder.parent
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.lstrip(".")[:1].isdigit())


ArchivedCommits = Callable[[Path], list[dict[str, Any]]]
_ALL_TIME = "limit => 1000, start_ts => '00000000000000000', end_ts => '99999999999999999'"


def archived_commits(spark: SparkSession, base: Path) -> list[dict[str, Any]]:
    """Hudi 0.15's `show_archived_commits` of a table over all time (explicit bounds: its default window
    is the last ten days but one)."""
    with ht.registered_table(spark, base) as name:
        call = f"CALL show_archived_commits(table => '{name}', {_ALL_TIME})"
        return [r.asDict() for r in spark.sql(call).collect()]


def archived_commits_1x(jvm: HudiJvm, base: Path) -> list[dict[str, Any]]:
    """Hudi 1.x's `show_archived_commits` of a table over all time, registered under a name of its own
    (no archived timeline cached)."""
    name = f"archived_{next(_names)}"
    jvm.sql(f"create table {name} using hudi location '{base}'")
    try:
        return jvm.sql(f"call show_archived_commits(table => '{name}', {_ALL_TIME})")
    finally:
        jvm.sql(f"drop table {name}")


_names = itertools.count()


def assert_hudi_reads_our_archive_as_its_own(
    show_archived: ArchivedCommits, theirs: Path, ours: Path, tmp_path: Path
) -> list[dict[str, Any]]:
    """Hudi's `show_archived_commits` (`show_archived(table)`) returns the same commits, each once, from
    our archive as from its own (read from copies its JVM never cached); returns them."""
    fresh_theirs, fresh_ours = tmp_path / "fresh-hudi", tmp_path / "fresh-ours"
    shutil.copytree(theirs, fresh_theirs, symlinks=True)
    shutil.copytree(ours, fresh_ours, symlinks=True)
    our_view = show_archived(fresh_ours)
    assert our_view and our_view == show_archived(fresh_theirs)
    assert len({r["commit_time"] for r in our_view}) == len(our_view)  # each archived commit once
    return our_view


def avro_record(path: Path) -> dict[str, Any]:
    """The one record of an Avro instant file (a clean plan or metadata, a 1.x commit's metadata)."""
    with path.open("rb") as f:
        [record] = list(fastavro.reader(f))
    assert isinstance(record, dict), path
    return record


# The clean edge (`test_no_replaced_file_group_is_read_again_when_the_clean_edge_meets_the_window` of
# both versions' modules): archival as small as it goes.
EDGE_ARCHIVE_ARGUMENTS = "min_commits => 1, max_commits => 2, retain_commits => 1"
EDGE_ARCHIVE_SETTINGS = [
    *("--hoodie-conf", "hoodie.keep.min.commits=1"),
    *("--hoodie-conf", "hoodie.keep.max.commits=2"),
    *("--hoodie-conf", "hoodie.cleaner.commits.retained=1"),
]
