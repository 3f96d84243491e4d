"""Storage faults on the S3-compatible server: the counting proxy, failing chosen requests.

`FaultyProxy` forwards requests to moto as `bench.s3_proxy.CountingProxy` does, except those a rule
matches: a request of the rule's kind (`PUT`, `DELETE`, `GET`, `LIST`, ...) whose object key (or, for
a LIST, prefix), relative to the table's key, matches the rule's pattern, picked with the rule's share
(a seeded draw) until the rule's limit of injected faults is reached. Each is answered with the
rule's refusal (500 InternalError, 503 SlowDown, ...) or its connection dropped.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from bench.s3_proxy import CountingProxy, Refusal


@dataclass(frozen=True)
class FaultRule:
    kind: str
    key: str  # regex on the table-relative key (LIST: prefix)
    refusal: Refusal
    share: float = 1.0
    limit: int | None = None  # faults injected at most (None: every match drawn)


class FaultyProxy(CountingProxy):
    """`with FaultyProxy(moto, "bucket/table") as proxy:`; `proxy.rules = [...]` arms it."""

    def __init__(self, upstream: str, table_key: str, seed: int = 0) -> None:
        super().__init__(upstream)
        self.table_key = table_key.strip("/")
        self.rules: list[FaultRule] = []
        self.injected: Counter[FaultRule] = Counter()
        self._draws = random.Random(seed)
        self._faults_guard = threading.Lock()

    def arm(self, *rules: FaultRule) -> None:
        with self._faults_guard:
            self.rules = list(rules)
            self.injected.clear()

    def disarm(self) -> None:
        self.arm()

    def _relative_key(self, kind: str, target: str) -> str | None:
        parts = urlsplit(target)
        key = unquote(parts.path).lstrip("/")
        if kind == "LIST":
            key = f"{key.rstrip('/')}/{parse_qs(parts.query).get('prefix', [''])[0]}"
        prefix = f"{self.table_key}/"
        return key[len(prefix) :] if key.startswith(prefix) else None

    def fault_for(self, kind: str, method: str, target: str) -> Refusal | None:
        rel = self._relative_key(kind, target)
        if rel is None:
            return None
        with self._faults_guard:
            for rule in self.rules:
                if rule.kind != kind or not re.search(rule.key, rel):
                    continue
                if rule.limit is not None and self.injected[rule] >= rule.limit:
                    continue
                if self._draws.random() < rule.share:
                    self.injected[rule] += 1
                    return rule.refusal
        return None
