"""The archived (LSM) timeline of layout 2, read from files written here in Hudi's shape
(`LSMTimelineWriter`: parquet of `HoodieLSMTimelineInstant`, `manifest_<N>` JSON, `_version_`), and
log files placed by the completion times it holds."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from service.errors import CorruptTableError
from service.table import lsm_history
from service.table.data_files import LogFile, parse_log_file
from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.lsm_history import (
    EMPTY_MANIFEST,
    ArchivedInstant,
    LsmHistory,
    read_archived_instants,
    read_latest_manifest,
)
from service.table.lsm_writer import LSM_SCHEMA
from service.table.slicing import CompletionTimes, history_lookups, slice_log_files_by_completion
from service.table.storage import FileStatus, Storage
from service.table.timeline import Timeline

HISTORY = ".hoodie/timeline/history"

Record = tuple[str | None, str | None, str | None]  # (instantTime, completionTime, action)


def _t(n: int) -> str:
    """An instant time: 17 digits, ordered by `n`."""
    return f"2026010100{n:07d}"


def write_data_file(history: Path, records: Sequence[Record], name: str | None = None, layer: int = 0) -> str:
    """A `<min>_<max>_<layer>.parquet` file of `records`, named by their range unless `name` is given."""
    if name is None:
        times = sorted(str(r[0]) for r in records)
        name = f"{times[0]}_{times[-1]}_{layer}.parquet"
    table = pa.table(
        {
            "instantTime": [r[0] for r in records],
            "completionTime": [r[1] for r in records],
            "action": [r[2] for r in records],
            "metadata": [b"\x00"] * len(records),
            "plan": [None] * len(records),
            "version": [1] * len(records),
        },
        schema=LSM_SCHEMA,
    )
    history.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, history / name)
    return name


def write_manifest(history: Path, version: int, names: Iterable[str], *, latest: bool = True) -> None:
    """`manifest_<version>` as Hudi's Jackson writes it (pretty-printed), and `_version_` naming it."""
    files = [
        {"fileName": n, "fileLen": (history / n).stat().st_size if (history / n).exists() else 0}
        for n in names
    ]
    history.mkdir(parents=True, exist_ok=True)
    (history / f"manifest_{version}").write_text(json.dumps({"files": files}, indent=2))
    if latest:
        (history / "_version_").write_text(str(version))


def deltacommit(n: int, completed_after: int = 1) -> Record:
    return (_t(n), _t(n + completed_after), "deltacommit")


@pytest.fixture
def storage(tmp_path: Path) -> Storage:
    return Storage.for_base_uri(str(tmp_path))


def _history(tmp_path: Path) -> Path:
    return tmp_path / HISTORY


# -- lookups


def test_completion_times_come_from_the_latest_manifests_files_covering_the_instants(
    tmp_path: Path, storage: Storage
) -> None:
    h = _history(tmp_path)
    compacted = write_data_file(h, [deltacommit(10, 5), deltacommit(20), (_t(30), _t(45), "commit")], layer=1)
    recent = write_data_file(h, [deltacommit(50), deltacommit(60, 2)])
    # Listed by an older manifest only (compacted into `compacted` since): never read, so garbage here
    # would go unnoticed, as Hudi reads only the latest snapshot.
    (h / f"{_t(10)}_{_t(20)}_0.parquet").write_bytes(b"superseded")
    write_manifest(h, 1, [f"{_t(10)}_{_t(20)}_0.parquet"], latest=False)
    write_manifest(h, 2, [compacted, recent])

    found = read_archived_instants(storage, HISTORY, {_t(10), _t(30), _t(60), _t(70)})
    assert found == {
        _t(10): ArchivedInstant(_t(10), _t(15), "deltacommit"),
        _t(30): ArchivedInstant(_t(30), _t(45), "commit"),
        _t(60): ArchivedInstant(_t(60), _t(62), "deltacommit"),
    }
    assert read_latest_manifest(storage, HISTORY).version == 2


def test_only_files_whose_name_range_covers_an_instant_are_read(tmp_path: Path, storage: Storage) -> None:
    h = _history(tmp_path)
    wanted = write_data_file(h, [deltacommit(10), deltacommit(20)])
    # Not Parquet at all: reading it would fail, so its name range alone kept it unread.
    (h / f"{_t(30)}_{_t(40)}_0.parquet").write_bytes(b"not parquet")
    write_manifest(h, 1, [wanted, f"{_t(30)}_{_t(40)}_0.parquet"])
    assert set(read_archived_instants(storage, HISTORY, {_t(20), _t(25)})) == {_t(20)}
    with pytest.raises(CorruptTableError, match="not a readable Parquet file"):
        read_archived_instants(storage, HISTORY, {_t(35)})


def test_a_record_without_completion_time_completed_at_its_instant_time(
    tmp_path: Path, storage: Storage
) -> None:
    h = _history(tmp_path)
    write_manifest(h, 1, [write_data_file(h, [(_t(10), None, "deltacommit")])])
    assert read_archived_instants(storage, HISTORY, {_t(10)})[_t(10)].completion_time == _t(10)


@pytest.mark.parametrize("version_file", [None, b""], ids=["missing", "empty"])
def test_without_a_version_file_the_highest_manifest_is_the_latest(
    tmp_path: Path, storage: Storage, version_file: bytes | None
) -> None:
    """`LSMTimeline.latestSnapshotVersion`: `_version_` is deleted and created again on every change
    (`LSMTimelineWriter.updateVersionFile`); meanwhile the manifests are listed, `*.tmp` left out."""
    h = _history(tmp_path)
    old = write_data_file(h, [deltacommit(10, 1)], name=f"{_t(10)}_{_t(10)}_0.parquet")
    new = write_data_file(h, [deltacommit(10, 3)], name=f"{_t(10)}_{_t(20)}_1.parquet")
    write_manifest(h, 9, [old], latest=False)
    write_manifest(h, 10, [new], latest=False)
    (h / "manifest_11.tmp").write_text("{ half a manifest")
    (h / ".manifest_10.crc").write_bytes(b"crc")
    if version_file is not None:
        (h / "_version_").write_bytes(version_file)
    assert read_latest_manifest(storage, HISTORY).version == 10
    assert read_archived_instants(storage, HISTORY, {_t(10)})[_t(10)].completion_time == _t(13)


def test_no_history_holds_nothing(tmp_path: Path, storage: Storage) -> None:
    assert read_latest_manifest(storage, HISTORY) == EMPTY_MANIFEST
    assert read_archived_instants(storage, HISTORY, {_t(10)}) == {}
    (tmp_path / HISTORY).mkdir(parents=True)
    assert read_latest_manifest(storage, HISTORY) == EMPTY_MANIFEST


def test_the_history_keeps_what_it_found_and_reads_only_what_it_lacks(
    tmp_path: Path, storage: Storage
) -> None:
    h = _history(tmp_path)
    first = write_data_file(h, [deltacommit(10)])
    write_manifest(h, 1, [first])
    history = LsmHistory(storage, HISTORY)
    assert history.completion_times([_t(10), _t(20)]) == {_t(10): _t(11)}
    # Archived instants never change: once found, no file is read for them again.
    (h / first).write_bytes(b"compacted away")
    second = write_data_file(h, [deltacommit(20)])
    write_manifest(h, 2, [first, second])
    assert history.completion_times([_t(10), _t(20)]) == {_t(10): _t(11), _t(20): _t(21)}
    assert history.location == storage.qualify(HISTORY)


# -- every stored file is untrusted: each breakage names the file


def _valid_history(h: Path) -> str:
    name = write_data_file(h, [deltacommit(10), deltacommit(20)])
    write_manifest(h, 1, [name])
    return name


def _break_version_text(h: Path) -> str:
    (h / "_version_").write_text("1\n")
    return "_version_"


def _break_version_names_missing_manifest(h: Path) -> str:
    (h / "_version_").write_text("7")
    return "manifest_7"


def _break_manifest_name(h: Path) -> str:
    (h / "_version_").unlink()
    (h / "manifest_two").write_text("{}")
    return "manifest_two"


def _break_manifest_empty(h: Path) -> str:
    (h / "manifest_1").write_bytes(b"")
    return "manifest_1"


def _break_manifest_json(h: Path) -> str:
    (h / "manifest_1").write_bytes(b'{"files": [')
    return "manifest_1"


def _break_manifest_shape(h: Path) -> str:
    (h / "manifest_1").write_text(json.dumps({"fileNames": []}))
    return "manifest_1"


def _break_manifest_entry(h: Path) -> str:
    (h / "manifest_1").write_text(json.dumps({"files": [{"fileName": f"{_t(10)}_{_t(20)}_0.parquet"}]}))
    return "manifest_1"


def _break_manifest_file_name(h: Path) -> str:
    (h / "manifest_1").write_text(json.dumps({"files": [{"fileName": "../../x.parquet", "fileLen": 1}]}))
    return "manifest_1"


def _break_manifest_range(h: Path) -> str:
    name = f"{_t(20)}_{_t(10)}_0.parquet"
    (h / "manifest_1").write_text(json.dumps({"files": [{"fileName": name, "fileLen": 1}]}))
    return "manifest_1"


def _break_manifest_twice(h: Path) -> str:
    name = f"{_t(10)}_{_t(20)}_0.parquet"
    entry = {"fileName": name, "fileLen": 1}
    (h / "manifest_1").write_text(json.dumps({"files": [entry, entry]}))
    return "manifest_1"


def _break_data_missing(h: Path) -> str:
    name = f"{_t(10)}_{_t(20)}_0.parquet"
    (h / name).unlink()
    return name


def _break_data_garbled(h: Path) -> str:
    name = f"{_t(10)}_{_t(20)}_0.parquet"
    (h / name).write_bytes((h / name).read_bytes()[:-20])
    return name


def _break_data_column(h: Path) -> str:
    name = f"{_t(10)}_{_t(20)}_0.parquet"
    pq.write_table(pa.table({"instantTime": [_t(10)], "action": ["deltacommit"]}), h / name)
    return name


def _break_data_null_instant(h: Path) -> str:
    return write_data_file(
        h, [deltacommit(10), (None, _t(12), "deltacommit")], name=f"{_t(10)}_{_t(20)}_0.parquet"
    )


def _break_data_completion_before(h: Path) -> str:
    return write_data_file(h, [(_t(10), _t(9), "deltacommit"), deltacommit(20)])


def _break_data_completion_text(h: Path) -> str:
    return write_data_file(h, [(_t(10), "2026", "deltacommit"), deltacommit(20)])


def _break_data_no_action(h: Path) -> str:
    return write_data_file(h, [(_t(10), _t(11), None), deltacommit(20)])


def _break_data_two_completions(h: Path) -> str:
    name = write_data_file(h, [deltacommit(10, 1), deltacommit(10, 2), deltacommit(20)])
    return name


BREAKAGES = {
    "version not a number": (_break_version_text, r"'1\\n' is not a snapshot version number"),
    "version names no manifest": (
        _break_version_names_missing_manifest,
        r"missing, though .*_version_ names it",
    ),
    "manifest name": (_break_manifest_name, r"not a manifest name"),
    "manifest empty": (_break_manifest_empty, r"empty manifest"),
    "manifest not JSON": (_break_manifest_json, r"not a JSON manifest"),
    "manifest without files": (_break_manifest_shape, r"an object with a `files` array"),
    "manifest entry": (_break_manifest_entry, r"files\[0\] is not a \{fileName: string, fileLen"),
    "manifest file name": (_break_manifest_file_name, r"'../../x.parquet' is not an archived timeline file"),
    "manifest file range": (_break_manifest_range, r"names a range whose start is after its end"),
    "manifest file twice": (_break_manifest_twice, r"a file is listed twice"),
    "data file missing": (_break_data_missing, r"missing, though the latest manifest lists it"),
    "data file truncated": (_break_data_garbled, r"not a readable Parquet file"),
    "data file column": (_break_data_column, r"no string column 'completionTime'"),
    "record without instant": (_break_data_null_instant, r"a record has no instantTime"),
    "completion before instant": (
        _break_data_completion_before,
        rf"completion time '{_t(9)}', not a time at or after it",
    ),
    "completion not a time": (_break_data_completion_text, r"completion time '2026', not a time"),
    "record without action": (_break_data_no_action, r"has no action"),
    "two completion times": (_break_data_two_completions, r"completed at .*, but .* says"),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_a_broken_history_file_is_refused_naming_it(tmp_path: Path, storage: Storage, breakage: str) -> None:
    h = _history(tmp_path)
    _valid_history(h)
    assert read_archived_instants(storage, HISTORY, {_t(10)})  # whole, it reads
    broken, message = BREAKAGES[breakage]
    name = broken(h)
    with pytest.raises(CorruptTableError, match=message) as caught:
        read_archived_instants(storage, HISTORY, {_t(10)})
    assert storage.qualify(f"{HISTORY}/{name}") in str(caught.value)


# -- log files placed by archived completion times


FID = "f1-0"
B, D0, D1, CMP, D2 = _t(100), _t(200), _t(300), _t(400), _t(500)


def _log(instant: str) -> LogFile:
    log = parse_log_file("p", f".{FID}_{instant}.log.1_0-1-0", 10)
    assert log is not None
    return log


class _CountingHistory:
    """A history whose lookups are recorded."""

    def __init__(self, times: Mapping[str, str]) -> None:
        self.times = dict(times)
        self.asked: list[set[str]] = []

    @property
    def location(self) -> str:
        return "file:/t/.hoodie/timeline/history"

    def completion_times(self, instant_times: Iterable[str]) -> dict[str, str]:
        asked = set(instant_times)
        self.asked.append(asked)
        return {t: c for t, c in self.times.items() if t in asked}


def test_only_archived_logs_a_later_slice_depends_on_are_looked_up() -> None:
    times = CompletionTimes({CMP: _t(450), D2: _t(510)}, timeline_start=CMP)
    logs = [_log(D0), _log(D1), _log(D2)]
    assert history_lookups({B, CMP}, logs, times) == {D0, D1}  # D2 is active
    assert history_lookups({B}, logs, times) == set()  # nothing opened after them
    assert history_lookups(set(), logs, times) == set()


def test_an_archived_log_that_completed_after_a_compaction_was_scheduled_joins_its_slice() -> None:
    """The case Hudi's `HoodieFileGroup.getBaseInstantTime` needs the history for: D1 started before
    compaction CMP was scheduled and completed after it (CMP's plan left its log out), then D1 was
    archived. D0 completed before CMP and stays with base B."""
    history = _CountingHistory({D0: _t(250), D1: _t(410), B: _t(150)})
    times = CompletionTimes({CMP: _t(450), D2: _t(510)}, timeline_start=CMP)
    logs = [_log(D1), _log(D0), _log(D2)]
    times = times.with_history(history, history_lookups({B, CMP}, logs, times))
    placed = slice_log_files_by_completion("t", {B, CMP}, logs, times)
    assert {k: sorted(lf.base_instant_time for lf in v) for k, v in placed.items()} == {
        B: [D0],
        CMP: [D1, D2],
    }
    assert history.asked == [{D0, D1}]


def test_an_archived_log_the_history_does_not_hold_is_refused_naming_both() -> None:
    history = _CountingHistory({D0: _t(250)})
    times = CompletionTimes({CMP: _t(450)}, timeline_start=CMP)
    times = times.with_history(history, {D0, D1})
    with pytest.raises(CorruptTableError, match=rf"{D1}, archived .* file slice {CMP} .*") as caught:
        slice_log_files_by_completion("t", {B, CMP}, [_log(D0), _log(D1)], times)
    assert _log(D1).path in str(caught.value) and history.location in str(caught.value)
    no_history = CompletionTimes({CMP: _t(450)}, timeline_start=CMP)
    with pytest.raises(CorruptTableError, match=r"no archived \(LSM\) timeline was read"):
        slice_log_files_by_completion("t", {B, CMP}, [_log(D1)], no_history)


def _status(name: str) -> FileStatus:
    return FileStatus(f"p/{name}", 10, False)


def test_the_view_reads_the_history_once_for_the_logs_that_need_it(
    tmp_path: Path, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`FileSystemView.build` over a real `LsmHistory`: two file groups whose archived logs need it,
    one read of the file covering them; a group with no later slice needs nothing."""
    h = _history(tmp_path)
    archived = [(B, _t(150), "deltacommit"), (D0, _t(250), "deltacommit"), (D1, _t(410), "deltacommit")]
    write_manifest(h, 1, [write_data_file(h, archived)])
    timeline = Timeline.of(
        [
            Instant(CMP, Action.COMMIT, State.COMPLETED, _t(450)),
            Instant(D2, Action.DELTA_COMMIT, State.COMPLETED, _t(510)),
        ]
    )
    listing = {
        "p": [
            _status(f"{FID}_0-1-0_{B}.parquet"),
            _status(f"{FID}_0-1-0_{CMP}.parquet"),
            _status(f".{FID}_{D0}.log.1_0-1-0"),
            _status(f".{FID}_{D1}.log.1_0-1-0"),
            _status(f".{FID}_{D2}.log.1_0-1-0"),
            _status(f"g2-0_0-1-0_{CMP}.parquet"),
            _status(f".g2-0_{D1}.log.1_0-1-0"),
            _status(f".g3-0_{D0}.log.1_0-1-0"),  # log-only group: no slice opened after it
        ]
    }
    reads: list[set[str]] = []

    def spy(storage: Storage, history_dir: str, instant_times: Iterable[str]) -> dict[str, ArchivedInstant]:
        reads.append(set(instant_times))
        return read_archived_instants(storage, history_dir, set(instant_times))

    monkeypatch.setattr(lsm_history, "read_archived_instants", spy)
    history = LsmHistory(storage, HISTORY)
    view = FileSystemView.build(
        timeline, listing, TimelineFacts(), table="t", logs_by_completion_time=True, history=history
    )
    slices = {
        (fg.file_id, s.base_instant_time): sorted(lf.base_instant_time for lf in s.log_files)
        for fg in view.file_groups.values()
        for s in fg.slices
    }
    assert slices == {
        (FID, CMP): [D1, D2],
        (FID, B): [D0],
        ("g2-0", CMP): [D1],
        ("g3-0", D0): [D0],
    }
    assert reads == [{D0, D1}]  # FID's and g2's archived logs, in one read; not g3's
