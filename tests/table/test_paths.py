"""The confinement rule for paths from stored files: properties over generated paths, and examples."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from service.table.paths import (
    Refused,
    TableLocation,
    check_in_partition,
    check_partition_path,
    resolve_file_path,
)
from service.table.storage import Storage

LOCAL = TableLocation("file", "", "/data/lake/t")
S3 = TableLocation("s3", "bucket", "bucket/lake/t")
HDFS = TableLocation("hdfs", "nn:8020", "/lake/t")
LOCATIONS = (LOCAL, S3, HDFS)

# Segments a hostile or broken writer could put in a path, among ordinary ones.
_GOOD_SEGMENTS = st.sampled_from(["p", "2024", "dt=2024-01-01", "t", "lake", "tt", "a.parquet", "ü区", "x y"])
_BAD_SEGMENTS = st.sampled_from(
    ["..", ".", "", ".hoodie", "metadata", "bucket", "data", "\x00", "a\\b", "\n", "s3a:", "C:"]
)
# Ordinary segments weigh more so that enough generated paths are accepted to test the property.
_SEGMENTS = st.lists(
    st.one_of(_GOOD_SEGMENTS, _GOOD_SEGMENTS, _GOOD_SEGMENTS, _BAD_SEGMENTS, st.text(max_size=4)), max_size=7
)
_PREFIXES = st.sampled_from(
    [
        "",
        "/",
        "/data/lake/t/",
        "file:/data/lake/t/",
        "file:///data/lake/t/",
        "file://host/data/lake/t/",
        "s3a://bucket/lake/t/",
        "s3://bucket/lake/t/",
        "s3n://other/lake/t/",
        "/bucket/lake/t/",
        "hdfs://nn:8020/lake/t/",
        "hdfs://other:8020/lake/t/",
        "gs://bucket/lake/t/",
        "C:/data/lake/t/",
    ]
)


def _fs_path(location: TableLocation, raw: str) -> str:
    """Where `raw` points, read independently of the rule and without normalising anything."""
    scheme, colon, rest = raw.partition(":")
    if colon and scheme in ("file", "s3", "s3a", "s3n", "hdfs"):
        if rest.startswith("//"):
            authority, _, path = rest[2:].partition("/")
            return f"{authority}/{path}" if location.store == "s3" else f"/{path}"
        return rest
    if raw.startswith("/"):
        return raw[1:] if location.store == "s3" else raw
    return f"{location.root}/{raw}"


# The prefixes that address each table (hostile ones come from `_PREFIXES`), so many paths are accepted.
_OWN_PREFIXES = {
    LOCAL: ["", "/data/lake/t/", "file:/data/lake/t/", "file:///data/lake/t/"],
    S3: ["", "/bucket/lake/t/", "s3a://bucket/lake/t/", "s3://bucket/lake/t/"],
    HDFS: ["", "/lake/t/", "hdfs://nn:8020/lake/t/"],
}


@st.composite
def _location_and_prefix(draw: st.DrawFn) -> tuple[TableLocation, str]:
    location = draw(st.sampled_from(LOCATIONS))
    return location, draw(st.one_of(st.sampled_from(_OWN_PREFIXES[location]), _PREFIXES))


@settings(max_examples=400)
@given(where=_location_and_prefix(), segments=_SEGMENTS)
@example(where=(LOCAL, "/data/lake/t/"), segments=["p", "..", "..", "x"])
@example(where=(LOCAL, ""), segments=["..", "x"])
@example(where=(S3, "s3a://bucket/lake/t/"), segments=[".hoodie", "metadata", "f"])
def test_accepted_path_is_strictly_inside_the_table(
    where: tuple[TableLocation, str], segments: list[str]
) -> None:
    location, prefix = where
    raw = prefix + "/".join(segments)
    resolved = resolve_file_path(location, raw)
    event(f"accepted: {not isinstance(resolved, Refused)}")
    if isinstance(resolved, Refused):
        assert resolved.reason
        return
    parts = resolved.split("/")
    # Strictly inside the root, no segment that moves or hides, not the timeline folder.
    assert resolved and all(p not in ("", ".", "..") for p in parts)
    assert ".hoodie" not in parts
    assert "\\" not in resolved and all(ord(c) >= 0x20 and c != "\x7f" for c in resolved)
    # Where the raw path points is exactly the root joined with the result (nothing normalised away).
    pointed = _fs_path(location, raw)
    assert pointed == f"{location.root}/{resolved}"
    assert posixpath.normpath(pointed) == pointed
    # The result re-qualifies (as Hudi writes plans) to the same location and resolves back to itself.
    again = resolve_file_path(location, _qualify(location, resolved))
    assert again == resolved


def _qualify(location: TableLocation, rel: str) -> str:
    scheme = {"file": "file", "s3": "s3a", "hdfs": "hdfs"}[location.store]
    return Storage(None, location.root, scheme, location.authority).qualify(rel)  # type: ignore[arg-type]


@given(segments=_SEGMENTS, partitioned=st.booleans())
def test_accepted_partition_path_is_relative_and_outside_the_timeline(
    segments: list[str], partitioned: bool
) -> None:
    raw = "/".join(segments)
    checked = check_partition_path(raw, partitioned)
    if isinstance(checked, Refused):
        return
    assert checked == raw
    if raw == "":
        assert not partitioned  # the root is a partition of non-partitioned tables only
        return
    parts = raw.split("/")
    assert all(p not in ("", ".", "..", ".hoodie") for p in parts)
    assert posixpath.normpath(raw) == raw and not posixpath.isabs(raw)


@pytest.mark.parametrize(
    ("location", "raw", "expected"),
    [
        (LOCAL, "file:/data/lake/t/p/a.parquet", "p/a.parquet"),
        (LOCAL, "file:///data/lake/t/p/a.parquet", "p/a.parquet"),
        (LOCAL, "/data/lake/t/p/a.parquet", "p/a.parquet"),
        (LOCAL, "p/a.parquet", "p/a.parquet"),
        (LOCAL, "a.parquet", "a.parquet"),  # a file of a non-partitioned table
        (S3, "s3a://bucket/lake/t/p/a.parquet", "p/a.parquet"),
        (S3, "s3://bucket/lake/t/p/a.parquet", "p/a.parquet"),  # s3, s3a, s3n: one store
        (S3, "s3n://bucket/lake/t/p/a.parquet", "p/a.parquet"),
        (HDFS, "hdfs://nn:8020/lake/t/p/a.parquet", "p/a.parquet"),
        (LOCAL, "file:/data/lake/t/p/a#b.parquet", "p/a#b.parquet"),  # Hadoop keeps '#' in the path
    ],
)
def test_resolve_file_path_accepts(location: TableLocation, raw: str, expected: str) -> None:
    assert resolve_file_path(location, raw) == expected


@pytest.mark.parametrize(
    ("location", "raw", "reason"),
    [
        (LOCAL, "", "empty path"),
        (LOCAL, "../x", "'..' segment"),
        (LOCAL, "p/../../x", "'..' segment"),
        (LOCAL, "p/../p/a.parquet", "'..' segment"),  # even when it stays inside: never normalised away
        (LOCAL, "file:/data/lake/t/p/../../x", "'..' segment"),
        (LOCAL, "file:/data/lake/t/p/a#/../../../x", "'..' segment"),  # no URL fragment dropped
        (LOCAL, "./p/a.parquet", "'.' segment"),
        (LOCAL, "p//a.parquet", "empty segment"),
        (LOCAL, "p/", "empty segment"),
        (LOCAL, "file:/data/lake/t", "base path itself"),
        (LOCAL, "/data/lake/t", "base path itself"),
        (LOCAL, "/data/lake/tt/p/a.parquet", "outside the table"),
        (LOCAL, "/etc/passwd", "outside the table"),
        (LOCAL, ".hoodie/hoodie.properties", "timeline folder"),
        (LOCAL, "file:/data/lake/t/.hoodie/metadata/files/f", "timeline folder"),
        (LOCAL, "p/.hoodie/x", "timeline folder"),
        (LOCAL, "file://host/data/lake/t/p/a", "authority 'host'"),
        (LOCAL, "s3a://bucket/lake/t/p/a", "another store"),
        (LOCAL, "C:/data/lake/t/p/a", "not a storage scheme"),
        (LOCAL, "gs://b/lake/t/p/a", "another store"),
        (LOCAL, "p/a\x00.parquet", "control character U+0000"),
        (LOCAL, "p/a\n.parquet", "control character U+000A"),
        (LOCAL, "p\\..\\..\\x", "backslash"),
        (S3, "s3a://other/lake/t/p/a", "authority 'other'"),
        (S3, "s3a:///lake/t/p/a", "authority ''"),
        (S3, "s3a://bucket/lake/t", "base path itself"),
        (S3, "s3a://bucket/lake/tt/p", "outside the table"),
        (S3, "file:/bucket/lake/t/p/a", "another store"),
        (HDFS, "hdfs://other:8020/lake/t/p/a", "authority 'other:8020'"),
        (HDFS, "hdfs:/lake/t/p/a", "authority ''"),
    ],
)
def test_resolve_file_path_refuses(location: TableLocation, raw: str, reason: str) -> None:
    refused = resolve_file_path(location, raw)
    assert isinstance(refused, Refused) and reason in refused.reason


@pytest.mark.parametrize(
    ("raw", "partitioned", "ok"),
    [
        ("", False, True),
        ("", True, False),  # the base path on a partitioned table (HUDI-6675)
        ("2024/01/01", True, True),
        ("dt=2024-01-01", True, True),
        ("../x", True, False),
        ("a/../b", True, False),
        ("/abs", True, False),
        (".hoodie", True, False),
        (".hoodie/metadata", True, False),
        ("a//b", True, False),
        ("a/", True, False),
        (".", True, False),
    ],
)
def test_check_partition_path(raw: str, partitioned: bool, ok: bool) -> None:
    assert (check_partition_path(raw, partitioned) == raw) is ok


def test_file_must_lie_directly_in_its_partition() -> None:
    assert check_in_partition("a/f.parquet", "a") is None
    assert check_in_partition("f.parquet", "") is None
    assert check_in_partition("a/b/f.parquet", "a") is not None
    assert check_in_partition("b/f.parquet", "a") is not None
    assert check_in_partition("a/f.parquet", "") is not None
