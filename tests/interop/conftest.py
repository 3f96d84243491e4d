"""Fixtures the interop modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import leaks
from tests.support.hudi_jvm import HudiJvm, hudi_jvm


@pytest.fixture(scope="module", params=["1.0.2", "1.1.1"])
def hudi1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HudiJvm]:
    """A child process with Hudi 1.0.2's (table version 8), then 1.1.1's (version 9) Spark bundle,
    one per module and version: one bundle per JVM."""
    root = tmp_path_factory.mktemp(f"hudi-{request.param}")
    before = leaks.snapshot()
    with hudi_jvm(request.param, root / "jvm") as jvm:
        leaks.expect_started_since(before)  # the child, its JVM and their Python workers live for the module
        yield jvm
