"""The counting proxy in front of a real moto S3 server: requests pass through unchanged and each is
counted as the S3 operation it is."""

from __future__ import annotations

import pyarrow.fs as pafs

from bench.s3_proxy import CountingProxy, request_kind
from tests.support.s3 import moto_server, s3_filesystem


def test_request_kinds_of_path_style_targets() -> None:
    assert request_kind("GET", "/bench?list-type=2&prefix=t%2F.hoodie%2F&delimiter=%2F") == "LIST"
    assert request_kind("GET", "/bench") == "LIST"
    assert request_kind("GET", "/bench/t/.hoodie/hoodie.properties") == "GET"
    assert request_kind("HEAD", "/bench/t/a.parquet") == "HEAD"
    assert request_kind("PUT", "/bench/t/a.parquet") == "PUT"
    assert request_kind("DELETE", "/bench/t/a.parquet") == "DELETE"
    assert request_kind("POST", "/bench?delete") == "DELETE"
    assert request_kind("POST", "/bench/t/big.parquet?uploads") == "POST"


def test_proxy_forwards_and_counts_pyarrow_requests() -> None:
    with moto_server() as moto, CountingProxy(moto) as proxy:
        fs = s3_filesystem(proxy.endpoint)
        fs.create_dir("bench")
        with proxy.counting() as written, fs.open_output_stream("bench/t/a.txt") as out:
            out.write(b"hello")
        with proxy.counting() as read, fs.open_input_stream("bench/t/a.txt") as f:
            assert f.read() == b"hello"
        with proxy.counting() as listed:
            infos = fs.get_file_info(pafs.FileSelector("bench/t"))
        assert [i.base_name for i in infos] == ["a.txt"]
        with proxy.counting() as deleted:
            fs.delete_file("bench/t/a.txt")
        assert fs.get_file_info("bench/t/a.txt").type == pafs.FileType.NotFound

    assert written["PUT"] == 1 and written["DELETE"] == 0
    assert read["GET"] >= 1 and read["PUT"] == 0
    assert listed["LIST"] >= 1 and listed["GET"] == 0 and listed["PUT"] == 0
    assert deleted["DELETE"] == 1
