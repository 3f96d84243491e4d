"""The CLI and the daemon run with the collector set for planning (`service.collector`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from service import cli, collector


@pytest.fixture
def default_collector() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's default
    yield
    gc.set_threshold(*before)


@pytest.mark.usefixtures("default_collector")
def test_every_command_starts_with_the_collector_set_for_planning() -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])  # the daemon's command; parsing stops after the help
    assert gc.get_threshold() == collector.THRESHOLDS
    assert collector.THRESHOLDS[0] >= 100_000  # a young collection per 700 allocations is what cost 11 s
