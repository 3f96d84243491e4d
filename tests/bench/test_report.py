"""`docs/benchmarks.md`'s generated blocks are exactly what their committed result files give: a
hand-edited figure, or a result file committed without regenerating, fails here."""

from __future__ import annotations

import json

import pytest

from bench import report


def test_benchmarks_md_is_what_its_committed_result_files_give() -> None:
    text = report.DOC.read_text(encoding="utf-8")
    blocks = report.BLOCK.findall(text)
    assert blocks, "docs/benchmarks.md has no generated block"
    assert report.regenerate(text) == text, "run `python -m bench.report` and commit docs/benchmarks.md"


def test_a_hand_edited_figure_is_told_apart() -> None:
    text = report.DOC.read_text(encoding="utf-8")
    match = report.BLOCK.search(text)
    assert match is not None
    body = match["body"]
    edited = body.replace("| ours |", "| ours (edited) |", 1) if "| ours |" in body else body + "x"
    tampered = text[: match.start("body")] + edited + text[match.end("body") :]
    assert report.regenerate(tampered) == text != tampered


def test_every_result_file_under_docs_results_is_shown(tmp_path: object) -> None:
    text = report.DOC.read_text(encoding="utf-8")
    shown = {m["file"] for m in report.BLOCK.finditer(text)}
    committed = {p.name for p in report.RESULTS.glob("*.json")}
    assert committed <= shown, f"result files no block shows: {sorted(committed - shown)}"
    for name in committed:  # each is a document the renderers know
        document = json.loads((report.RESULTS / name).read_text(encoding="utf-8"))
        assert report.renderer_for(document["benchmark"]), name


def test_a_missing_result_file_is_an_error_naming_it() -> None:
    text = (
        "<!-- generated from docs/results/nowhere.json by `python -m bench.report`; do not edit -->\n"
        "old\n<!-- end generated -->\n"
    )
    with pytest.raises(FileNotFoundError, match=r"nowhere\.json"):
        report.regenerate(text)
