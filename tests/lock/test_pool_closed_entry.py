"""A pool entry handed out just before its pool closed must not start a client afterwards."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from service.errors import LockError
from service.lock.kazoo_pool import PooledClient


def test_entry_closed_before_it_started_refuses_to_start() -> None:
    # Nothing listens on port 1: were start() reached, the client would keep reconnecting.
    client = KazooClient(hosts="127.0.0.1:1")
    entry = PooledClient(client, "127.0.0.1:1")
    entry.close()
    with pytest.raises(LockError, match="is closed"):
        entry.ensure_started(0.2)
    assert not client.connected and client._connection._connection_routine is None
