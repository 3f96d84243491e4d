"""A real standalone ZooKeeper server for tests; its one home is `bench.zookeeper_server`."""

from __future__ import annotations

from bench.zookeeper_server import ZookeeperServer

__all__ = ["ZookeeperServer"]
