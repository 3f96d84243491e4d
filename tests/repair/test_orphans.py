"""`strategies.orphans.classify` (pure): which uncommitted files are orphans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strategies.orphans import Candidate, classify

NOW = datetime(2024, 1, 3, tzinfo=UTC)
DAY = timedelta(hours=24)


def _c(path: str, instant: str, hours_old: float | None) -> Candidate:
    return Candidate(path, instant, 10, None if hours_old is None else NOW - timedelta(hours=hours_old))


def test_only_old_files_of_no_pending_instant_that_the_metadata_table_does_not_list_are_orphans() -> None:
    candidates = [
        _c("p/orphan.parquet", "20240101000000000", 48),
        _c("p/pending.parquet", "20240101010000000", 48),
        _c("p/young.parquet", "20240101020000000", 2),
        _c("p/unknown-age.parquet", "20240101030000000", None),
        _c("p/listed.parquet", "20240101040000000", 48),
    ]
    verdict = classify(
        candidates, frozenset({"20240101010000000"}), frozenset({"p/listed.parquet"}), NOW, DAY
    )
    assert [o.path for o in verdict.orphans] == ["p/orphan.parquet"]
    why = {k.path: k.why for k in verdict.kept}
    assert "pending" in why["p/pending.parquet"] and "safety age" in why["p/young.parquet"]
    assert "safety age" in why["p/unknown-age.parquet"] and "metadata table" in why["p/listed.parquet"]


def test_a_pending_instants_file_is_kept_whatever_its_age() -> None:
    old = _c("p/a.parquet", "20200101000000000", 24 * 365)
    assert classify([old], frozenset({old.instant}), None, NOW, DAY).orphans == ()
    assert classify([old], frozenset(), None, NOW, DAY).orphans == (old,)
