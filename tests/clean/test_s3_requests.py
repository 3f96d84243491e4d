"""Requests a clean and an idle daemon tick make on S3 (issue 12 §3), counted by kind and prefix.

A real moto S3 server on loopback sits behind `bench.s3_proxy.CountingProxy`, which forwards every
request unchanged and logs it; on one server with one client the counts are deterministic. The table
is the cleaning benchmark's synthetic TINY table (12 partitions; the 4 small commits touch 4 of them):
retaining `TINY.commits_retained` commits, the new clean's ECTR is the first full upsert, so an
incremental clean plans over those 4 partitions only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pyarrow.fs as pafs
import pytest
from prometheus_client import CollectorRegistry

from bench.cleaning import NOW, TINY, build_table
from bench.s3_proxy import CountingProxy
from service.cleaning import Cleaner, CleanOptions
from service.cleaning.deleter import delete_files
from service.config.daemon import load_daemon_config
from service.config.hoodie import HoodieConfig
from service.errors import InstantExistsError
from service.lock.in_process import InProcessTableLock
from service.table.storage import Storage
from service.table.table import HudiTable
from tests.support.s3 import moto_server, s3_filesystem, s3_options

BUCKET = "requests"
Request = tuple[str, str, str]  # (kind, method, target) as the proxy logs it


@pytest.fixture  # one server per test: the proxy then ends its clients' connections before the leak check
def s3() -> Iterator[tuple[CountingProxy, pafs.S3FileSystem]]:
    with moto_server() as moto, CountingProxy(moto) as proxy:
        fs = s3_filesystem(moto)
        fs.create_dir(BUCKET)
        yield proxy, fs


def _upload_tiny_table(fs: pafs.S3FileSystem, tmp_path: Path, key: str) -> str:
    """The TINY table written locally, then copied to moto directly (not through the proxy)."""
    build_table(tmp_path / key, TINY)
    pafs.copy_files(str(tmp_path / key), f"{BUCKET}/{key}", pafs.LocalFileSystem(), fs)
    return f"s3a://{BUCKET}/{key}"


def _open(proxy: CountingProxy, uri: str) -> HudiTable:
    return HudiTable.open(uri, s3_options(proxy.endpoint))


def _cleaner(table: HudiTable, options: CleanOptions) -> Cleaner:
    config = HoodieConfig.from_mapping(
        {
            "hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
            "hoodie.cleaner.commits.retained": str(TINY.commits_retained),
        },
        table.name,
    )
    lock = InProcessTableLock(table.name, key=table.storage.base_uri)
    return Cleaner(table, config, lock, UTC, options, now=lambda: NOW)


def _list_prefixes(requests: Sequence[Request], key: str) -> Counter[str]:
    """LIST requests by prefix, relative to the table's key (`p=0003/`, `.hoodie/`)."""
    out: Counter[str] = Counter()
    for kind, _, target in requests:
        if kind == "LIST":
            prefix = parse_qs(urlsplit(target).query).get("prefix", [""])[0]
            out[prefix.removeprefix(f"{key}/")] += 1
    return out


def _touched_partitions(table: HudiTable) -> set[str]:
    """The partitions of the small commits (the ones written to fewer than every partition)."""
    timeline = table.load_timeline()
    out: set[str] = set()
    for instant in timeline.commits().completed():
        partitions = table.facts_reader.commit_summary(instant).partitions()
        if len(partitions) < TINY.partitions:
            out |= partitions
    return out


def test_incremental_clean_lists_only_the_touched_partitions(
    s3: tuple[CountingProxy, pafs.S3FileSystem], tmp_path: Path
) -> None:
    """Planning (a dry run) lists `.hoodie` once and each of the 4 touched partitions once, nothing else;
    also when forced past a volume breaker the plan trips within the listed partitions (`--force`:
    the whole-table count only fed the breaker that is off, one LIST per partition of the table)."""
    proxy, fs = s3
    key = "incremental-plan"
    uri = _upload_tiny_table(fs, tmp_path, key)
    touched = _touched_partitions(_open(proxy, uri))
    assert len(touched) == TINY.touched_partitions == 4
    expected = Counter({".hoodie/": 1, **{f"{p}/": 1 for p in touched}})
    for options in (
        CleanOptions(dry_run=True),
        CleanOptions(dry_run=True, force=True, max_delete_fraction=0.1),  # 25% of the listed files
    ):
        cleaner = _cleaner(_open(proxy, uri), options)
        mark = proxy.mark()
        result = cleaner.run()
        assert [c.incremental for c in result.cleans] == [True], options
        assert result.cleans[0].files_planned == TINY.touched_partitions * TINY.file_groups_per_partition
        assert _list_prefixes(proxy.requests_since(mark), key) == expected, options


def test_clean_deletes_cost_three_requests_per_file_and_one_list_per_partition(
    s3: tuple[CountingProxy, pafs.S3FileSystem], tmp_path: Path
) -> None:
    """N = 3 requests per deleted file: pyarrow's `S3FileSystem.delete_file` makes a HEAD (is it a
    file?), the DELETE, and a PUT of the parent's directory marker (Arrow's `EnsureParentExists`;
    `check_directory_existence_before_creation` does not change that, checked on pyarrow 21). The
    deletes are verified by one LIST per partition after its deletes, not by a HEAD and a LIST per
    file; a file the listing still shows fails the delete."""
    proxy, fs = s3
    key = "deletes"
    uri = _upload_tiny_table(fs, tmp_path, key)
    storage = Storage.for_base_uri(uri, s3_options(proxy.endpoint))
    partitions = ["p=0000", "p=0001", "p=0002"]
    files = {
        p: sorted(s.path for s in storage.list_dir(p) if not s.is_dir and s.name.endswith(".parquet"))[:4]
        for p in partitions
    }
    count = sum(len(v) for v in files.values())
    mark = proxy.mark()
    report = delete_files(storage, files, parallelism=4)
    requests = proxy.requests_since(mark)
    assert not report.failures and report.deleted == count == 12
    kinds = Counter(kind for kind, _, _ in requests)
    assert kinds == Counter({"HEAD": count, "DELETE": count, "PUT": count, "LIST": len(partitions)})
    assert _list_prefixes(requests, key) == Counter({f"{p}/": 1 for p in partitions})
    assert len(requests) <= 3 * count + len(partitions)
    for paths in files.values():
        for path in paths:
            assert not storage.exists(path)


def test_idle_daemon_tick_costs_one_list_of_the_timeline(
    s3: tuple[CountingProxy, pafs.S3FileSystem], tmp_path: Path
) -> None:
    """A cleaned table with nothing due: after the first tick (which reads hoodie.properties and the
    last clean once), every cleaning or clustering tick costs exactly one LIST of `.hoodie/`."""
    from service.daemon import Daemon, TableService

    proxy, fs = s3
    key = "idle"
    uri = _upload_tiny_table(fs, tmp_path, key)
    result = _cleaner(_open(proxy, uri), CleanOptions()).run()
    assert len(result.cleans) == 1 and result.cleans[0].files_deleted > 0
    config_path = tmp_path / "daemon.json"
    document = {
        "daemon": {"metrics": {"host": "127.0.0.1", "port": 0}, "logging": {"level": "WARNING"}},
        "defaults": {
            "hoodie.clustering.async.max.commits": 100_000,
            "hoodie.cleaner.commits.retained": TINY.commits_retained,
        },
        "tables": [{"name": "idle", "base_path": uri, "storage_options": s3_options(proxy.endpoint)}],
    }
    config_path.write_text(json.dumps(document), encoding="utf-8")
    daemon = Daemon(load_daemon_config(config_path), registry=CollectorRegistry(), serve_http=False)
    runtime = daemon.runtimes["idle"]
    daemon.run_iteration(runtime, TableService.CLEANING, NOW)  # cold: opens the table
    for service in (TableService.CLEANING, TableService.CLUSTERING, TableService.CLEANING):
        mark = proxy.mark()
        assert str(daemon.run_iteration(runtime, service, NOW)) == "done"
        requests = proxy.requests_since(mark)
        assert [kind for kind, _, _ in requests] == ["LIST"], (service, requests)
        assert _list_prefixes(requests, key) == Counter({".hoodie/": 1})


def test_a_timeline_file_costs_one_head_and_one_put(
    s3: tuple[CountingProxy, pafs.S3FileSystem], tmp_path: Path
) -> None:
    """Creating an instant file is a HEAD (it must not exist yet; the table lock makes the check
    exclusive) and a PUT; overwriting a heartbeat is one PUT. pyarrow's defaults made both cost 8-9
    requests (HEADs of the key and its parents, directory-marker PUTs, an existence LIST)."""
    proxy, fs = s3
    key = "timeline"
    uri = _upload_tiny_table(fs, tmp_path, key)
    storage = Storage.for_base_uri(uri, s3_options(proxy.endpoint))

    mark = proxy.mark()
    storage.create_if_absent(".hoodie/20990101000000000.replacecommit.requested", b"{}")
    created = [kind for kind, _, _ in proxy.requests_since(mark)]
    mark = proxy.mark()
    storage.write_bytes(".hoodie/.heartbeat/20990101000000000", b"")
    heartbeat = [kind for kind, _, _ in proxy.requests_since(mark)]

    assert created == ["HEAD", "PUT"]
    assert heartbeat == ["PUT"]
    assert storage.read_bytes(".hoodie/20990101000000000.replacecommit.requested") == b"{}"
    with pytest.raises(InstantExistsError):
        storage.create_if_absent(".hoodie/20990101000000000.replacecommit.requested", b"{}")
