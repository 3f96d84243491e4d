"""Timeline layout 2 (table versions 8, 9): file names both ways, log files sliced by completion time."""

from __future__ import annotations

import pytest

from service.errors import CorruptTableError
from service.table.data_files import LogFile, parse_log_file
from service.table.instant import Action, Instant, State
from service.table.layout import LAYOUT_1, TimelineLayout
from service.table.slicing import CompletionTimes, slice_log_files_by_completion
from service.table.timeline import Timeline

V2 = TimelineLayout.v2()
R, C = "20260101000000000", "20260101000005000"


@pytest.mark.parametrize(
    ("name", "instant"),
    [
        (f"{R}_{C}.commit", Instant(R, Action.COMMIT, State.COMPLETED, C)),
        (f"{R}_{C}.replacecommit", Instant(R, Action.REPLACE_COMMIT, State.COMPLETED, C)),
        (f"{R}.clustering.requested", Instant(R, Action.CLUSTERING, State.REQUESTED)),
        (f"{R}.clustering.inflight", Instant(R, Action.CLUSTERING, State.INFLIGHT)),
        (f"{R}.inflight", Instant(R, Action.COMMIT, State.INFLIGHT)),
        (f"{R}.deltacommit.requested", Instant(R, Action.DELTA_COMMIT, State.REQUESTED)),
        (f"{R}.commit", Instant(R, Action.COMMIT, State.COMPLETED)),  # legacy: no completion time
    ],
)
def test_layout_2_names_round_trip(name: str, instant: Instant) -> None:
    parsed = V2.parse_file_name(name)
    assert parsed == instant and parsed.completion_time == instant.completion_time
    assert V2.instant_path(parsed) == f".hoodie/timeline/{name}"


def test_clustering_completes_as_a_replacecommit_and_collapses_with_its_plan() -> None:
    plan = Instant(R, Action.CLUSTERING, State.INFLIGHT)
    done = plan.completed_at(C)
    assert (done.action, done.completion_time) == (Action.REPLACE_COMMIT, C)
    assert Timeline.of([plan, done]).instants == (done,)
    assert V2.clustering_action is Action.CLUSTERING and LAYOUT_1.clustering_action is Action.REPLACE_COMMIT


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (f"{R}_{C}.commit", "layout version 2 name"),
        (f"{R}.clustering.requested", "layout version 2 name"),
    ],
)
def test_layout_1_refuses_layout_2_names(name: str, message: str) -> None:
    with pytest.raises(CorruptTableError, match=message):
        LAYOUT_1.parse_file_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (f"{R}_2026.commit", "must have 17 digits"),
        (f"{R}_{C}.commit.requested", "a requested instant has no completion time"),
        (f"{R}_{C}.inflight", "a inflight instant has no completion time"),
        (f"{R}_{C}.clusterin", "unknown action/state extension"),
    ],
)
def test_layout_2_refuses_malformed_names_naming_the_file(name: str, message: str) -> None:
    with pytest.raises(CorruptTableError, match=message) as caught:
        V2.parse_file_name(name)
    assert name in str(caught.value)


def test_commit_metadata_is_avro_on_layout_2_except_legacy_names() -> None:
    assert V2.commit_metadata_is_avro(Instant(R, Action.COMMIT, State.COMPLETED, C))
    assert V2.commit_metadata_is_avro(Instant(R, Action.DELTA_COMMIT, State.INFLIGHT))
    assert not V2.commit_metadata_is_avro(Instant(R, Action.COMMIT, State.COMPLETED))
    assert not LAYOUT_1.commit_metadata_is_avro(Instant(R, Action.COMMIT, State.COMPLETED))


# -- slicing by completion time (HoodieFileGroup.getBaseInstantTime)

FID = "f1-0"
B, D1, CMP, D2 = "20260101000001000", "20260101000002000", "20260101000003000", "20260101000004000"


def _log(instant: str, version: int = 1) -> LogFile:
    log = parse_log_file("p", f".{FID}_{instant}.log.{version}_0-1-0", 10)
    assert log is not None
    return log


def _times(*completed: tuple[str, str], start: str | None = None) -> CompletionTimes:
    return CompletionTimes(dict(completed), start or min(t for t, _ in completed))


def test_a_log_whose_deltacommit_completed_after_a_compaction_was_scheduled_joins_its_slice() -> None:
    # D1 started before compaction CMP was scheduled but completed after it: CMP's plan did not take
    # it, so it belongs to slice CMP, as D2 (started after CMP) does. A log completed before CMP stays
    # with base B.
    early = "20260101000001500"
    times = _times((B, B), (early, "20260101000001600"), (D1, "20260101000003500"), (D2, "20260101000004100"))
    placed = slice_log_files_by_completion("t", {B, CMP}, [_log(D1), _log(early), _log(D2)], times)
    assert {k: sorted(lf.file_name for lf in v) for k, v in placed.items()} == {
        B: [f".{FID}_{early}.log.1_0-1-0"],
        CMP: [f".{FID}_{D1}.log.1_0-1-0", f".{FID}_{D2}.log.1_0-1-0"],
    }


def test_a_log_with_no_earlier_slice_opens_one_at_its_deltacommit() -> None:
    times = _times((D1, "20260101000002100"), (D2, "20260101000004100"))
    placed = slice_log_files_by_completion("t", set(), [_log(D2), _log(D1)], times)
    assert sorted(placed) == [D1]
    assert len(placed[D1]) == 2


def test_an_archived_log_whose_slice_depends_on_a_history_not_read_is_refused_by_name() -> None:
    times = _times((CMP, CMP), start=CMP)  # D1 was archived: before the active timeline's start
    with pytest.raises(CorruptTableError, match=rf"{D1}, archived .* file slice {CMP}"):
        slice_log_files_by_completion("t", {B, CMP}, [_log(D1)], times)
    # With no slice opened after it, the requested time places it exactly.
    placed = slice_log_files_by_completion("t", {B}, [_log(D1)], times)
    assert list(placed) == [B]
