"""Debian's chromium, headless: screenshots and the DOM of a page, as a browser renders them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

# Screenshots kept after the run (CI keeps the workspace's files; gitignored).
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"


def _flags(profile: Path) -> list[str]:
    chromium = shutil.which("chromium")
    if chromium is None:  # a missing real part fails the run, never skips it
        pytest.fail("Debian's chromium is not on PATH (./run setup installs it)", pytrace=False)
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            f"--user-data-dir={profile}", "--window-size=1280,1600"]  # fmt: skip


def screenshot(url: str, path: Path, profile: Path) -> Path:
    """A PNG of `url` as Chromium renders it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shot = subprocess.run([*_flags(profile), f"--screenshot={path}", url], capture_output=True, timeout=120)
    assert path.is_file() and path.stat().st_size > 1000, shot.stderr.decode()[-2000:]
    return path


def dom(url: str, profile: Path) -> str:
    """The document after Chromium loaded `url`."""
    dumped = subprocess.run(
        [*_flags(profile), "--dump-dom", url], capture_output=True, timeout=120, check=True
    )
    return dumped.stdout.decode()
