"""`python -m bench scale` end to end at its smallest size: every operation measured in a child of
its own, both cleans planning the same files, the result file and chart written."""

from __future__ import annotations

import json
from pathlib import Path

from bench import scale


def test_scale_bench_measures_every_operation_in_its_own_process(tmp_path: Path) -> None:
    payload = scale.run((3,), (9,), rounds=1, work_dir=tmp_path, results_dir=tmp_path / "results")
    [point] = payload["points"]
    assert point["files"] == scale.shape_of(3).data_files and point["table_version"] == 9
    assert point["plans_equal"] and point["operations"]["clean_files_planned"] > 0
    for name in scale.OPERATIONS:
        measured = point["operations"][name]
        # A child of its own: at least the interpreter and the service's imports, never the test's.
        assert 30 < measured["peak_rss_mb"]["median"] < 1024 and measured["seconds"]["median"] > 0
        assert measured["exit_codes"] == [0]
    written = json.loads((tmp_path / "results" / "scale.json").read_text())
    assert (
        written["points"][0]["operations"]["status"]["peak_rss_mb"]
        == point["operations"]["status"]["peak_rss_mb"]
    )
    assert (tmp_path / "results" / "scale.png").stat().st_size > 0
    assert written["goals"]["peak_mb_at_10m"]["met"] is None  # not measured at this size
