"""A rollback that cannot delete a file of the rolled-back instant stays pending and is retried.

Faults are injected below `Storage` (tests/support/faulty_storage.py): the real `Storage.delete_file`
and the real rollback executor decide. hudi-rs reads the table while the rollback is stuck and after
it completes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.errors import DeleteFailedError
from service.rollback import RollbackOutcome, rollback_instant
from service.table.markers import marker_dir_exists
from service.table.table import HudiTable
from tests.rollback.scenarios import RecordingLock, Scenario, T, pending_clustering_scenario
from tests.support import hudi_tables as ht
from tests.support.faulty_storage import Fault, FaultyStorage, each_delete_leaving_the_file

NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)


def _rollback(s: Scenario, table: HudiTable) -> RollbackOutcome:
    return rollback_instant(table, T, RecordingLock(s.base), now=NOW, tz=UTC)


def _rollback_files(s: Scenario) -> set[str]:
    return {n for n in s.timeline_names() if ".rollback" in n}


def _committed_slices(s: Scenario) -> list[ht.LatestSlice]:
    return sorted(
        ht.LatestSlice(p.split("/")[0], p.split("/")[1].split("_")[0], "20240101000100000", p.split("/")[1])
        for p in s.committed
    )


@pytest.mark.hudi
@each_delete_leaving_the_file
def test_rollback_with_a_file_left_stays_pending_and_retry_completes(
    tmp_path: Path, fault: Fault, local: bool
) -> None:
    s = pending_clustering_scenario(tmp_path)
    stuck, other = s.outputs
    storage = FaultyStorage.failing(s.base, stuck, fault, local=local)
    instant_files = {n for n in s.timeline_names() if n.startswith(T)}

    with pytest.raises(DeleteFailedError) as raised:
        _rollback(s, storage.open_table())
    message = str(raised.value)
    assert "'fixture'" in message and f"rollback of {T}" in message and storage.qualify(stuck) in message
    assert "stays pending" in message
    # Nothing of step 4 happened: T's instant files, its markers and the pending rollback remain.
    assert {n for n in s.timeline_names() if n.startswith(T)} == instant_files
    assert marker_dir_exists(s.table.storage, T)
    [r] = {n.split(".")[0] for n in _rollback_files(s)}
    assert _rollback_files(s) == {f"{r}.rollback.requested", f"{r}.rollback.inflight"}
    assert s.exists(stuck) and not s.exists(other)
    assert ht.hudi_rs_file_slices(s.base) == _committed_slices(s)  # T is pending: readers skip its files

    storage.heal()
    outcome = _rollback(s, storage.open_table())
    assert outcome.resumed and outcome.rollback_time == r
    assert not any(s.exists(p) for p in s.outputs)
    assert not {n for n in s.timeline_names() if n.startswith(T)}
    assert f"{r}.rollback" in s.timeline_names()
    assert outcome.metadata is not None
    [pm] = outcome.metadata.partition_metadata.values()
    assert set(pm.success_delete_files) == {storage.qualify(p) for p in s.outputs}  # the gone one too
    assert pm.failed_delete_files == ()
    assert ht.hudi_rs_file_slices(s.base) == _committed_slices(s)


def test_rollback_with_a_checksum_left_stays_pending(tmp_path: Path) -> None:
    s = pending_clustering_scenario(tmp_path)
    stuck = s.outputs[0]
    crc = f"p1/.{Path(stuck).name}.crc"
    (s.base / crc).write_bytes(b"crc")
    storage = FaultyStorage(s.base)
    storage.fail(crc, Fault.PERMISSION)

    with pytest.raises(DeleteFailedError, match="stays pending"):
        _rollback(s, storage.open_table())
    assert (s.base / crc).exists() and f"{T}.replacecommit.inflight" in s.timeline_names()

    storage.heal()
    outcome = _rollback(s, storage.open_table())
    assert outcome.resumed and not (s.base / crc).exists()
    assert outcome.metadata is not None and outcome.metadata.total_files_deleted == 2
