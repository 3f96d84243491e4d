"""Real Hudi histories with the metadata table ON (Hudi's default), built once per test session.

Each crosses the MDT's own compaction (`hoodie.metadata.compact.max.delta.commits` lowered to 3), so
the `files` partition holds an HFile base file (`files-0000-0_..._<T>001.hfile`) and HFile data
blocks in log files after it; and covers inserts, upserts, an insert_overwrite (replaced file
groups), Hudi's own clean, and the rollback of a failed write.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory, _Builder, batch_ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The metadata table as Hudi writers run it by default, compacted every 3 deltacommits so a short
# history crosses a compaction (and with it the MDT's own clean) quickly.
MDT_ON: Mapping[str, str] = {
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.compact.max.delta.commits": "3",
}
MDT_INDEXES: Mapping[str, str] = {
    **MDT_ON,
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.bloom.filter.enable": "true",
}


@dataclass(frozen=True)
class MdtHistory:
    """The history, the instant of its failed (then rolled back) write, and a copy of the table taken
    right after the insert_overwrite (before Hudi's clean removed the replaced file groups)."""

    history: HudiHistory
    failed_instant: str
    after_replace: Path


def build_mdt_history(
    spark: SparkSession, base_path: Path, opts: Mapping[str, str] = MDT_ON, name: str = "mdt_files"
) -> MdtHistory:
    b = _Builder(spark, name, base_path, partitioned=True, opts=opts)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    b.write("upsert", list(range(0, 30)), batch=2)
    b.write("insert", batch_ids(2), batch=3)
    asia = [i for i in range(1000, 1030) if ht.PARTITIONS[i % 3] == "asia"]
    b.write("insert_overwrite", asia, batch=4)
    after_replace = base_path.parent / f"{name}_after_replace"
    shutil.copytree(base_path, after_replace, symlinks=True)
    failed = ht.write_failing(
        spark,
        base_path,
        ht.generate(spark, range(10, 40), batch=5),
        "upsert",
        b.name,
        partition_fields=b.partition_fields,
        extra_opts=opts,
    )
    b.write("upsert", list(range(60, 75)), batch=6, extra={"hoodie.cleaner.policy.failed.writes": "EAGER"})
    # Hudi's own clean, inline after this commit: keeps the last 2 commits' file versions.
    b.write(
        "upsert",
        list(range(0, 180, 7)),
        batch=7,
        extra={"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2"},
    )
    b.write("upsert", list(range(120, 135)), batch=8)
    return MdtHistory(b.finish(), failed, after_replace)


def build_mdt_indexes_history(spark: SparkSession, base_path: Path) -> HudiHistory:
    """A shorter history with the `column_stats` and `bloom_filters` MDT partitions too."""
    b = _Builder(spark, "mdt_indexes", base_path, partitioned=True, opts=MDT_INDEXES)
    b.write("insert", batch_ids(0), batch=0)
    b.write("upsert", list(range(0, 30)), batch=1)
    b.write("insert", batch_ids(1), batch=2)
    b.write("upsert", list(range(60, 90, 2)), batch=3)
    return b.finish()


@pytest.fixture(scope="session")
def mdt_indexes_built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> HudiHistory:
    """A Hudi history with the `column_stats` and `bloom_filters` MDT partitions (read-only: copy it)."""
    return build_mdt_indexes_history(spark, tmp_path_factory.mktemp("mdt-indexes") / "mdt_indexes")


@pytest.fixture(scope="session")
def mdt_history_built(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> MdtHistory:
    """Hudi's default MDT (`files` only) across its own compaction (read-only: copy it)."""
    return build_mdt_history(spark, tmp_path_factory.mktemp("mdt-history") / "mdt_files")
