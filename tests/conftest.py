"""Session-wide fixtures: one SparkSession with real Hudi, and real Hudi histories built once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.spark import SparkStart, start_spark

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytest_plugins = ["tests.support.histories"]


@pytest.fixture(scope="session")
def spark_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStart]:
    """The started session and its start-up time; starts on first use, stops at session end."""
    started = start_spark(tmp_path_factory.mktemp("spark"))
    yield started
    started.session.stop()


@pytest.fixture(scope="session")
def spark(spark_start: SparkStart) -> SparkSession:
    return spark_start.session
