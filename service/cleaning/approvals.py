"""Approvals of held cleans. The volume breaker holds a clean that would delete more of the live file
groups' files than its limit (`guard.check_plan`); `clean --approve DIGEST` records that the plan
deleting exactly those files (`strategies.cleaning.plan_digest`) may pass once. The next clean whose
plan has that digest runs it, the daemon's tick or the CLI's, and the approval is removed once that
clean completed; a plan deleting other files is held again under its own digest.

Approvals live in the table, out of Hudi's way: `.hoodie/.aux/hudi-table-service/clean-approvals/
<digest>.json` (Hudi's timeline loaders list `.hoodie` without descending, and `.aux` holds auxiliary
files only), so every replica and the CLI see the same ones without ZooKeeper. The files are
untrusted: a name that is not a digest is ignored (logged); the content records when and by whom, for
people.
"""

from __future__ import annotations

import getpass
import json
import logging
import re
import socket
from datetime import datetime

from service.table.storage import Storage
from strategies.cleaning.safety import DIGEST_LENGTH

log = logging.getLogger(__name__)

APPROVALS_DIR = ".hoodie/.aux/hudi-table-service/clean-approvals"
_NAME = re.compile(rf"([0-9a-f]{{{DIGEST_LENGTH}}})\.json")
DIGEST = re.compile(rf"[0-9a-f]{{{DIGEST_LENGTH}}}")


def approved_digests(storage: Storage) -> frozenset[str]:
    """The digests of the plans approved and not yet run."""
    out = set()
    for name in storage.list_file_names(APPROVALS_DIR):
        match = _NAME.fullmatch(name)
        if match is None:
            if not name.endswith(".crc"):
                path = storage.qualify(f"{APPROVALS_DIR}/{name}")
                log.warning("%s: not an approval (<digest>.json); ignored", path)
            continue
        out.add(match[1])
    return frozenset(out)


def record_approval(storage: Storage, digest: str, now: datetime) -> str:
    """Record that the held plan `digest` may run once; returns the approval's table-relative path."""
    if DIGEST.fullmatch(digest) is None:
        raise ValueError(f"{digest!r} is not a plan digest ({DIGEST_LENGTH} hex digits)")
    rel = f"{APPROVALS_DIR}/{digest}.json"
    record = {
        "digest": digest,
        "approved_at": now.isoformat(timespec="seconds"),
        "approved_by": f"{getpass.getuser()}@{socket.gethostname()}",
    }
    storage.write_bytes(rel, json.dumps(record, indent=2, sort_keys=True).encode())
    return rel


def consume_approval(storage: Storage, digest: str) -> None:
    """The approved clean completed: its approval is spent."""
    storage.delete_file(f"{APPROVALS_DIR}/{digest}.json")
