"""The suite cannot hang or skip its real parts.

Every test runs under a pytest-timeout limit, so a hung ZooKeeper, Spark or Hudi test fails the run
instead of running until CI's own limit: pyproject's default, longer for tests marked `slow` or
`spark` (tests/conftest.py), and the longest suites' own. A skipped test, a module skipped
while collected and an xfail fail the run (`tests/support/no_skips.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SLOW_TEST_TIMEOUT_S
from tests.daemon.test_cluster_soak import TIMEOUT_S as SOAK_TIMEOUT_S
from tests.support.paths import REPO_ROOT

MODULES = {
    "plain": "tests/clean/test_volume_breaker.py",
    "zk": "tests/lock/test_zookeeper_lock.py",
    "slow": "tests/clean/test_breaker_after_clustering_hudi.py",
    "spark_only": "tests/harness/test_harness.py",
    "demo": "tests/demo/test_live_demo.py",
    "soak": "tests/daemon/test_cluster_soak.py",
}


def _collected_timeouts() -> dict[str, set[float]]:
    """Module key -> the limits its tests get, as a fresh pytest session collects them."""
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "tests.support.timeout_report",
            "-p", "no:cacheprovider", *MODULES.values()]  # fmt: skip
    # Long variants collected too (the soak is one): their limits matter when they run.
    env = {**os.environ, "HTS_LONG_TESTS": "1"}
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, set[float]] = {key: set() for key in MODULES}
    for line in done.stdout.splitlines():
        if line.startswith("TIMEOUT "):
            _, seconds, nodeid = line.split(" ", 2)
            key = next(k for k, module in MODULES.items() if nodeid.startswith(module + "::"))
            found[key].add(float(seconds))
    return found


def test_every_test_has_a_timeout_longer_for_slow_suites() -> None:
    found = _collected_timeouts()
    assert found == {
        "plain": {300.0},
        "zk": {300.0},
        "slow": {float(SLOW_TEST_TIMEOUT_S)},
        "spark_only": {float(SLOW_TEST_TIMEOUT_S)},
        "demo": {1200.0},
        "soak": {float(SOAK_TIMEOUT_S)},
    }
    assert SOAK_TIMEOUT_S >= 120 + 240 + 600  # the default soak, its quiet period, and room to start


# Each way a module can pass a run without testing anything: its source, what the guarded run says,
# and pytest's own summary for the same module without the guard (exit 0).
_NOT_RUN = {
    "skip in a test": (
        "import pytest\n\n\ndef test_needs_a_part() -> None:\n    pytest.skip('the part is missing')\n",
        "not skip): the part is missing",
        "1 skipped",
    ),
    "module-level importorskip": (
        "import pytest\n\npytest.importorskip('no_such_part_here')\n\n\n"
        "def test_uses_it() -> None:\n    pass\n",
        "skipped while collected, which this suite does not allow (a real part must run, not skip): "
        "could not import 'no_such_part_here'",
        "1 skipped",
    ),
    "xfail that fails": (
        "import pytest\n\n\n@pytest.mark.xfail(reason='known gap')\n"
        "def test_gap() -> None:\n    assert False\n",
        "marked xfail, which this suite does not allow (a check must pass or fail, not be expected to fail): "
        "known gap",
        "1 xfailed",
    ),
    "xfail that passes": (
        "import pytest\n\n\n@pytest.mark.xfail(reason='fixed by now?')\ndef test_gap() -> None:\n    pass\n",
        "marked xfail, which this suite does not allow (a check must pass or fail, not be expected to fail): "
        "fixed by now?",
        "1 xpassed",
    ),
    "xfail called in a test": (
        "import pytest\n\n\ndef test_gap() -> None:\n    pytest.xfail('not done yet')\n",
        "marked xfail, which this suite does not allow (a check must pass or fail, not be expected to fail): "
        "not done yet",
        "1 xfailed",
    ),
}


@pytest.mark.parametrize("case", list(_NOT_RUN))
def test_a_test_that_does_not_run_fails_the_run(tmp_path: Path, case: str) -> None:
    """A skip (in a test or of a whole module while collected) or an xfail fails the run, naming its
    reason; without the plugin the same run passes (exit 0)."""
    source, guarded_says, plain_says = _NOT_RUN[case]
    (tmp_path / "test_case.py").write_text(source)
    # Beside a module that runs, as in the suite (a run of nothing but a skipped module exits 5).
    (tmp_path / "test_other.py").write_text("def test_runs() -> None:\n    pass\n")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
            str(tmp_path / "test_case.py"), str(tmp_path / "test_other.py")]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    guarded = subprocess.run([*argv, "-p", "tests.support.no_skips"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert guarded.returncode != 0, guarded.stdout
    assert guarded_says in " ".join(guarded.stdout.split()), guarded.stdout
    plain = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and f"1 passed, {plain_says}" in plain.stdout, plain.stdout
