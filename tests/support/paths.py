"""Where the project's caches live: outside the clone, so CI reuses them and works without them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HTS_HOME = Path(os.environ.get("HTS_HOME", Path.home() / ".cache" / "hudi-table-service"))
JARS_DIR = HTS_HOME / "jars"
HUDI_BUNDLE = JARS_DIR / "hudi-spark3.5-bundle_2.12-0.15.0.jar"
JAVA_BUILD_DIR = HTS_HOME / "java-test-classes"
REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"
