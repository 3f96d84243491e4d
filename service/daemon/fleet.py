"""The status page and API for a fleet (thousands of tables): a summary on top, the tables filtered by
state, service and name, sorted by what they owe, one page at a time (`TableQuery`).

Sorting keys, each from what the daemon already holds (no storage read): `name`; `state`; `small_files`
(base files below the small-file limit, from the last measurement); `timeline` (active instants, from
the last archival tick); `oldest_pending` (age of the oldest pending plan of any service); `blocked`
(age of the oldest blocker). Debts sort largest first, ties by name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from service.daemon.runtime import TableRuntime
from service.table.timeline import parse_instant_time

PER_PAGE = 50
MAX_PER_PAGE = 1000
SORTS = ("name", "state", "small_files", "timeline", "oldest_pending", "blocked")
INDEBTED_SHOWN = 5


class QueryError(ValueError):
    """A query string the API refuses (400), naming the parameter."""


@dataclass(frozen=True)
class TableQuery:
    state: str | None = None
    service: str | None = None  # tables with this service on
    name: str | None = None  # a part of the name, any case
    sort: str = "name"
    page: int = 1
    per_page: int = PER_PAGE

    @classmethod
    def parse(cls, query: str) -> TableQuery:
        values = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=False).items()}
        unknown = sorted(set(values) - {"state", "service", "q", "sort", "page", "per_page"})
        if unknown:
            raise QueryError(f"unknown parameter {unknown[0]!r}")
        sort = values.get("sort", "name")
        if sort not in SORTS:
            raise QueryError(f"sort={sort!r}: one of {', '.join(SORTS)}")
        try:
            page, per_page = int(values.get("page", "1")), int(values.get("per_page", str(PER_PAGE)))
        except ValueError:
            raise QueryError("page and per_page are whole numbers") from None
        if page < 1 or not 1 <= per_page <= MAX_PER_PAGE:
            raise QueryError(f"page >= 1 and 1 <= per_page <= {MAX_PER_PAGE}")
        return cls(values.get("state"), values.get("service"), values.get("q"), sort, page, per_page)

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "service": self.service, "q": self.name, "sort": self.sort,
                "page": self.page, "per_page": self.per_page}  # fmt: skip


ALL_FIRST_PAGE = TableQuery()  # every table, by name, the first page


def debts(runtime: TableRuntime, now: datetime) -> dict[str, float]:
    """What a table owes, by sorting key (0 when unknown)."""
    sizes = runtime.file_sizes
    archival = runtime.archival or {}
    zone = runtime.zone
    pending = [t for ts in runtime.pending.copy().values() for t in ts]
    oldest = 0.0
    if pending and zone is not None:
        try:
            oldest = max(0.0, (now - parse_instant_time(min(pending), zone)).total_seconds())
        except ValueError:
            oldest = 0.0
    ages = [b.age_seconds(now) or 0.0 for b in list(runtime.blockers)]
    return {
        "small_files": float(sizes.stats.small_files) if sizes is not None else 0.0,
        "timeline": float(archival.get("active_instants") or 0),
        "oldest_pending": oldest,
        "blocked": max(ages, default=0.0),
    }


def select(
    runtimes: Mapping[str, TableRuntime],
    state_of: Callable[[TableRuntime], str],
    query: TableQuery,
    now: datetime,
) -> tuple[list[TableRuntime], int, dict[str, Any]]:
    """(the page's runtimes, how many match, the fleet's summary)."""
    rows = []
    for name in sorted(runtimes):
        runtime = runtimes[name]
        rows.append((runtime, state_of(runtime), debts(runtime, now)))
    summary = _summary(rows)
    wanted = query.name.lower() if query.name else None
    kept = [
        r for r in rows
        if (query.state is None or r[1] == query.state)
        and (query.service is None or _enabled(r[0], query.service))
        and (wanted is None or wanted in r[0].name.lower())
    ]  # fmt: skip
    if query.sort == "state":
        kept.sort(key=lambda r: (r[1], r[0].name))
    elif query.sort != "name":
        kept.sort(key=lambda r: (-r[2][query.sort], r[0].name))
    start = (query.page - 1) * query.per_page
    return [r[0] for r in kept[start : start + query.per_page]], len(kept), summary


def _enabled(runtime: TableRuntime, service: str) -> bool:
    section = getattr(runtime.entry.settings, service, None)
    return section is not None and bool(getattr(section, "enabled", False) is not False)


def _summary(rows: list[tuple[TableRuntime, str, dict[str, float]]]) -> dict[str, Any]:
    states = Counter(state for _, state, _ in rows)
    indebted = {
        key: [
            {"table": r.name, key: d[key]}
            for r, _, d in sorted(rows, key=lambda row: (-row[2][key], row[0].name))[:INDEBTED_SHOWN]
            if d[key] > 0
        ]
        for key in ("small_files", "timeline", "oldest_pending", "blocked")
    }
    return {
        "tables": len(rows),
        "states": dict(sorted(states.items())),
        "on_hold": sorted(r.name for r, state, _ in rows if state == "on hold"),
        "failing": sorted(r.name for r, state, _ in rows if state in ("quarantined", "backing off")),
        "blocked": sum(1 for r, _, _ in rows if list(r.blockers)),
        "most_indebted": indebted,
    }
