from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.errors import HudiTableServiceError, InstantExistsError
from service.table.storage import Storage
from tests.support.s3 import moto_server, s3_options


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


def _exercise(storage: Storage) -> None:
    storage.write_bytes("p1/a.parquet", b"aaa")
    storage.write_bytes("p1/sub/b.parquet", b"bb")
    storage.create_if_absent(".hoodie/1.commit", b"{}")
    with pytest.raises(InstantExistsError):
        storage.create_if_absent(".hoodie/1.commit", b"{}")
    assert storage.read_bytes("p1/a.parquet") == b"aaa"
    assert sorted(f.path for f in storage.walk_files("p1")) == ["p1/a.parquet", "p1/sub/b.parquet"]
    assert {f.name: f.size for f in storage.list_dir("p1") if not f.is_dir} == {"a.parquet": 3}
    assert storage.delete_file("p1/a.parquet") is True
    assert storage.delete_file("p1/a.parquet") is False  # already gone
    assert not storage.exists("p1/a.parquet")
    assert storage.list_dir("does/not/exist") == []
    assert storage.relativize(storage.qualify("p1/sub/b.parquet")) == "p1/sub/b.parquet"


def test_storage_local_round_trip(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path / "t"))
    _exercise(storage)
    assert storage.qualify("p/x") == f"file:{tmp_path}/t/p/x"
    assert Storage.for_base_uri(f"file:{tmp_path}/t").base_uri == storage.base_uri


def test_storage_relativize_refuses_paths_outside_table(tmp_path: Path) -> None:
    storage = Storage.for_base_uri(str(tmp_path / "t"))
    assert (
        storage.relativize(f"{tmp_path}/t/p/f.parquet") == "p/f.parquet"
    )  # scheme-less, as Java sometimes writes
    for outside in (
        f"file:{tmp_path}/other/f",
        f"{tmp_path}/t/../x",
        "../x",
        "s3a://b/t/p",
        f"file:{tmp_path}/tt/x",
    ):
        with pytest.raises(HudiTableServiceError, match=r"refused .*: (it is outside|a '\.\.'|scheme)"):
            storage.relativize(outside)


@pytest.mark.slow
def test_storage_s3_round_trip(s3_endpoint: str) -> None:
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(
        **{
            k: v
            for k, v in {
                "endpoint_override": s3_endpoint,
                "scheme": "http",
                "access_key": "testing",
                "secret_key": "testing",
                "region": "us-east-1",
                "allow_bucket_creation": True,
            }.items()
        }
    )
    fs.create_dir("bucket")
    storage = Storage.for_base_uri("s3a://bucket/tables/t", s3_options(s3_endpoint))
    _exercise(storage)
    assert storage.qualify("p1/x.parquet") == "s3a://bucket/tables/t/p1/x.parquet"
    with pytest.raises(HudiTableServiceError):
        storage.relativize("s3a://bucket/tables/other/x")
