"""Tables discovered under `discover:` roots (`service.discovery`), on local disk and on the loopback
S3 server: a table that appears is served at the next pass, one that disappears is dropped, live,
both shown on the page and in the JSON API; include, exclude and per-pattern rules; a listed table
wins over a found one of the same path; a root that fails keeps what it found."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from prometheus_client import CollectorRegistry

from bench.s3_proxy import CountingProxy
from service.config.daemon import DiscoveryRoot, load_daemon_config, parse_daemon_config
from service.daemon import Daemon, status_page
from service.discovery import scan
from service.table.storage import Storage
from tests.clean.helpers import fid
from tests.support.fixtures import FileSpec, FixtureTable, ts
from tests.support.s3 import moto_server, s3_filesystem, s3_options
from tests.support.waiting import wait_until


def _table(base: Path, name: str) -> None:
    FixtureTable(base, name=name).commit(ts(1), [FileSpec("p", fid(1))])


def _config(root: str, tables: str = "[]", options: str = "{}") -> str:
    return f"""
daemon:
  lock: {{provider: in-process}}
  metrics: {{host: 127.0.0.1, port: 0}}
discover:
  - root: {root}
    storage_options: {options}
    exclude: ["scratch/*"]
    rules:
      - match: "sales/*"
        table: {{cleaning: {{enabled: false}}}}
tables: {tables}
"""


def _daemon(text: str) -> Daemon:
    return Daemon(parse_daemon_config(text), registry=CollectorRegistry(), serve_http=False)


def _served(daemon: Daemon) -> dict[str, str]:
    return {name: r.entry.settings.base_path for name, r in daemon.runtimes.items()}


def test_tables_are_served_as_they_appear_under_a_root_and_dropped_as_they_disappear(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _table(lake / "orders", "orders")
    _table(lake / "sales" / "eu", "sales_eu")
    _table(lake / "sales" / "us", "sales_us")
    _table(lake / "scratch" / "try", "try")  # excluded
    _table(lake / "_temporary" / "x", "x")  # Spark's, never looked into
    (lake / "notes" / "deep").mkdir(parents=True)  # no table
    daemon = _daemon(_config(str(lake)))
    assert daemon.runtimes == {}  # nothing until the first pass
    daemon.discover_now()
    assert _served(daemon) == {
        "orders": f"{lake}/orders", "sales_eu": f"{lake}/sales/eu", "sales_us": f"{lake}/sales/us",
    }  # fmt: skip
    assert not daemon.runtimes["sales_eu"].entry.settings.cleaning.enabled  # the rule's template
    assert daemon.runtimes["orders"].entry.settings.cleaning.enabled
    shutil.rmtree(lake / "sales" / "us")
    _table(lake / "returns", "returns")
    daemon.discover_now()
    assert set(daemon.runtimes) == {"orders", "sales_eu", "returns"}
    events = {(e["event"], e["table"]) for e in daemon.status.tables()["discovery"]["events"]}
    assert {("appeared", "returns"), ("disappeared", "sales_us"), ("appeared", "orders")} <= events
    page = status_page.render(daemon.status)
    assert "<b>sales_us</b> disappeared" in page and "<b>returns</b> appeared" in page
    assert f"{lake}: 3 tables" in page
    # Nothing changed: the next pass changes nothing and records nothing.
    before = list(daemon.status.tables()["discovery"]["events"])
    runtime = daemon.runtimes["orders"]
    daemon.discover_now()
    assert daemon.runtimes["orders"] is runtime and daemon.status.tables()["discovery"]["events"] == before


def test_a_listed_table_wins_names_clash_apart_and_a_failing_root_keeps_its_tables(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _table(lake / "a" / "t", "dup")
    _table(lake / "b" / "t", "dup")
    _table(lake / "orders", "orders")
    listed = f"[{{name: my_orders, base_path: {lake}/orders}}]"
    daemon = _daemon(_config(str(lake), tables=listed))
    daemon.discover_now()
    served = _served(daemon)
    assert served["my_orders"] == f"{lake}/orders" and "orders" not in served  # listed wins
    dups = sorted(n for n in served if n.startswith("dup-"))
    assert len(dups) == 2 and {served[n] for n in dups} == {f"{lake}/a/t", f"{lake}/b/t"}
    shutil.rmtree(lake)
    (tmp_path / "lake").write_text("not a folder")  # the root cannot be listed as one
    daemon.discover_now()
    assert _served(daemon) == served  # kept
    [root] = daemon.status.tables()["discovery"]["roots"]
    assert root["tables"] == 3 and root["error"] is not None


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


def test_tables_appear_and_disappear_under_an_s3_root(tmp_path: Path, s3_endpoint: str) -> None:
    """The same on the loopback S3 server: fixture tables written locally, copied under a prefix."""
    fs = s3_filesystem(s3_endpoint)
    fs.create_dir("lake")
    for rel, name in (("orders", "orders"), ("sales/eu", "sales_eu")):
        _table(tmp_path / rel, name)
        for path in (tmp_path / rel).rglob("*"):
            if path.is_file():
                with fs.open_output_stream(f"lake/{rel}/{path.relative_to(tmp_path / rel)}") as out:
                    out.write(path.read_bytes())
    options = "{" + ", ".join(f"{k}: '{v}'" for k, v in s3_options(s3_endpoint).items()) + "}"
    daemon = _daemon(_config("s3a://lake/tables", options=options).replace("s3a://lake/tables", "s3a://lake"))
    daemon.discover_now()
    assert _served(daemon) == {"orders": "s3a://lake/orders", "sales_eu": "s3a://lake/sales/eu"}
    assert daemon.runtimes["orders"].entry.settings.storage_options["endpoint_override"] == s3_endpoint
    Storage.for_base_uri("s3a://lake/sales/eu", s3_options(s3_endpoint)).delete_dir("")
    daemon.discover_now()
    assert set(daemon.runtimes) == {"orders"}
    [event] = [e for e in daemon.status.tables()["discovery"]["events"] if e["event"] == "disappeared"]
    assert event["table"] == "sales_eu" and datetime.fromisoformat(event["at"]) <= datetime.now(UTC)


def test_a_reload_of_the_file_keeps_the_tables_discovery_found(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _table(lake / "orders", "orders")
    path = tmp_path / "daemon.yaml"
    path.write_text(_config(str(lake)))
    daemon = Daemon(load_daemon_config(path), registry=CollectorRegistry(), serve_http=False)
    daemon.discover_now()
    assert set(daemon.runtimes) == {"orders"}
    path.write_text(_config(str(lake)) + "defaults: {hoodie.cleaner.commits.retained: 3}\n")
    assert daemon.reload_from_file()
    assert set(daemon.runtimes) == {"orders"}
    assert daemon.runtimes["orders"].entry.hoodie.clean.commits_retained == 3  # re-made under the new file
    path.write_text(_config(str(lake)).split("discover:")[0] + "tables: []\n")  # no roots any more
    assert daemon.reload_from_file() and daemon.runtimes == {}


def test_a_running_daemon_discovers_at_start_and_at_its_interval(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _table(lake / "orders", "orders")
    text = _config(str(lake)).replace("daemon:\n", "daemon:\n  discovery_interval_seconds: 0.2\n", 1)
    daemon = _daemon(text)
    daemon.start()
    try:
        wait_until(lambda: set(daemon.runtimes) == {"orders"}, timeout_s=30, what="the first pass")
        _table(lake / "returns", "returns")
        wait_until(lambda: set(daemon.runtimes) == {"orders", "returns"}, timeout_s=30, what="a later pass")
    finally:
        assert daemon.stop(grace_seconds=10)


def test_a_discovery_pass_lists_each_folder_once_and_reads_each_tables_properties_once(
    tmp_path: Path, s3_endpoint: str
) -> None:
    """Behind the counting proxy: `orders` and `sales/eu`, `sales/us` under the root (and `scratch`,
    excluded, and `notes/deep`, no table): one LIST per folder down to the tables (the root, orders,
    sales, sales/eu, sales/us, scratch, scratch/try, notes, notes/deep), nothing below a table, one
    read (HEAD and GET) per kept table's `hoodie.properties`, no other request."""
    fs = s3_filesystem(s3_endpoint)
    fs.create_dir("counted")
    for rel, name in (("orders", "orders"), ("sales/eu", "eu"), ("sales/us", "us"), ("scratch/try", "try")):
        _table(tmp_path / rel, name)
        pafs.copy_files(str(tmp_path / rel), f"counted/lake/{rel}", pafs.LocalFileSystem(), fs)
    fs.create_dir("counted/lake/notes/deep")
    fs.open_output_stream("counted/lake/notes/deep/readme.txt").close()
    with CountingProxy(s3_endpoint) as proxy:
        root = DiscoveryRoot(root="s3a://counted/lake", storage_options=s3_options(proxy.endpoint),
                             exclude=("scratch/*",))  # fmt: skip
        with proxy.counting() as counts:
            found = scan(root)
    assert [f.rel for f in found] == ["orders", "sales/eu", "sales/us"]
    assert {k: v for k, v in counts.items() if v} == {"LIST": 9, "HEAD": 3, "GET": 3}  # a read: HEAD, GET
