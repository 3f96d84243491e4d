"""The merged read of merge-on-read file slices on tables Hudi 1.0.2 (version 8) and 1.1.1 (version 9)
wrote, against Hudi 1.x's own snapshot read: the base of compaction and clustering on those tables.

Hudi 1.x names the merge in `hoodie.record.merge.mode`: EVENT_TIME_ORDERING (its default with an
ordering field) and COMMIT_TIME_ORDERING. Each table gets, over one insert: newer updates, updates
older than the base and older than a log record, updates with an equal ordering value, deletes with a
lower and a higher ordering value, and `_hoodie_is_deleted` rows. Our merged read of every latest
slice must hold exactly Hudi's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from service.table.log_format.merge import MergeConfig, PayloadClass
from service.table.log_format.slice_reader import instant_filter, read_file_slice
from service.table.table import HudiTable
from tests.support.hudi1_histories import writer_options
from tests.support.hudi_jvm import HudiJvm

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

SCHEMA = "id long, region string, ts long, value string, _hoodie_is_deleted boolean"
MODES = ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]


def _rows(ids: Sequence[int], ts: int, tag: str, deleted: bool = False) -> list[dict[str, Any]]:
    return [
        {
            "id": i,
            "region": ("americas", "asia")[i % 2],
            "ts": ts,
            "value": f"{tag}{i}",
            "_hoodie_is_deleted": deleted,
        }
        for i in ids
    ]


def _build(jvm: HudiJvm, base: Path, mode: str) -> None:
    options = {
        **writer_options(base.name, "MERGE_ON_READ", False),
        "hoodie.record.merge.mode": mode,
        "hoodie.write.record.merge.mode": mode,
    }

    def write(rows: list[dict[str, Any]], operation: str) -> None:
        jvm.write(base, rows, SCHEMA, {**options, "hoodie.datasource.write.operation": operation})

    write(_rows(range(0, 16), 10, "a"), "insert")
    write(_rows(range(0, 6), 20, "b"), "upsert")  # newer
    write(_rows(range(3, 9), 5, "c"), "upsert")  # older than the log (3-5) and than the base (6-8)
    write(_rows([9, 10], 10, "d"), "upsert")  # equal ordering value
    write(_rows([11, 12], 1, "e"), "delete")  # a delete with a lower ordering value
    write(_rows([13], 99, "f"), "delete")  # a delete with a higher one
    write(_rows([14], 30, "g", deleted=True), "upsert")  # _hoodie_is_deleted, newer
    write(_rows([15], 1, "h", deleted=True), "upsert")  # _hoodie_is_deleted, older
    write(_rows([0, 1], 20, "i"), "upsert")  # equal to the log's
    # (Not written: an upsert after the deletes above. Hudi 1.0.2 and 1.1.1 then fail their own reads
    # comparing the delete's Integer 0 with the Long ordering value.)
    write(_rows([14], 25, "k"), "upsert")  # after a _hoodie_is_deleted row with a higher value


@pytest.fixture(scope="module")
def tables(hudi1: HudiJvm, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp(f"merge-{hudi1.version}")
    out = {}
    for mode in MODES:
        base = root / f"m{hudi1.table_version}_{mode.split('_')[0].lower()}"
        _build(hudi1, base, mode)
        out[mode] = base
    return out


def _our_rows(base: Path) -> list[tuple[Any, ...]]:
    table = HudiTable.open(str(base))
    timeline = table.load_timeline()
    view = table.load_view(timeline)
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    out = []
    for group in view.live_file_groups:
        assert group.latest_slice is not None
        merged = read_file_slice(table.storage, group.latest_slice, instant_filter(timeline), config)
        out += [(r["id"], r["region"], r["ts"], r["value"]) for r in merged.to_pylist()]
    return sorted(out)


@pytest.mark.parametrize("mode", MODES)
def test_merged_read_of_1x_slices_equals_hudis_snapshot(
    hudi1: HudiJvm, tables: dict[str, Path], mode: str
) -> None:
    base = tables[mode]
    table = HudiTable.open(str(base))
    assert table.config.raw.get("hoodie.record.merge.mode") == mode
    config = MergeConfig.from_table_properties(table.config.raw, table.name)
    expected_payload = (
        PayloadClass.DEFAULT if mode == "EVENT_TIME_ORDERING" else PayloadClass.OVERWRITE_WITH_LATEST
    )
    assert (config.payload_class, config.ordering_field) == (expected_payload, "ts")
    theirs = sorted(
        (r["id"], r["region"], r["ts"], r["value"])
        for r in hudi1.read(base, {"hoodie.metadata.enable": "false"})
    )
    assert _our_rows(base) == theirs
    by_id = {r[0]: r for r in theirs}
    if mode == "EVENT_TIME_ORDERING":
        assert by_id[3][3] == "b3" and by_id[6][3] == "a6"  # the older updates lost
        assert 14 not in by_id  # the later, lower update lost to the delete
    else:
        assert by_id[3][3] == "c3" and by_id[6][3] == "c6"  # the later write won
        assert by_id[14][3] == "k14"
    assert 13 not in by_id
