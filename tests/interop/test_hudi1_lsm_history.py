"""The archived (LSM) timeline real Hudi 1.0.2 and 1.1.1 write: the completion times the service reads
there are Hudi's, and the file slices it places by them are Hudi's `show_fsview_latest`, including a
log whose deltacommit completed after a later compaction was scheduled and was archived since."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from service.errors import CorruptTableError
from service.table.fs_view import FileSystemView
from service.table.lsm_history import read_archived_instants, read_latest_manifest
from service.table.table import HudiTable
from tests.support.hudi1_histories import (
    ArchivedHistory,
    build_archived_history,
    completed_instants,
    hudi_latest_slices,
    hudi_rows,
    our_latest_slices,
)
from tests.support.hudi_jvm import HudiJvm, HudiJvmError

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]


@pytest.fixture(scope="module")
def archived(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> ArchivedHistory:
    return build_archived_history(hudi1, tmp_path_factory.mktemp(f"tables-{hudi1.version}"))


def test_completion_times_of_archived_instants_are_hudis(hudi1: HudiJvm, archived: ArchivedHistory) -> None:
    table = HudiTable.open(str(archived.history.base))
    assert table.layout.history_dir is not None
    manifest = read_latest_manifest(table.storage, table.layout.history_dir)
    assert len(manifest.files) >= 2 and all(f.layer == 0 for f in manifest.files)

    theirs = hudi1.archived_instants(archived.history.base)
    # What Hudi's archived timeline holds is what its CompletionTimeQueryViewV2 answers.
    assert theirs and all(completion == queried for _, _, completion, queried in theirs)
    ours = read_archived_instants(table.storage, table.layout.history_dir, {t for t, *_ in theirs})
    assert {t: (a.action, a.completion_time) for t, a in ours.items()} == {
        t: (action, completion) for t, action, completion, _ in theirs
    }
    # The case only the history can settle: archived, and completed after the compaction's request.
    active = {requested for requested, _ in completed_instants(archived.history.base, "deltacommit")}
    late = ours[archived.late_deltacommit]
    assert archived.late_deltacommit not in active and archived.compaction in ours
    assert late.action == "deltacommit" and late.completion_time > archived.compaction


def test_file_slices_placed_by_archived_completion_times_are_hudis(
    hudi1: HudiJvm, archived: ArchivedHistory, tmp_path: Path
) -> None:
    history = archived.history
    table = HudiTable.open(str(history.base))
    ours = our_latest_slices(table)
    assert ours == hudi_latest_slices(hudi1, history.table_name)
    # Every group's latest slice is the compaction's, holding the late deltacommit's log, which the
    # compaction did not take (it had not completed when the compaction was scheduled).
    assert ours and all(s.base_instant == archived.compaction for s in ours)
    assert all(any(f"_{archived.late_deltacommit}.log." in n for n in s.log_files) for s in ours)

    # Without the history the view cannot place the archived logs (what used to refuse the table).
    timeline = table.load_timeline()
    listing = table.list_storage_partitions()
    facts = table.facts_reader.read(timeline)
    refused = r"deltacommit \d{17}, archived .*, and no archived \(LSM\) timeline was read"
    with pytest.raises(CorruptTableError, match=refused):
        FileSystemView.build(timeline, listing, facts, table=table.name, logs_by_completion_time=True)

    # While `_version_` is being rewritten, the highest manifest stands in and nothing changes.
    copy = tmp_path / "t"
    shutil.copytree(history.base, copy)
    (copy / ".hoodie" / "timeline" / "history" / "_version_").unlink()
    copied = our_latest_slices(HudiTable.open(str(copy)))
    assert [(s.partition, s.file_id, s.base_instant, s.log_files) for s in copied] == [
        (s.partition, s.file_id, s.base_instant, s.log_files) for s in ours
    ]


def test_a_timeline_folder_that_does_not_exist_fails_hudis_read_and_is_refused_by_ours(
    hudi1: HudiJvm, archived: ArchivedHistory, tmp_path: Path
) -> None:
    """`hoodie.properties` naming a timeline folder that is not there (a file cut short mid-line, as the
    fuzz suite found): Hudi's reader fails on the missing folder, and the service refuses the table
    rather than reading it as one without commits."""
    base = tmp_path / "t"
    shutil.copytree(archived.history.base, base)
    assert len(hudi_rows(hudi1, base)) > 0
    properties = base / ".hoodie" / "hoodie.properties"
    text = properties.read_text()
    assert "hoodie.timeline.path=timeline\n" in text
    properties.write_text(text.replace("hoodie.timeline.path=timeline\n", "hoodie.timeline.path=time\n"))
    (base / ".hoodie" / ".hoodie.properties.crc").unlink(missing_ok=True)  # Hadoop checks it on read
    with pytest.raises(HudiJvmError, match=r"\.hoodie/time does not exist"):
        hudi_rows(hudi1, base)
    with pytest.raises(CorruptTableError, match=r"\.hoodie/time: the timeline folder .* does not exist"):
        HudiTable.open(str(base)).load_timeline()
