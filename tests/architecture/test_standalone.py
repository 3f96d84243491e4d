"""The repository stands alone: code and tests cite Hudi's classes and docs/, not documents kept elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()
OUTSIDE_DOCUMENTS = ("HUDI_FORMAT.md", "MDT_FORMAT.md", "MOR_FORMAT.md", "DECISIONS.md", "../shared")


def _python_files() -> list[Path]:
    files = []
    for package in ("service", "strategies", "bench", "tests"):
        files += [p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts and p != THIS]
    return sorted(files)


@pytest.mark.parametrize("path", _python_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_citation_of_documents_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    cited = [name for name in OUTSIDE_DOCUMENTS if name in text]
    assert not cited, f"{path.relative_to(ROOT)} cites {cited}: cite Hudi's class or docs/format.md instead"


def test_format_notes_cited_by_code_exist() -> None:
    """Sections of docs/format.md that code points to by title."""
    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    for title in ("The ZooKeeper lock", "What Hudi does under the table lock", "Base files"):
        assert f"\n## {title}\n" in text, title
