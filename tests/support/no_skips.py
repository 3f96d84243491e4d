"""A pytest plugin (registered in tests/conftest.py): a skipped test fails the run.

Every test here runs against real parts (Spark with Hudi's bundle, ZooKeeper, Prometheus, hudi-rs,
chromium) that `./run setup` installs. A test that skipped when one is missing would let a run pass
without testing it, so a skip (`pytest.skip`, `skipif`, `importorskip`) is reported as a failure
naming its reason. Deselecting (`-k`, `-m`) is not skipping and stays allowed.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (
            f"skipped, which this suite does not allow (a real part must run, not skip): {reason}"
        )
