"""`JsonStream` reads what `json.loads` reads, and refuses what it refuses with the same words, in
chunks of any size (pure logic: no stored file)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.table.codecs.json_stream import CHUNK_BYTES, JsonStream, JsonStreamError

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def _walk(stream: JsonStream) -> Any:
    """The value that starts here, descending into every object and array through the stream."""
    first = stream.peek()
    if first == "{":
        out: dict[str, Any] = {}
        for key in stream.members():
            out[key] = _walk(stream)
        return out
    if first == "[":
        return [_walk(stream) for _ in stream.elements()]
    return stream.value()


def _streamed(data: bytes, size: int) -> tuple[str, Any]:
    try:
        stream = JsonStream(_chunks(data, size))
        value = _walk(stream)
        stream.end()
    except JsonStreamError as e:
        return ("error", str(e))
    return ("ok", value)


def _loaded(data: bytes) -> tuple[str, Any]:
    try:
        return ("ok", json.loads(data.decode("utf-8")))
    except json.JSONDecodeError as e:
        return ("error", str(e))


@st.composite
def _documents(draw: st.DrawFn) -> bytes:
    """A JSON document, laid out compact, indented or with a stray byte inserted, dropped or cut."""
    text = json.dumps(
        draw(_VALUES), indent=draw(st.sampled_from([None, 0, 2])), ensure_ascii=draw(st.booleans())
    )
    data = text.encode()
    damage = draw(st.sampled_from(["none", "insert", "drop", "cut"]))
    at = draw(st.integers(min_value=0, max_value=len(data)))
    if damage == "insert":
        data = (
            data[:at] + draw(st.sampled_from([b",", b"]", b"}", b":", b'"', b"1", b" x", b"{"])) + data[at:]
        )
    elif damage == "drop" and data:
        at = min(at, len(data) - 1)
        data = data[:at] + data[at + 1 :]
    elif damage == "cut":
        data = data[:at]
    return data


@settings(max_examples=400, deadline=None)
@given(_documents(), st.integers(min_value=1, max_value=9))
def test_a_document_streams_to_what_json_loads_gives_or_fails_with_its_words(data: bytes, size: int) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return  # a cut through a character: both refuse it as UTF-8, not as JSON
    assert _streamed(data, size) == _loaded(data)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1,}',
        "[1, 2,]",
        '{"a" 1}',
        '{"a": 1} {',
        "\n\n  [1,\n 2 3]",
        "",
        "   ",
        '{"a": [1, 2], "a": {"b": null}}',
        "-Infinity",
        '["\\ud83d\\ude00", "é"]',
    ],
)
def test_edge_cases_match_json_loads_in_every_chunking(text: str) -> None:
    data = text.encode()
    for size in range(1, max(len(data), 1) + 1):
        assert _streamed(data, size) == _loaded(data), size


def test_a_value_longer_than_the_buffer_is_decoded_in_a_few_attempts() -> None:
    """A value is decoded again after each refill; refills double what is buffered, so a value of
    many chunks (a replacecommit's file ids, a schema) costs a few attempts, not one per chunk."""
    attempts = 0

    class Counting(json.JSONDecoder):
        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            nonlocal attempts
            attempts += 1
            return super().raw_decode(s, idx)

    value = ["x" * (3 * CHUNK_BYTES)]
    stream = JsonStream(_chunks(json.dumps(value).encode(), 1 << 16))
    stream._decoder = Counting()
    assert _walk(stream) == value
    stream.end()
    assert attempts <= 1 + 3  # the first try, then one per doubling: 16 and 32 MB ahead
