"""MDT fixtures shared by several test modules: each Hudi history is built once per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.support.histories import HudiHistory
from tests.support.mdt_histories import build_mdt_indexes_history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def mdt_indexes_built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> HudiHistory:
    """A Hudi history with the `column_stats` and `bloom_filters` MDT partitions (read-only: copy it)."""
    return build_mdt_indexes_history(spark, tmp_path_factory.mktemp("mdt-indexes") / "mdt_indexes")
