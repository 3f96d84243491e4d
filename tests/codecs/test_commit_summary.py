"""Commit summaries: what `decode_commit` gives, without write stats, failing on exactly the same files."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import fastavro
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
from service.table.codecs.avro_file import schema_json
from service.table.codecs.commit import _stats_projection
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
    summary = _summary(data, replace)
    assert summary == full
    # As the timeline reads it: in chunks, a few bytes each (a stat, a key, a number cut in two).
    assert _summary([data[i : i + 5] for i in range(0, len(data), 5)], replace) == full
    return summary


def _summary(data: bytes | list[bytes], replace: bool, avro: bool = False) -> tuple[str, object]:
    try:
        return ("ok", decode_commit_summary(data, SOURCE, replace, avro=avro))
    except CorruptTableError as e:
        return ("error", str(e))


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


@settings(max_examples=100, deadline=None)
@given(models(ReplaceCommitMetadata))
def test_commit_summary_equals_the_full_decode_of_avro_replacecommits(
    metadata: ReplaceCommitMetadata,
) -> None:
    """Layout 2's Avro files: the stats are skipped by a projection of the writer schema."""
    data = codecs.encode_commit(_without_nulls_in_maps(metadata), avro=True)
    assert _stats_projection(data) is not None
    full = CommitSummary.of(codecs.decode_commit(ReplaceCommitMetadata, data, SOURCE, avro=True))
    assert _summary(data, replace=True, avro=True) == ("ok", full)


def _without_nulls_in_maps(metadata: ReplaceCommitMetadata) -> ReplaceCommitMetadata:
    """What Avro's maps of strings and longs can hold (the generator also makes JSON's nulls)."""

    def stat(s: codecs.WriteStat) -> codecs.WriteStat:
        cdc = None if s.cdc_stats is None else {k: v for k, v in s.cdc_stats.items() if v is not None}
        return s.model_copy(update={"cdc_stats": cdc})

    stats = {p: tuple(map(stat, ss)) for p, ss in metadata.partition_to_write_stats.items()}
    extra = {k: v for k, v in metadata.extra_metadata.items() if v is not None}
    return metadata.model_copy(update={"partition_to_write_stats": stats, "extra_metadata": extra})


def _avro_commit(stat_type: object, value: object) -> bytes:
    """An Avro commit whose writer schema gives `numWrites` another type, one stat holding `value`."""
    schema = copy.deepcopy(schema_json("HoodieCommitMetadata"))
    stat = schema["fields"][0]["type"][1]["values"]["items"]
    stat["fields"] = [{**f, "type": stat_type} if f["name"] == "numWrites" else f for f in stat["fields"]]
    out = io.BytesIO()
    record = {
        "partitionToWriteStats": {"p": [{"fileId": "f", "numWrites": value}]},
        "operationType": "UPSERT",
    }
    fastavro.writer(out, fastavro.parse_schema(schema, named_schemas={}), [record])
    return out.getvalue()


@pytest.mark.parametrize(
    ("stat_type", "value", "projected", "accepted"),
    [
        (["null", "long"], 5, True, True),
        (["null", "int"], 5, True, True),
        (["null", "string"], "12", False, True),  # Jackson's coercion, checked stat by stat
        (["null", "string"], "many", False, False),
        (["null", "double"], 1.5, False, False),
        (["null", {"type": "long", "logicalType": "timestamp-millis"}], 5, False, False),
    ],
)
def test_an_avro_writer_schema_that_lets_a_stat_fail_is_checked_stat_by_stat(
    stat_type: object, value: object, projected: bool, accepted: bool
) -> None:
    data = _avro_commit(stat_type, value)
    assert (_stats_projection(data) is not None) is projected
    try:
        full: tuple[str, object] = (
            "ok",
            CommitSummary.of(codecs.decode_commit(CommitMetadata, data, SOURCE, avro=True)),
        )
    except CorruptTableError as e:
        full = ("error", str(e))
    assert _summary(data, replace=False, avro=True) == full
    assert (full[0] == "ok") is accepted


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


def test_a_huge_commit_is_summarized_a_stat_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON of a commit that wrote many files is never decoded whole: `json.loads` is not called
    and no decoded value is larger than a stat."""
    data = _with_stats(*[_plain_stat(fileId=f"f{i}") for i in range(2_000)])
    stat_size = len(json.dumps(_plain_stat()))
    biggest = 0
    raw_decode = json.JSONDecoder.raw_decode

    def watched(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[Any, int]:
        nonlocal biggest
        value, end = raw_decode(self, s, idx)
        biggest = max(biggest, end - idx)
        return value, end

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", watched)
    monkeypatch.setattr(json, "loads", None)
    chunks = [data[i : i + 4096] for i in range(0, len(data), 4096)]
    summary = decode_commit_summary(chunks, SOURCE, replace=False)
    assert summary.partitions_written == ("p", "q")
    assert 0 < biggest < stat_size + 50


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
