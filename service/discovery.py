"""Tables discovered under `discover:` roots (`DiscoveryRoot`), as Hudi's multi-table runner's
`--auto-discovery` finds them: a folder holding `.hoodie/hoodie.properties` is a table (nothing below
it is looked at), found breadth first up to `max_depth` folders under the root; folders whose names
start with `.` or `_` are skipped (Hudi's own, Spark's `_temporary`). A pass lists each folder once
(one LIST per folder on an object store) and reads each table's `hoodie.properties` for its name.

Names: `hoodie.table.name`; two tables of one name (or one a listed table has) are told apart by a
short digest of their path. A root that cannot be listed is an error of that root alone: what it
found before is kept, the other roots go on.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from service.config import java_properties
from service.config.daemon import DiscoveryRoot, TableSettings
from service.table.storage import Storage

log = logging.getLogger(__name__)

PROPERTIES = ".hoodie/hoodie.properties"


@dataclass(frozen=True)
class Found:
    """A table under a root: its path under the root, its URI, its `hoodie.table.name`."""

    root: DiscoveryRoot
    rel: str
    base_path: str
    table_name: str


def scan(root: DiscoveryRoot) -> list[Found]:
    """The tables under `root` its include and exclude patterns keep, in path order."""
    storage = Storage.for_base_uri(root.root, root.storage_options)
    found: list[Found] = []
    level = [""]
    for _ in range(root.max_depth):
        below: list[str] = []
        for folder in level:
            for entry in storage.list_dir(folder):
                if not entry.is_dir or entry.name.startswith((".", "_")):
                    continue
                rel = posixpath.join(folder, entry.name) if folder else entry.name
                properties = storage.status(f"{rel}/{PROPERTIES}")
                if properties is None:
                    below.append(rel)
                    continue
                if root.wants(rel):
                    name = _table_name(storage, rel)
                    found.append(Found(root, rel, _join(root.root, rel), name))
        level = below
        if not level:
            break
    return sorted(found, key=lambda f: f.rel)


def settings_of(found: Iterable[Found], taken: Iterable[str] = ()) -> list[TableSettings]:
    """A table entry for each found table, named by its `hoodie.table.name`, or, where two share one
    (or a listed table has it), by that name and a digest of its URI."""
    found = list(found)
    names = [f.table_name for f in found]
    clash = set(taken) | {n for n in names if names.count(n) > 1}
    out = []
    for f in found:
        name = f.table_name
        if name in clash:
            name = f"{name}-{hashlib.sha256(f.base_path.encode()).hexdigest()[:8]}"
        out.append(f.root.template_for(f.rel).settings(name, f.base_path, f.root.storage_options))
    return out


def _table_name(storage: Storage, rel: str) -> str:
    try:
        properties = java_properties.loads(storage.read_bytes(f"{rel}/{PROPERTIES}").decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        log.warning("%s: hoodie.properties unreadable (%s); named by its folder", storage.qualify(rel), exc)
        properties = {}
    return str(properties.get("hoodie.table.name") or posixpath.basename(rel))


def _join(root: str, rel: str) -> str:
    return f"{root.rstrip('/')}/{rel}"
