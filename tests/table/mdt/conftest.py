"""MDT fixtures shared by several test modules: each Hudi history is built once per session."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.histories import HudiHistory
from tests.support.mdt_histories import MdtHistory, build_mdt_history, build_mdt_indexes_history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def mdt_indexes_built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> HudiHistory:
    """A Hudi history with the `column_stats` and `bloom_filters` MDT partitions (read-only: copy it)."""
    return build_mdt_indexes_history(spark, tmp_path_factory.mktemp("mdt-indexes") / "mdt_indexes")


@pytest.fixture(scope="session")
def mdt_history_built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> MdtHistory:
    """Hudi's default MDT (`files` only) across its own compaction (read-only: copy it)."""
    return build_mdt_history(spark, tmp_path_factory.mktemp("mdt-history") / "mdt_files")


@pytest.fixture
def mdt_history(mdt_history_built: MdtHistory, tmp_path: Path) -> HudiHistory:
    """A private copy of `mdt_history_built`'s table, to write to."""
    return mdt_history_built.history.copy_to(tmp_path / "mdt_files")
