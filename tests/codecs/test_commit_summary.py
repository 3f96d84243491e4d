"""Commit summaries: what `decode_commit` gives, without write stats, failing on exactly the same files."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from service.errors import CorruptTableError
from service.table import codecs
from service.table.codecs import (
    CommitMetadata,
    CommitSummary,
    ReplaceCommitMetadata,
    decode_commit_summary,
)
from tests.codecs.strategies import models
from tests.codecs.test_commit_codec import CLUSTERING_COMMIT, DELTA_COMMIT, TABLE_SCHEMA

SOURCE = ".hoodie/1.replacecommit"


def _outcome(data: bytes, replace: bool) -> tuple[str, object]:
    """("ok", summary) or ("error", message) of both decoders, asserting they agree."""
    model = ReplaceCommitMetadata if replace else CommitMetadata
    try:
        full: tuple[str, object] = ("ok", CommitSummary.of(codecs.decode_commit(model, data, SOURCE)))
    except CorruptTableError as e:
        full = ("error", str(e))
    try:
        summary: tuple[str, object] = ("ok", decode_commit_summary(data, SOURCE, replace))
    except CorruptTableError as e:
        summary = ("error", str(e))
    assert summary == full
    return summary


def _plain_stat(**changes: Any) -> dict[str, Any]:
    stat = json.loads(CLUSTERING_COMMIT)["partitionToWriteStats"]["30"][0]
    stat.update(changes)
    return stat


def _with_stats(*stats: object, **top: Any) -> bytes:
    return json.dumps({"partitionToWriteStats": {"p": list(stats), "q": []}, **top}).encode()


def test_commit_summary_of_a_clustering_replacecommit() -> None:
    _, summary = _outcome(CLUSTERING_COMMIT.encode(), replace=True)
    assert isinstance(summary, CommitSummary)
    assert summary.partitions_written == ("30",)
    assert summary.partitions() == {"30", "20"}
    assert summary.replaced_file_groups() == {
        ("30", "d398fae1-0000-0000-0000-000000000000-0"),
        ("30", "88163884-0000-0000-0000-000000000000-0"),
    }
    assert summary.operation_type is codecs.WriteOperationType.CLUSTER
    assert summary.table_schema == TABLE_SCHEMA


def test_commit_summary_of_a_plain_commit_ignores_the_replace_field() -> None:
    data = _with_stats(_plain_stat(), partitionToReplaceFileIds={"r": ["f"]})
    _, summary = _outcome(data, replace=False)
    assert isinstance(summary, CommitSummary)
    assert summary.partitions() == {"p", "q"}
    assert summary.replaced_file_groups() == frozenset()


def test_commit_summary_of_a_delta_commit_and_an_empty_file() -> None:
    _, summary = _outcome(DELTA_COMMIT.encode(), replace=False)
    assert isinstance(summary, CommitSummary) and summary.partitions() == {""}
    assert _outcome(b"", replace=True) == ("ok", CommitSummary())


@settings(max_examples=100, deadline=None)
@given(models(CommitMetadata))
def test_commit_summary_equals_the_full_decode_of_commits(metadata: CommitMetadata) -> None:
    assert _outcome(codecs.encode(metadata), replace=False) == ("ok", CommitSummary.of(metadata))


@settings(max_examples=100, deadline=None)
@given(models(ReplaceCommitMetadata))
def test_commit_summary_equals_the_full_decode_of_replacecommits(metadata: ReplaceCommitMetadata) -> None:
    assert _outcome(codecs.encode(metadata), replace=True) == ("ok", CommitSummary.of(metadata))


@pytest.mark.parametrize(
    ("changes", "accepted"),
    [
        ({"numWrites": "12"}, True),  # Jackson coerces numeric strings
        ({"numWrites": 12.0}, True),
        ({"fileId": 7}, True),  # and scalars to text
        ({"path": True}, True),
        ({"minEventTime": None, "numDeletes": None}, True),
        ({"runtimeStats": {"totalScanTime": 1, "future": "x"}}, True),  # unknown nested field ignored
        ({"cdcStats": {"a": 1, "b": None}}, True),
        ({"someDeltaField": [1, {"x": 2.5}]}, True),
        ({"numWrites": "many"}, False),
        ({"numWrites": 1.5}, False),
        ({"numWrites": True}, False),
        ({"numWrites": 2**63}, False),
        ({"totalWriteBytes": -(2**63) - 1}, False),
        ({"maxEventTime": [1]}, False),
        ({"numInserts": {"n": 1}}, False),
        ({"path": ["a"]}, False),
        ({"partitionPath": 1.5}, False),
        ({"runtimeStats": [1]}, False),
        ({"runtimeStats": {"totalUpsertTime": 1.5}}, False),
        ({"runtimeStats": {"totalCreateTime": 2**64}}, False),
        ({"cdcStats": {"a": "x"}}, False),
        ({"cdcStats": 3}, False),
    ],
)
def test_commit_summary_accepts_and_rejects_stats_as_the_full_decode(
    changes: dict[str, Any], accepted: bool
) -> None:
    # The plain stat first: the second one has the same keys (a cached shape) unless a type changed.
    kind, result = _outcome(_with_stats(_plain_stat(), _plain_stat(**changes)), replace=True)
    assert (kind == "ok") is accepted
    if not accepted:
        assert SOURCE in str(result) and "partitionToWriteStats.p" in str(result)


@pytest.mark.parametrize("stat", [None, "x", 3, []])
def test_commit_summary_of_stats_that_are_not_objects(stat: object) -> None:
    kind, _ = _outcome(_with_stats(_plain_stat(), stat), replace=True)
    assert (kind == "ok") is (stat is None)


def test_commit_summary_reports_the_first_error_in_file_order() -> None:
    data = _with_stats(_plain_stat(numWrites="many"), compacted="yes", operationType="NOPE")
    kind, message = _outcome(data, replace=True)
    assert kind == "error" and "numWrites" in str(message)
    kind, message = _outcome(_with_stats(_plain_stat(), compacted="yes", operationType="NOPE"), replace=True)
    assert kind == "error" and "compacted" in str(message)


@pytest.mark.parametrize(
    "text",
    [
        "{",
        "[]",
        '{"partitionToWriteStats": []}',
        '{"partitionToWriteStats": {"p": {}}}',
        '{"extraMetadata": {"schema": 1.5}}',
        '{"operationType": "cluster"}',
        '{"partitionToReplaceFileIds": {"p": [1]}}',
        '{"partitionToReplaceFileIds": {"p": "f"}}',
    ],
)
def test_commit_summary_rejects_what_the_full_decode_rejects(text: str) -> None:
    for replace in (True, False):
        kind, message = _outcome(text.encode(), replace)
        if kind == "error":
            assert SOURCE in str(message)
    assert _outcome(text.encode(), replace=True)[0] == "error"


def test_commit_summary_rejects_non_utf8() -> None:
    assert _outcome(b'{"extraMetadata": {"a": "\xff"}}', replace=False)[0] == "error"


def test_summaries_of_different_commits_share_one_copy_of_their_repeated_strings() -> None:
    """The daemon caches a summary of every completed commit of every table, and each of Hudi's
    writes repeats the table's schema (kilobytes) and its partition paths: one copy per process."""
    first, second = (
        decode_commit_summary(CLUSTERING_COMMIT.replace("30", "2024/01/30").encode(), SOURCE, True)
        for _ in range(2)
    )
    assert first.table_schema == TABLE_SCHEMA
    assert first.table_schema is second.table_schema
    assert first.partitions_written == ("2024/01/30",)
    assert first.partitions_written[0] is second.partitions_written[0]
