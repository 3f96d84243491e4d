from __future__ import annotations

import pytest

from service.errors import CorruptTableError
from service.table.instant import Action, Instant, State, is_timeline_file_name, parse_instant_file_name

# Every (file name -> action, state) of table version 6 (Hudi's `HoodieInstant.getFileName`).
NAMES = {
    "20240101000000000.commit.requested": (Action.COMMIT, State.REQUESTED),
    "20240101000000000.inflight": (Action.COMMIT, State.INFLIGHT),
    "20240101000000000.commit": (Action.COMMIT, State.COMPLETED),
    "20240101000000000.deltacommit.requested": (Action.DELTA_COMMIT, State.REQUESTED),
    "20240101000000000.deltacommit.inflight": (Action.DELTA_COMMIT, State.INFLIGHT),
    "20240101000000000.deltacommit": (Action.DELTA_COMMIT, State.COMPLETED),
    "20240101000000000.replacecommit.requested": (Action.REPLACE_COMMIT, State.REQUESTED),
    "20240101000000000.replacecommit.inflight": (Action.REPLACE_COMMIT, State.INFLIGHT),
    "20240101000000000.replacecommit": (Action.REPLACE_COMMIT, State.COMPLETED),
    "20240101000000000.clean.requested": (Action.CLEAN, State.REQUESTED),
    "20240101000000000.clean.inflight": (Action.CLEAN, State.INFLIGHT),
    "20240101000000000.clean": (Action.CLEAN, State.COMPLETED),
    "20240101000000000.rollback.requested": (Action.ROLLBACK, State.REQUESTED),
    "20240101000000000.rollback.inflight": (Action.ROLLBACK, State.INFLIGHT),
    "20240101000000000.rollback": (Action.ROLLBACK, State.COMPLETED),
    "20240101000000000.savepoint.inflight": (Action.SAVEPOINT, State.INFLIGHT),
    "20240101000000000.savepoint": (Action.SAVEPOINT, State.COMPLETED),
    "20240101000000000.compaction.requested": (Action.COMPACTION, State.REQUESTED),
    "20240101000000000.compaction.inflight": (Action.COMPACTION, State.INFLIGHT),
    "20240101000000000.logcompaction.requested": (Action.LOG_COMPACTION, State.REQUESTED),
    "20240101000000000.logcompaction.inflight": (Action.LOG_COMPACTION, State.INFLIGHT),
    "20240101000000000.restore.requested": (Action.RESTORE, State.REQUESTED),
    "20240101000000000.restore.inflight": (Action.RESTORE, State.INFLIGHT),
    "20240101000000000.restore": (Action.RESTORE, State.COMPLETED),
    "20240101000000000.indexing.requested": (Action.INDEXING, State.REQUESTED),
    "20240101000000000.indexing.inflight": (Action.INDEXING, State.INFLIGHT),
    "20240101000000000.indexing": (Action.INDEXING, State.COMPLETED),
    "20240101000000.commit": (Action.COMMIT, State.COMPLETED),  # legacy 14-digit time
}


@pytest.mark.parametrize(("name", "expected"), NAMES.items())
def test_instant_parse_and_format_round_trip(name: str, expected: tuple[Action, State]) -> None:
    instant = parse_instant_file_name(name)
    assert (instant.action, instant.state) == expected
    assert instant.file_name == name


@pytest.mark.parametrize(
    "name",
    ["2024010100000000.commit", "20240101000000000.commit.tmp", "20240101000000000.bogus", "2024x.commit"],
)
def test_instant_parse_rejects_unknown_names_naming_the_file(name: str) -> None:
    with pytest.raises(CorruptTableError, match=name.split(".")[0]):
        parse_instant_file_name(name)


def test_instant_completed_compaction_becomes_commit() -> None:
    requested = Instant("20240101000000000", Action.COMPACTION, State.REQUESTED)
    assert requested.with_state(State.COMPLETED).file_name == "20240101000000000.commit"


def test_instant_savepoint_has_no_requested_state() -> None:
    with pytest.raises(ValueError, match="savepoint"):
        Instant("20240101000000000", Action.SAVEPOINT, State.REQUESTED)


def test_instant_orders_by_time_then_state() -> None:
    a = Instant("20240101000000001", Action.COMMIT, State.COMPLETED)
    b = Instant("20240101000000002", Action.COMMIT, State.REQUESTED)
    assert sorted([b, a]) == [a, b]


@pytest.mark.parametrize(
    ("name", "is_instant"),
    [
        ("20261128102700267.inflight", True),
        ("20261128102700267_20261128102701000.commit", True),
        ("20240101000000000.garbage", True),  # an instant file name, refused when parsed
        # Seen on a Hudi 1.1.1 writer's timeline: the temp file an instant file is written through,
        # renamed into place a moment later; Hudi's own timeline loader skips it.
        ("20261128102700267.inflight.d38a77b8-d43c-43bf-80bd-75a04564baea", False),
        ("20261128102700267_20261128102701000.commit.d38a77b8-d43c-43bf-80bd-75a04564baea", False),
        ("hoodie.properties", False),
        ("20261128102700267.inflight.not-a-uuid", True),
    ],
)
def test_hudis_temp_files_on_the_timeline_are_not_instants(name: str, is_instant: bool) -> None:
    assert is_timeline_file_name(name) is is_instant
    if is_instant and "garbage" not in name and "not-a-uuid" not in name:
        parse_instant_file_name(name, names_completion_time=True)
