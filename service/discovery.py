"""Tables discovered under `discover:` roots (`DiscoveryRoot`), as Hudi's multi-table runner's
`--auto-discovery` finds them: a folder holding `.hoodie/hoodie.properties` is a table (nothing below
it is looked at), found breadth first up to `max_depth` folders under the root; folders whose names
start with `.` or `_` are skipped (Hudi's own, Spark's `_temporary`). A pass lists each folder once
(one LIST per folder on an object store: a table is a folder whose listing holds `.hoodie/`) and reads
each table's `hoodie.properties` once, for its name.

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
    """The tables under `root` its include and exclude patterns keep, in path order. Each folder is
    listed once (a table is a folder whose listing holds `.hoodie/`), and each kept table's
    `hoodie.properties` read once; nothing below a table is listed."""
    storage = Storage.for_base_uri(root.root, root.storage_options)
    found: list[Found] = []
    level = [""]
    for depth in range(root.max_depth + 1):
        below: list[str] = []
        for folder in level:
            entries = storage.list_dir(folder)
            if folder and any(e.is_dir and e.name == ".hoodie" for e in entries):
                if root.wants(folder):
                    name = _table_name(storage, folder)
                    if name is not None:
                        found.append(Found(root, folder, _join(root.root, folder), name))
                continue  # never below a table
            if depth < root.max_depth:
                below += [
                    posixpath.join(folder, e.name) if folder else e.name
                    for e in entries
                    if e.is_dir and not e.name.startswith((".", "_"))
                ]
        level = below
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


def _table_name(storage: Storage, rel: str) -> str | None:
    """`hoodie.table.name` (the folder's name when the file does not say); None when there is no
    `hoodie.properties`: a `.hoodie` folder without it is no table Hudi opens."""
    try:
        text = storage.read_bytes(f"{rel}/{PROPERTIES}").decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("%s: hoodie.properties unreadable (%s); named by its folder", storage.qualify(rel), exc)
        return posixpath.basename(rel)
    return str(java_properties.loads(text).get("hoodie.table.name") or posixpath.basename(rel))


def _join(root: str, rel: str) -> str:
    return f"{root.rstrip('/')}/{rel}"
