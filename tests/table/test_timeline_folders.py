"""The folders `hoodie.properties` names for the timeline: inside `.hoodie`, and there. A stored value
could otherwise send the service's reads and writes (plans, archived instants) out of the table, or
(a folder that does not exist) show a table with commits as one without any."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.table import HudiTable
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts


def _with(base: Path, key: str, value: str) -> None:
    path = base / ".hoodie" / "hoodie.properties"
    lines = [line for line in path.read_text().splitlines() if not line.startswith(f"{key}=")]
    path.write_text("\n".join([*lines, f"{key}={value}"]) + "\n")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hoodie.timeline.path", "../../elsewhere"),
        ("hoodie.timeline.path", "/tmp/timeline"),
        ("hoodie.timeline.path", "s3://bucket/t"),
        ("hoodie.timeline.history.path", ".."),
        ("hoodie.timeline.history.path", "a//b"),
        ("hoodie.archivelog.folder", "../archived"),
    ],
)
def test_a_timeline_folder_outside_the_metafolder_is_refused(tmp_path: Path, key: str, value: str) -> None:
    FixtureTable(tmp_path, table_version=9)
    _with(tmp_path, key, value)
    with pytest.raises(CorruptTableError, match=f"hoodie.properties: {key}="):
        HudiTable.open(str(tmp_path))


def test_nested_folders_and_an_empty_archive_folder_are_folders_inside(tmp_path: Path) -> None:
    FixtureTable(tmp_path)
    _with(tmp_path, "hoodie.archivelog.folder", "")  # very old tables: archived into .hoodie itself
    assert HudiTable.open(str(tmp_path)).config.archive_folder == ""
    _with(tmp_path, "hoodie.archivelog.folder", "archive/v1")
    assert HudiTable.open(str(tmp_path)).config.archive_folder == "archive/v1"


def test_a_timeline_folder_that_does_not_exist_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    t = FixtureTable(tmp_path, table_version=9)
    t.commit(ts(1), [FileSpec("a", fid(1))], completion_time=ts(2))
    assert len(HudiTable.open(str(tmp_path)).load_timeline()) == 1
    _with(tmp_path, "hoodie.timeline.path", "time")  # hoodie.properties cut short mid-line
    with pytest.raises(CorruptTableError, match=r"\.hoodie/time: the timeline folder .* does not exist"):
        HudiTable.open(str(tmp_path)).load_timeline()


def test_an_empty_timeline_folder_is_an_empty_timeline(tmp_path: Path) -> None:
    FixtureTable(tmp_path, table_version=9)
    (tmp_path / ".hoodie" / "timeline").mkdir(exist_ok=True)
    assert len(HudiTable.open(str(tmp_path)).load_timeline()) == 0
