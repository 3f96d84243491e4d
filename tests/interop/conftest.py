"""Fixtures the interop modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import leaks
from tests.support.hudi_jvm import HudiJvm, hudi_jvm


@pytest.fixture(scope="session", params=["1.0.2", "1.1.1", "1.2.0"])
def hudi1(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HudiJvm]:
    """A child process with Hudi 1.0.2's (table version 8), then 1.1.1's and 1.2.0's (version 9) Spark
    bundle (1.2.0's variants are long ones unless marked `hudi_1_2_in_ci`, `tests/conftest.py`): one
    bundle per JVM, one JVM per version for the session. pytest runs every 1.0.2 test of the session
    before the first 1.1.1 one, so one child runs at a time. A cold JVM writes Hudi's tables at half the
    speed of a warm one (class loading and JIT): a child per module cost CI minutes. What a module
    leaves in the child's session (catalog tables, `SET` options) is dropped when it ends
    (`pytest_runtest_teardown`)."""
    root = tmp_path_factory.mktemp(f"hudi-{request.param}")
    before = leaks.snapshot()
    with hudi_jvm(request.param, root / "jvm") as jvm:
        leaks.expect_started_since(before)  # the child, its JVM and their Python workers live for the session
        yield jvm


# The Hudi 1.x child the current module's tests used, until the module ends.
_used_by_module: dict[str, HudiJvm] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """When a module that used a Hudi 1.x child ends: forget its tables and options, so the next
    module's `create table` of the same name and its writes start from Hudi's defaults."""
    jvm = getattr(item, "funcargs", {}).get("hudi1")
    if isinstance(jvm, HudiJvm):
        _used_by_module[item.nodeid.split("::")[0]] = jvm
    if nextitem is not None and nextitem.module is item.module:
        return
    used = _used_by_module.pop(item.nodeid.split("::")[0], None)
    if used is not None:
        used.forget_session_state()
