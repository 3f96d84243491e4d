"""MDT fixtures of the metadata-table tests; the histories themselves are session fixtures of
`tests.support.mdt_histories`, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.histories import HudiHistory
from tests.support.mdt_histories import MdtHistory


@pytest.fixture
def mdt_history(mdt_history_built: MdtHistory, tmp_path: Path) -> HudiHistory:
    """A private copy of `mdt_history_built`'s table, to write to."""
    return mdt_history_built.history.copy_to(tmp_path / "mdt_files")
