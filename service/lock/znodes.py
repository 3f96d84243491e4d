"""Curator InterProcessMutex node names, so ours and Hudi's contenders share one queue.

Sources: Curator's `InterProcessMutex` and `StandardLockInternalsDriver.fixForSorting`, as used by
Hudi's `ZookeeperBasedLockProvider` (docs/format.md, "The ZooKeeper lock").

Curator (Hudi 0.14/0.15 bundle Curator 2.7.1) names a contender `_c_<java UUID>-lock-<10-digit seq>`
("protected" mode) and orders ALL children of the lock znode by the text after the LAST `lock-`,
or by the whole name when there is none. We name and order ours identically; kazoo's stock
`__lock__` naming would sort after Curator's and let both sides hold the lock at once.
"""

from __future__ import annotations

import uuid

LOCK_NAME = "lock-"
PROTECTED_PREFIX = "_c_"


def new_protected_prefix() -> str:
    """`_c_<uuid>-lock-`: ZooKeeper appends the sequence; the uuid finds our node after a lost reply."""
    return f"{PROTECTED_PREFIX}{uuid.uuid4()}-{LOCK_NAME}"


def sort_key(child: str) -> str:
    """Curator's `fixForSorting(child, "lock-")`."""
    index = child.rfind(LOCK_NAME)
    return child[index + len(LOCK_NAME) :] if index >= 0 else child


def ordered_contenders(children: list[str]) -> list[str]:
    """Children in Curator's lock order (stable, like Java's `Collections.sort`); index 0 holds the lock."""
    return sorted(children, key=sort_key)


def find_protected(children: list[str], prefix: str) -> str | None:
    """Our node among `children`, recognised by its protected prefix."""
    return next((child for child in children if child.startswith(prefix)), None)
