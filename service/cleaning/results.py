"""What a clean run did (or, dry, would do): counts and bytes per clean, per partition and per file.

The daemon exports metrics from `CleanRunResult`; the CLI prints `render_result`, or with `--json`
`write_result_json`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from json.encoder import encode_basestring_ascii as _string
from typing import TextIO

from service.json_output import fields_json


@dataclass(frozen=True)
class PartitionSummary:
    partition_path: str
    files: int  # files the plan deletes that were present when it was checked
    bytes: int
    partition_deleted: bool = False


@dataclass(frozen=True)
class CleanFile:
    """One file a clean plan deletes, as checked before deleting."""

    partition_path: str
    file_name: str
    bytes: int  # 0 when already gone
    present: bool = True  # False: the plan lists it but it was already gone when checked


@dataclass(frozen=True)
class CleanInstantResult:
    """One clean instant: finished (or, in a dry run, what it would delete)."""

    instant_time: str  # "" for a dry run's not-yet-scheduled plan
    policy: str
    earliest_commit_to_retain: str
    files_planned: int
    files_deleted: int  # deleted by this run
    files_already_gone: int  # listed by the plan but already missing (count as deleted)
    bytes_deleted: int
    partitions: tuple[PartitionSummary, ...]
    resumed: bool = False  # the plan was pending when the run started (ours or another writer's)
    completed_by_other_writer: bool = False  # `T.clean` appeared before we could write it
    dry_run: bool = False
    incremental: bool | None = None  # how partitions were chosen (None: plan not made by this run)
    duration_seconds: float = 0.0
    files: tuple[CleanFile, ...] = ()  # every file of the plan, by partition then name


@dataclass(frozen=True)
class CleanRunResult:
    table: str
    cleans: tuple[CleanInstantResult, ...]
    skipped_reason: str | None = None  # why no new clean was scheduled
    dry_run: bool = False
    duration_seconds: float = 0.0
    # Set when the run found no clean due (then the timeline is unchanged by it): the daemon's gauge.
    commits_since_last_clean: int | None = None

    @property
    def files_deleted(self) -> int:
        return sum(c.files_deleted for c in self.cleans)

    @property
    def files_already_gone(self) -> int:
        return sum(c.files_already_gone for c in self.cleans)

    @property
    def bytes_deleted(self) -> int:
        return sum(c.bytes_deleted for c in self.cleans)

    @property
    def files_planned(self) -> int:
        return sum(c.files_planned for c in self.cleans)


def render_result(result: CleanRunResult) -> str:
    """Human-readable report; a dry run lists each plan per partition with counts and bytes."""
    verb = "would delete" if result.dry_run else "deleted"
    lines = [f"table {result.table}: {'dry run, nothing written' if result.dry_run else 'clean'}"]
    for clean in result.cleans:
        name = clean.instant_time or "(new plan)"
        origin = " (pending plan)" if clean.resumed else ""
        ectr = clean.earliest_commit_to_retain or "none"
        lines.append(f"  clean {name}{origin}: policy {clean.policy}, earliest commit to retain {ectr}")
        if result.dry_run:
            total = sum(p.files for p in clean.partitions)
            size = sum(p.bytes for p in clean.partitions)
            lines.append(f"    {verb} {total} files, {size} bytes in {len(clean.partitions)} partitions")
            for p in clean.partitions:
                gone = " (partition removed)" if p.partition_deleted else ""
                lines.append(
                    f"      {p.partition_path or '(non-partitioned)'}: {p.files} files, {p.bytes} bytes{gone}"
                )
            if clean.files:
                lines.append("    files:")
                for f in clean.files:
                    state = f"{f.bytes} bytes" if f.present else "already gone"
                    lines.append(f"      {f.partition_path or '(non-partitioned)'}  {f.file_name}  {state}")
        else:
            other = " (completed by another writer)" if clean.completed_by_other_writer else ""
            lines.append(
                f"    {verb} {clean.files_deleted} files, {clean.bytes_deleted} bytes; "
                f"{clean.files_already_gone} already gone{other}"
            )
    if result.skipped_reason:
        lines.append(f"  no new clean: {result.skipped_reason}")
    return "\n".join(lines)


_RUN_FIELDS = (
    "table", "dry_run", "skipped_reason", "commits_since_last_clean", "files_planned", "files_deleted",
    "files_already_gone", "bytes_deleted", "duration_seconds",
)  # fmt: skip


# Where each clean's files go in the text of the rest (a string no file name or path can hold).
_FILES_MARK = "\u0000files of clean {}\u0000"
_FILE_INDENT = " " * 8  # a file object's depth in `json.dumps(..., indent=2)`: run, cleans, clean, files


def write_result_json(result: CleanRunResult, out: TextIO) -> None:
    """One JSON object for `clean --json` (the run's totals, then each clean with its partitions and
    files), as `json.dumps(..., indent=2)` lays it out, written a file at a time: a dry run of a table
    of a million files lists half a million, whose dicts and text all at once took 300 MB."""
    tree = {
        **fields_json(result, _RUN_FIELDS),
        "cleans": [
            {
                **asdict(replace(c, files=())),
                "duration_seconds": round(c.duration_seconds, 3),
                "files": _FILES_MARK.format(i),
            }
            for i, c in enumerate(result.cleans)
        ],
    }
    text = json.dumps(tree, indent=2)
    for i, clean in enumerate(result.cleans):
        before, text = text.split(json.dumps(_FILES_MARK.format(i)), 1)
        out.write(before)
        if not clean.files:
            out.write("[]")
            continue
        out.write("[")
        for n, file in enumerate(clean.files):
            out.write(",\n" if n else "\n")
            out.write(_file_json(file))
        out.write("\n" + _FILE_INDENT[:-2] + "]")
    out.write(text + "\n")


def _file_json(file: CleanFile) -> str:
    """`json.dumps(asdict(file), indent=2)` indented by `_FILE_INDENT`, without either: at half a
    million files, `asdict`'s deep copies and an encoder per file were a fifth of a dry run's time."""
    inner = _FILE_INDENT + "  "
    return (
        f"{_FILE_INDENT}{{\n"
        f'{inner}"partition_path": {_string(file.partition_path)},\n'
        f'{inner}"file_name": {_string(file.file_name)},\n'
        f'{inner}"bytes": {int(file.bytes)},\n'
        f'{inner}"present": {"true" if file.present else "false"}\n'
        f"{_FILE_INDENT}}}"
    )
