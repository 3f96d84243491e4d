"""The write stat counts of a compacted slice (`numInserts`, `numUpdateWrites`, `numDeletes`), computed
with Arrow, against the key -> commit time dict they are defined by (pure logic)."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from service.executor.compaction_job import record_counts

_KEY = "_hoodie_record_key"
_TIME = "_hoodie_commit_time"


def _dict_counts(
    base: list[tuple[str | None, str | None]] | None, out: list[tuple[str | None, str | None]]
) -> tuple[int, int, int]:
    times = dict(base or [])
    keys = [k for k, _ in out]
    inserts = sum(1 for k in keys if k not in times)
    updates = sum(1 for k, t in out if k in times and times[k] != t)
    deletes = len(set(times) - set(keys)) if base is not None else 0
    return inserts, updates, deletes


def _table(rows: list[tuple[str | None, str | None]]) -> pa.Table:
    return pa.table(
        {
            _KEY: pa.array([k for k, _ in rows], pa.string()),
            _TIME: pa.array([t for _, t in rows], pa.string()),
        }
    )


def test_record_counts_of_a_typical_slice() -> None:
    base = [("a", "001"), ("b", "001"), ("c", "001")]
    out = [("a", "001"), ("b", "003"), ("d", "003")]  # a kept, b updated, c deleted, d inserted
    assert record_counts(_table(base), _table(out)) == (1, 1, 1)
    assert record_counts(None, _table(out)) == (3, 0, 0)


@pytest.mark.parametrize("seed", range(100))
def test_record_counts_agree_with_the_dict_definition(seed: int) -> None:
    """Repeated base keys (the last row's time counts), null keys and times included."""
    rng = random.Random(seed)
    keys = [None, *(str(k) for k in range(6))]
    times = [None, "001", "002", "003"]
    base = [(rng.choice(keys), rng.choice(times)) for _ in range(rng.randint(0, 8))]
    out = [(k, rng.choice(times)) for k in rng.sample(keys, rng.randint(0, len(keys)))]
    assert record_counts(_table(base), _table(out)) == _dict_counts(base, out)
