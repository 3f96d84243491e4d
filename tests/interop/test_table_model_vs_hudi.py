"""The table model against real Hudi: histories written by Hudi's Spark writer, read three ways.

`status --json` (the project's view) must list exactly the live file groups and latest base files
that Hudi's own file-system view (`show_fsview_latest`) and hudi-rs report; every timeline file Hudi
wrote must decode with our codecs and re-encode into bytes Hudi's own deserializers accept.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from service.cli import main as cli_main
from service.table import codecs
from service.table.instant import Action, State, is_timeline_file_name, parse_instant_file_name
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory
from tests.support.jvm import run_java

pytestmark = [pytest.mark.spark, pytest.mark.hudi, pytest.mark.slow]

HISTORIES = [
    "history_many_commits",
    "history_with_replace",
    "history_with_rollback",
    "history_with_clean",
    "history_nonpartitioned",
]


def status_json(base_path: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["status", "--base-path", str(base_path), "--json"]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def ours(status: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return sorted(
        (g["partition_path"], g["file_id"], g["base_instant"], g["base_file"]) for g in status["file_groups"]
    )


@pytest.mark.parametrize("history_name", HISTORIES)
def test_status_json_lists_what_hudi_and_hudi_rs_see(
    history_name: str, request: pytest.FixtureRequest, spark: Any
) -> None:
    history: HudiHistory = request.getfixturevalue(history_name)
    status = status_json(history.base_path)
    mine = ours(status)
    hudi = sorted(
        (s.partition, s.file_id, s.base_instant, s.base_file)
        for s in ht.hudi_latest_file_slices(spark, history.base_path)
    )
    rs = sorted(
        (s.partition, s.file_id, s.base_instant, s.base_file)
        for s in ht.hudi_rs_file_slices(history.base_path)
    )
    assert mine, "a history always has live file groups"
    assert mine == hudi
    assert mine == rs
    # The instants listed are exactly the timeline's, in order, with Hudi's action names.
    names = sorted(p.name for p in (history.base_path / ".hoodie").iterdir() if is_timeline_file_name(p.name))
    expected_times = sorted({parse_instant_file_name(n).timestamp for n in names})
    assert [i["timestamp"] for i in status["instants"]] == expected_times
    assert status["table"] == {
        **status["table"],
        "name": history.table_name,
        "type": "COPY_ON_WRITE",
        "version": 6,
    }


def test_status_sees_replaced_and_rolled_back_state(
    history_with_replace: HudiHistory, history_with_rollback: HudiHistory
) -> None:
    replaced = status_json(history_with_replace.base_path)
    assert replaced["replaced_file_groups"] > 0
    assert any(i["action"] == "replacecommit" and i["state"] == "COMPLETED" for i in replaced["instants"])
    rolled = status_json(history_with_rollback.base_path)
    assert any(i["action"] == "rollback" and i["state"] == "COMPLETED" for i in rolled["instants"])
    assert rolled["uncommitted_files"] == 0  # Hudi's rollback deleted the failed write's files


_MODEL_BY_SUFFIX: dict[tuple[Action, State], tuple[type[Any], str]] = {
    (Action.COMMIT, State.COMPLETED): (codecs.CommitMetadata, "HoodieCommitMetadata"),
    (Action.REPLACE_COMMIT, State.COMPLETED): (codecs.ReplaceCommitMetadata, "HoodieReplaceCommitMetadata"),
    (Action.REPLACE_COMMIT, State.REQUESTED): (
        codecs.RequestedReplaceMetadata,
        "HoodieRequestedReplaceMetadata",
    ),
    (Action.CLEAN, State.REQUESTED): (codecs.CleanerPlan, "HoodieCleanerPlan"),
    (Action.CLEAN, State.INFLIGHT): (codecs.CleanerPlan, "HoodieCleanerPlan"),
    (Action.CLEAN, State.COMPLETED): (codecs.CleanMetadata, "HoodieCleanMetadata"),
    (Action.ROLLBACK, State.REQUESTED): (codecs.RollbackPlan, "HoodieRollbackPlan"),
    (Action.ROLLBACK, State.COMPLETED): (codecs.RollbackMetadata, "HoodieRollbackMetadata"),
}


def test_every_hudi_timeline_file_decodes_and_reencodes_for_hudi(
    history_with_replace: HudiHistory,
    history_with_rollback: HudiHistory,
    history_with_clean: HudiHistory,
    tmp_path: Path,
) -> None:
    """Hudi-written files decode with our codecs; re-encoded, Java decodes them as it does the originals."""
    seen: set[str] = set()
    for history in (history_with_replace, history_with_rollback, history_with_clean):
        for path in sorted((history.base_path / ".hoodie").iterdir()):
            if not is_timeline_file_name(path.name):
                continue
            instant = parse_instant_file_name(path.name)
            entry = _MODEL_BY_SUFFIX.get((instant.action, instant.state))
            data = path.read_bytes()
            if entry is None or not data:
                continue
            model_type, java_kind = entry
            model = codecs.decode(model_type, data, str(path))
            again = codecs.encode(model)
            stem = f"{history.name}-{path.name.replace('.', '_')}"
            (tmp_path / f"{stem}-orig.{java_kind}.bin").write_bytes(data)
            (tmp_path / f"{stem}-ours.{java_kind}.bin").write_bytes(again)
            assert codecs.decode(model_type, again, "re-encoded") == model
            seen.add(java_kind)
    # The histories cover commits, insert_overwrite, Hudi's own cleaning and a rollback.
    assert {
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieCleanerPlan",
        "HoodieCleanMetadata",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
    } <= seen
    run_java("HudiTimelineDecode", "decode", str(tmp_path))
    errors = sorted(p.name for p in tmp_path.glob("*.err"))
    assert errors == [], [p.read_text() for p in tmp_path.glob("*.err")]
    for orig in tmp_path.glob("*-orig.*.out"):
        mine = orig.with_name(orig.name.replace("-orig.", "-ours."))
        theirs, again = json.loads(orig.read_text()), json.loads(mine.read_text())
        if "HoodieClean" in orig.name:
            # 0.15 added the optional top-level extraMetadata; our 0.14.1 schema reads past it and
            # does not write it, so Hudi reads it back as null (an optional field: read and may ignore).
            assert again.pop("extraMetadata") is None
            theirs.pop("extraMetadata")
        assert again == theirs, orig.name
