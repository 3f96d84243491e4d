"""What `SparkExecutor` ships to executors' Python workers for a non-local master."""

from __future__ import annotations

import shutil
import zipfile

from service.executor.session import _project_zip


def test_project_zip_ships_service_and_strategies_but_not_the_demo_writer() -> None:
    target = _project_zip()
    try:
        with zipfile.ZipFile(target) as archive:
            names = set(archive.namelist())
    finally:
        shutil.rmtree(target.parent)
    # what group jobs import on an executor
    assert {
        "service/__init__.py",
        "service/table/base_file_writer.py",
        "service/table/codecs/schemas/HoodieCleanerPlan.avsc",
        "service/executor/clustering_job.py",
        "service/executor/compaction_job.py",
        "strategies/execution/sort_and_size.py",
        "strategies/layout/curve.py",
    } <= names
    # the demo's Hudi writer runs on the driver only
    assert not [name for name in names if name.startswith("service/demo/")]
    assert not [name for name in names if "__pycache__" in name]
