"""Fixtures of the fault tests."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.faults.tables import FaultTables

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def fault_tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> FaultTables:
    return FaultTables(spark, tmp_path_factory.mktemp("faults"))
