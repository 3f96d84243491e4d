"""`clean --json`'s object, written a file at a time, is the one `json.dumps(..., indent=2)` writes
(pure logic: results built here)."""

from __future__ import annotations

import io
import json
from dataclasses import asdict

from service.cleaning.results import (
    CleanFile,
    CleanInstantResult,
    CleanRunResult,
    PartitionSummary,
    write_result_json,
)


def _clean(instant: str, files: tuple[CleanFile, ...]) -> CleanInstantResult:
    return CleanInstantResult(
        instant_time=instant, policy="KEEP_LATEST_COMMITS", earliest_commit_to_retain="20240101000000000",
        files_planned=len(files), files_deleted=0, files_already_gone=0, bytes_deleted=0,
        partitions=(PartitionSummary("p=1", len(files), 10),), dry_run=True, duration_seconds=1.23456,
        files=files,
    )  # fmt: skip


def _written(result: CleanRunResult) -> str:
    out = io.StringIO()
    write_result_json(result, out)
    return out.getvalue()


def test_the_streamed_object_is_json_dumps_of_the_whole() -> None:
    files = (
        CleanFile("p=1", "a_1-0-1_20240101000000000.parquet", 10),
        CleanFile("", 'odd "name"\n\u00e9.parquet', 0, present=False),
        CleanFile("p=2", "\udcff undecodable.parquet", 2**40),
    )
    result = CleanRunResult(
        table="t", cleans=(_clean("", files), _clean("20240102000000000", ()), _clean("", files[:1])),
        dry_run=True, duration_seconds=2.5, skipped_reason='a "reason"',
    )  # fmt: skip
    text = _written(result)
    whole = json.loads(text)
    assert text == json.dumps(whole, indent=2) + "\n"  # the layout, byte for byte
    assert [c["files"] for c in whole["cleans"]] == [
        [asdict(f) for f in files],
        [],
        [asdict(files[0])],
    ]
    assert whole["cleans"][0]["duration_seconds"] == 1.235 and whole["duration_seconds"] == 2.5
    assert list(whole["cleans"][0])[-2:] == ["duration_seconds", "files"]
    assert whole["table"] == "t" and whole["skipped_reason"] == 'a "reason"'


def test_a_run_without_cleans() -> None:
    text = _written(CleanRunResult(table="t", cleans=(), skipped_reason="nothing to clean"))
    assert json.loads(text)["cleans"] == [] and text == json.dumps(json.loads(text), indent=2) + "\n"
