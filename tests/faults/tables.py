"""The fault tests' tables: written by real Hudi 0.15 on first use, read-only (cases copy them).
A pytest plugin (tests/conftest.py): `check`'s tests use the merge-on-read one too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.faults.matrix import TableType
from tests.support import hudi_tables as ht
from tests.support.histories import HudiHistory, _Builder, batch_ids
from tests.support.mdt_histories import MDT_INDEXES
from tests.support.mor_tables import mor_options

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FaultTable:
    """A history for the services (`base`), and a copy of it with a failed write of Hudi's on top."""

    base: HudiHistory
    failed: HudiHistory
    failed_instant: str


def _build(spark: SparkSession, root: Path, table_type: TableType) -> FaultTable:
    name = f"faults_{table_type.name.lower()}"
    opts = dict(MDT_INDEXES) if table_type is TableType.COW else mor_options(MDT_INDEXES)
    b = _Builder(spark, name, root / name, partitioned=True, opts=opts)
    b.write("insert", batch_ids(0), batch=0)
    b.write("insert", batch_ids(1), batch=1)
    b.write("upsert", list(range(0, 30)), batch=2)
    if table_type is TableType.MOR:
        # Hudi compacts inline after this deltacommit: the slices before it are the clean's to delete.
        inline = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
        b.write("upsert", list(range(30, 60, 2)), batch=3, extra=inline)
    b.write("insert", batch_ids(2), batch=4)
    b.write("upsert", list(range(0, 120, 4)), batch=5)  # new versions (COW), logs (MOR)
    base = b.finish()
    failed = base.copy_to(root / f"{name}_failed")
    # Updates (new versions or log blocks) and inserts (new file groups), never completed.
    df = ht.generate(spark, [*range(10, 40, 3), *range(5000, 5012)], batch=9)
    instant = ht.write_failing(
        spark, failed.base_path, df, "upsert", name, partition_fields=base.partition_fields, extra_opts=opts
    )
    return FaultTable(base, failed, instant)


class FaultTables:
    """Each table type's tables, built by Hudi 0.15 on first use (read-only: cases copy them)."""

    def __init__(self, spark: SparkSession, root: Path) -> None:
        self.spark, self.root, self.built = spark, root, dict[TableType, FaultTable]()

    def get(self, table_type: TableType) -> FaultTable:
        if table_type not in self.built:
            self.built[table_type] = _build(self.spark, self.root, table_type)
        return self.built[table_type]


@pytest.fixture(scope="session")
def fault_tables(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> FaultTables:
    return FaultTables(spark, tmp_path_factory.mktemp("faults"))
