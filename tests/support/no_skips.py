"""A pytest plugin (registered in tests/conftest.py): a skipped or xfail test fails the run.

Every test here runs against real parts (Spark with Hudi's bundle, ZooKeeper, Prometheus, hudi-rs,
chromium) that `./run setup` installs. A test that skipped when one is missing would let a run pass
without testing it, so a skip is reported as a failure naming its reason: `pytest.skip`, `skipif`,
`importorskip` inside a test, and a module skipped while it is collected (`importorskip` at import
time, `pytest.skip(..., allow_module_level=True)`), which pytest otherwise reports as one quiet skip
for every test the module holds. An `xfail` (marker or call, failing or passing) is a check whose
result nobody reads, so it fails too. Deselecting (`-k`, `-m`, `long`) is neither and stays allowed.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

_NOT_ALLOWED = "which this suite does not allow"
_SKIP_WHY = "(a real part must run, not skip)"
_XFAIL_WHY = "(a check must pass or fail, not be expected to fail)"


def _reason(longrepr: object) -> str:
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(reason).removeprefix("Skipped: ")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if hasattr(report, "wasxfail"):
        # xfailed (reported as skipped) and xpassed (reported as passed) alike.
        report.outcome = "failed"
        report.longrepr = f"marked xfail, {_NOT_ALLOWED} {_XFAIL_WHY}: {report.wasxfail or 'no reason given'}"
        del report.wasxfail
    elif report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped, {_NOT_ALLOWED} {_SKIP_WHY}: {_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped:
        report.outcome = "failed"
        reason = _reason(report.longrepr)
        report.longrepr = f"{collector.nodeid} skipped while collected, {_NOT_ALLOWED} {_SKIP_WHY}: {reason}"
