"""The status page and API for a fleet (`service.daemon.fleet`): 10,000 tables served by one daemon,
the summary on top, filtered by state, service and name, sorted by debt, one page at a time; the JSON
API the same. The page is loaded in headless Chromium (its load time is printed, not asserted)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.config.daemon import parse_daemon_config
from service.daemon import Daemon
from service.daemon.file_sizes import FileSizes
from service.daemon.history import FileStats
from service.daemon.runtime import TableService
from tests.support import chromium

TABLES = 10_000
NOW = datetime(2024, 1, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def fleet() -> Iterator[Daemon]:
    """10,000 tables (no storage is read: the page shows what the ticks left); a few quarantined, one
    with repair on, some with small files and long timelines."""
    entries = "".join(f"\n  - {{name: t{i:05d}, base_path: /fleet/t{i:05d}}}" for i in range(TABLES))
    entries += "\n  - {name: z-repaired, base_path: /fleet/z, repair: {enabled: true}}"
    daemon_section = "daemon:\n  lock: {provider: in-process}\n  metrics: {host: 127.0.0.1, port: 0}\n"
    text = f"{daemon_section}tables:{entries}\n"
    daemon = Daemon(parse_daemon_config(text), registry=CollectorRegistry(), clock=lambda: NOW)
    for i in (7, 42, 4242):
        daemon.runtimes[f"t{i:05d}"].quarantined_at_timeline = ()  # as failing ticks leave it
    for i, small in ((1234, 900), (5678, 5000), (9999, 70)):
        stats = FileStats(files=small * 2, bytes=small * 10**6, small_files=small, small_bytes=small * 10**5)
        daemon.runtimes[f"t{i:05d}"].file_sizes = FileSizes(stats, 100 * 10**6, (0,), None)
    daemon.runtimes["t00100"].archival = {  # what an archival tick leaves
        "active_instants": 400,
        "would_archive": 0,
        "held_by": {"bound": "a savepoint", "instant": "20240101000000000", "detail": "kept",
                    "way_out": "delete it once no reader needs it"},
        "last_archived": None,
    }  # fmt: skip
    assert daemon.http is not None
    daemon.http.start()
    try:
        yield daemon
    finally:
        daemon.http.stop()


def _get(daemon: Daemon, path: str) -> dict[str, Any]:
    assert daemon.http is not None
    with urllib.request.urlopen(daemon.http.url + path, timeout=60) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


def test_the_api_summarises_filters_sorts_and_pages_a_fleet(fleet: Daemon) -> None:
    first = _get(fleet, "/api/v1/tables")
    assert first["total"] == TABLES + 1 and len(first["tables"]) == 50
    assert first["tables"][0]["name"] == "t00000" and first["query"]["page"] == 1
    summary = first["summary"]
    assert summary["tables"] == TABLES + 1 and summary["states"]["quarantined"] == 3
    assert summary["failing"] == ["t00007", "t00042", "t04242"]
    assert [r["table"] for r in summary["most_indebted"]["small_files"]] == ["t05678", "t01234", "t09999"]
    assert summary["most_indebted"]["timeline"] == [{"table": "t00100", "timeline": 400.0}]
    quarantined = _get(fleet, "/api/v1/tables?state=quarantined")
    assert [t["name"] for t in quarantined["tables"]] == ["t00007", "t00042", "t04242"]
    by_name = _get(fleet, "/api/v1/tables?q=T0424&per_page=20")
    assert by_name["total"] == 10 and by_name["tables"][0]["name"] == "t04240"  # any case
    repairing = _get(fleet, "/api/v1/tables?service=repair")
    assert [t["name"] for t in repairing["tables"]] == ["z-repaired"]
    by_debt = _get(fleet, "/api/v1/tables?sort=small_files&per_page=2&page=2")
    assert [t["name"] for t in by_debt["tables"]] == ["t09999", "t00000"]  # then the debt-free, by name
    last = _get(fleet, "/api/v1/tables?per_page=1000&page=11")
    assert [t["name"] for t in last["tables"]] == ["z-repaired"]
    for bad in ("sort=size", "page=0", "per_page=5000", "colour=red"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(fleet, f"/api/v1/tables?{bad}")
        assert refused.value.code == 400


@pytest.mark.browser
def test_a_browser_shows_the_summary_and_pages_through_the_fleet(fleet: Daemon, tmp_path: Path) -> None:
    assert fleet.http is not None
    url = fleet.http.url
    started = time.monotonic()
    dom = chromium.dom(url + "/", tmp_path / "profile")
    print(f"\n10,001-table status page loaded in Chromium in {time.monotonic() - started:.2f} s")
    assert "10001 tables" in dom and "quarantined: 3" in dom and "failing: t00007, t00042, t04242" in dom
    assert dom.count('<section class="table"') == 50 and "page 1 of 201" in dom
    assert "t05678 (5000)" in dom  # the most indebted by small files
    page = chromium.dom(url + "/?state=quarantined&q=&service=&sort=name", tmp_path / "profile")
    assert dom.count('id="table-') == 50 and page.count('id="table-') == 3
    assert 'id="table-t04242" data-state="quarantined"' in page and "3 matching" in page
    sorted_page = chromium.dom(url + "/?sort=timeline&page=1", tmp_path / "profile")
    assert sorted_page.index('id="table-t00100"') < sorted_page.index('id="table-t00000"')
    assert TableService.REPAIR.value in dom  # the filter offers every service
