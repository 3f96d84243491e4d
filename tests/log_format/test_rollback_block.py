"""The rollback command block file (pure logic: names, versions, a resumed rollback, round trip).

Interop with Hudi (Hudi writes the same file, Hudi's reader honours ours) is proven in
tests/clean/test_lazy_rollback_mor.py.
"""

from __future__ import annotations

from pathlib import Path

from service.table.data_files import parse_log_file
from service.table.log_format.blocks import CommandBlock, CommandBlockType, HeaderKey
from service.table.log_format.rollback_block import append_rollback_block
from service.table.log_format.slice_reader import read_log_file
from service.table.storage import Storage

FID = "f1-0"
BASE = "20240101000000000"
X = "20240101000500000"
R = "20240101001000000"


def _storage(tmp_path: Path) -> Storage:
    return Storage.for_base_uri(str(tmp_path))


def test_block_goes_into_a_new_version_with_the_unknown_token(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    (tmp_path / "p1").mkdir()
    for name in (
        f".{FID}_{BASE}.log.1_0-10-1",
        f".{FID}_{BASE}.log.2_0-12-3",
        f".other-0_{BASE}.log.7_0-1-1",
    ):
        (tmp_path / "p1" / name).write_bytes(b"x")
    (tmp_path / "p1" / f".{FID}_19990101000000000.log.9_0-1-1").write_bytes(b"x")  # an older slice

    appended = append_rollback_block(storage, "p1", FID, BASE, X, R)

    assert appended.path == f"p1/.{FID}_{BASE}.log.3_1-0-1"
    log_file = parse_log_file("p1", f".{FID}_{BASE}.log.3_1-0-1", appended.size)
    assert log_file is not None
    [block] = read_log_file(storage, log_file)
    assert isinstance(block, CommandBlock)
    assert block.command is CommandBlockType.ROLLBACK_BLOCK
    assert (block.instant_time, block.target_instant_time) == (R, X)
    assert dict(block.header) == {
        HeaderKey.INSTANT_TIME: R,
        HeaderKey.TARGET_INSTANT_TIME: X,
        HeaderKey.COMMAND_BLOCK_TYPE: "0",
    }
    assert appended.size == (tmp_path / appended.path).stat().st_size


def test_a_resumed_rollback_reports_its_block_instead_of_writing_a_second(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    first = append_rollback_block(storage, "", FID, BASE, X, R)  # non-partitioned, no log yet
    assert first.path == f".{FID}_{BASE}.log.1_1-0-1"
    assert append_rollback_block(storage, "", FID, BASE, X, R) == first
    # Another rollback (another target) after it gets its own file.
    other = append_rollback_block(storage, "", FID, BASE, "20240101000600000", "20240101002000000")
    assert other.path == f".{FID}_{BASE}.log.2_1-0-1"
