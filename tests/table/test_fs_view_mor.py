"""Merge-on-read file slices in the view, as Java's `AbstractTableFileSystemView` builds them (pure:
synthetic listings; `tests/interop/test_mor_view_vs_hudi.py` proves the same against Hudi's view)."""

from __future__ import annotations

from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.storage import FileStatus
from service.table.timeline import Timeline
from strategies.cleaning.safety import latest_snapshot_paths
from tests.support.fixtures import ts

FID = "f1-0"
B, D2, C, D4, FAILED = ts(1), ts(2), ts(3), ts(4), ts(5)


def _timeline(*extra: Instant) -> Timeline:
    return Timeline.of(
        [
            Instant(B, Action.DELTA_COMMIT, State.COMPLETED),
            Instant(D2, Action.DELTA_COMMIT, State.COMPLETED),
            *extra,
        ]
    )


def _base(instant: str) -> FileStatus:
    return FileStatus(f"p/{FID}_0-1-0_{instant}.parquet", 100, False)


def _log(base_instant: str, version: int, token: str) -> FileStatus:
    return FileStatus(f"p/.{FID}_{base_instant}.log.{version}_{token}", 10, False)


def _names(view: FileSystemView, instant: str) -> list[str]:
    [fg] = view.file_groups.values()
    [fs] = [s for s in fg.slices if s.base_instant_time == instant]
    return list(fs.file_names)


def test_logs_ordered_by_version_then_write_token() -> None:
    """`HoodieLogFile.getLogFileComparator`: version numerically (10 after 9), then write token."""
    listing = {
        "p": [_base(B), _log(B, 10, "0-1-0"), _log(B, 2, "1-0-1"), _log(B, 9, "0-5-1"), _log(B, 2, "0-9-9")]
    }
    view = FileSystemView.build(_timeline(), listing, TimelineFacts())
    assert _names(view, B)[1:] == [
        f".{FID}_{B}.log.2_0-9-9",
        f".{FID}_{B}.log.2_1-0-1",
        f".{FID}_{B}.log.9_0-5-1",
        f".{FID}_{B}.log.10_0-1-0",
    ]


def test_log_only_slice_and_uncommitted_base_instant() -> None:
    """A log-only slice whose base instant is a completed deltacommit is a version; logs of a slice
    keyed by a failed instant are not committed (`HoodieFileGroup.isFileSliceCommitted`)."""
    timeline = _timeline(Instant(FAILED, Action.DELTA_COMMIT, State.INFLIGHT))
    listing = {"p": [_log(D2, 1, "0-1-0"), _log(FAILED, 1, "0-1-0")]}
    view = FileSystemView.build(timeline, listing, TimelineFacts())
    [fg] = view.live_file_groups
    assert [s.base_instant_time for s in fg.slices] == [D2]
    assert fg.slices[0].base_file is None and len(fg.slices[0].log_files) == 1
    assert view.uncommitted_files == (f"p/.{FID}_{FAILED}.log.1_0-1-0",)


def test_pending_compaction_opens_slice_and_hides_its_base_file() -> None:
    """Compaction C pending on base B: slice C exists before any file carries C
    (`addNewFileSliceAtInstant`); logs named with C belong to it; a base file C (the compactor's,
    not committed yet) is hidden from the latest slice (`filterBaseFileAfterPendingCompaction`) but
    kept in the group's slices; a snapshot reads slice C merged with slice B."""
    timeline = _timeline(
        Instant(C, Action.COMPACTION, State.INFLIGHT), Instant(D4, Action.DELTA_COMMIT, State.COMPLETED)
    )
    facts = TimelineFacts(pending_compaction={("p", FID): (C, B)})
    before = {"p": [_base(B), _log(B, 1, "0-1-0")]}
    view = FileSystemView.build(timeline, before, facts)
    [fg] = view.live_file_groups
    assert [s.base_instant_time for s in fg.slices] == [C, B]
    assert fg.latest_slice is not None and fg.latest_slice.file_names == ()

    after = {"p": [*before["p"], _log(C, 1, "0-2-0"), _base(C)]}
    view = FileSystemView.build(timeline, after, facts)
    [fg] = view.live_file_groups
    assert _names(view, C) == [f"{FID}_0-1-0_{C}.parquet", f".{FID}_{C}.log.1_0-2-0"]
    assert fg.latest_slice is not None and fg.latest_slice.file_names == (f".{FID}_{C}.log.1_0-2-0",)
    assert latest_snapshot_paths(view) == {
        f"p/.{FID}_{C}.log.1_0-2-0",
        f"p/{FID}_0-1-0_{B}.parquet",
        f"p/.{FID}_{B}.log.1_0-1-0",
    }


def test_pending_log_compaction_opens_no_slice() -> None:
    timeline = _timeline(Instant(C, Action.LOG_COMPACTION, State.REQUESTED))
    facts = TimelineFacts(pending_log_compaction={("p", FID): (C, B)})
    view = FileSystemView.build(timeline, {"p": [_base(B), _log(B, 1, "0-1-0")]}, facts)
    [fg] = view.live_file_groups
    assert [s.base_instant_time for s in fg.slices] == [B]
    assert view.is_pending_compaction(("p", FID))
