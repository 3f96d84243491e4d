"""What the status page and `/api/v1/tables` show: every table's state, services, small files, runs.

Built on request from the daemon's runtimes (as their last ticks left them), its run history and its
scheduler; nothing here reads a table. A table's state is the first that holds of: quarantined,
needs configuration (refused until a setting of ours is given), refused, committing, executing,
planning (a tick is at that step), backing off (a failed service waits for its retry), due (the last
tick found work), idle. Config is shown with secrets redacted:
values of keys naming a secret, password, token, credential, auth, access or API key, and
credentials in URIs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from service.blockers import blocker_json
from service.daemon.fleet import ALL_FIRST_PAGE, TableQuery, select
from service.daemon.history import RunHistory
from service.daemon.runtime import Phase, TableRuntime, TableService
from service.table.timeline import parse_instant_time

REDACTED = "***"
_SECRET_KEY = re.compile(r"secret|passw|token|credential|(access|api)[._-]?key|private|auth", re.IGNORECASE)
_URI_USERINFO = re.compile(r"(://)[^/@\s]+@")

STATES = (
    "idle", "due", "planning", "executing", "committing", "needs configuration", "refused", "quarantined",
    "backing off",
)  # fmt: skip
_PHASE_ORDER = (Phase.COMMITTING, Phase.EXECUTING, Phase.PLANNING)


def redact(value: Any, key: str = "") -> Any:
    """`value` with secrets replaced by `***` (recursively through mappings and lists)."""
    if isinstance(value, Mapping):
        return {str(k): redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, key) for v in value]
    if key and _SECRET_KEY.search(key) and value not in (None, ""):
        return REDACTED
    if isinstance(value, str):
        return _URI_USERINFO.sub(rf"\1{REDACTED}@", value)
    return value


def _iso(at: datetime | None) -> str | None:
    return at.astimezone(UTC).isoformat() if at is not None else None


@dataclass(frozen=True)
class StatusSource:
    """What the daemon exposes to the status API."""

    runtimes: Callable[[], Mapping[str, TableRuntime]]
    history: RunHistory
    next_tick: Callable[[str, TableService], datetime | None]  # the scheduler's next run of the job
    now: Callable[[], datetime]
    # Whether this replica serves the table (`daemon.cluster`); its state is then what it last saw.
    holds: Callable[[str], bool] = lambda name: True
    # The `discover:` roots' last passes and the tables that appeared or disappeared; None: no roots.
    discovery: Callable[[], dict[str, Any] | None] = lambda: None

    def table_state(self, runtime: TableRuntime, now: datetime) -> str:
        if runtime.quarantined:
            return "quarantined"
        if runtime.needs_configuration:
            return "needs configuration"
        if runtime.refused or runtime.refused_services:
            return "refused"
        if any(runtime.on_hold.copy().values()):
            return "on hold"  # a plan waits for a person's approval; the other services go on
        # Ticks update these dicts while a request reads them: read copies (a dict copy is atomic).
        phases = set(runtime.phase.copy().values())
        for phase in _PHASE_ORDER:
            if phase in phases:
                return str(phase)
        if any(at > now for at in runtime.retry_at.copy().values()):
            return "backing off"
        if any(runtime.due.copy().values()):
            return "due"
        return "idle"

    def _service(self, runtime: TableRuntime, service: TableService, now: datetime) -> dict[str, Any]:
        section = getattr(runtime.entry.settings, str(service))  # the table's `clustering:`, `cleaning:`
        zone = runtime.zone or UTC
        pending = []
        for instant in runtime.pending.get(service, ()):
            try:
                age: float | None = max((now - parse_instant_time(instant, zone)).total_seconds(), 0.0)
            except Exception:
                age = None
            pending.append({"instant": instant, "age_seconds": age})
        retry_at = runtime.retry_at.get(service)
        waiting = retry_at is not None and retry_at > now
        last = self.history.last(runtime.name, str(service))
        phase = runtime.phase.get(service)
        return {
            "enabled": section.enabled,
            "phase": str(phase) if phase is not None else None,
            "due": runtime.due.get(service, False),
            "commits_since_last": runtime.commits_since.get(service),
            "pending": pending,
            "consecutive_failures": runtime.consecutive_failures.get(service, 0),
            "retry_at": _iso(retry_at) if waiting else None,
            "next_due": _iso(retry_at if waiting else self.next_tick(runtime.name, service)),
            "last_run": last.to_json() if last is not None else None,
            # The plan the volume breaker holds (`clean --json`'s "held"), with the command approving it.
            "on_hold": runtime.on_hold.get(service),
            **({"archival": runtime.archival} if service is TableService.ARCHIVAL else {}),
        }

    def table(self, runtime: TableRuntime, now: datetime) -> dict[str, Any]:
        sizes = runtime.file_sizes
        return {
            "name": runtime.name,
            "base_path": redact(runtime.entry.settings.base_path),
            "state": self.table_state(runtime, now),
            "held": self.holds(runtime.name),
            "refusal": runtime.refusal.reason if runtime.refusal is not None else None,
            # The setting of ours that lifts the refusal (None: the table's hoodie.properties must change).
            "fix": "; ".join(runtime.fixes()) or None,
            "refused_services": sorted(str(s) for s in runtime.refused_services),
            "service_refusals": {
                # `change`: what the table or its writers must change instead, when the refusal says.
                str(s): {"reason": str(e), "fix": runtime.service_fix(s), "change": e.fix}
                for s, e in sorted(runtime.service_refusals.copy().items())
            },
            "services": {str(s): self._service(runtime, s, now) for s in TableService},
            "blockers": [blocker_json(b, now) for b in list(runtime.blockers)],
            "files": sizes.to_json() if sizes is not None else None,
        }

    def tables(self, query: TableQuery = ALL_FIRST_PAGE) -> dict[str, Any]:
        """The fleet's summary and one page of its tables, filtered and sorted (`service.daemon.fleet`)."""
        now = self.now()
        page, total, summary = select(self.runtimes(), lambda r: self.table_state(r, now), query, now)
        out: dict[str, Any] = {
            "generated_at": _iso(now),
            "summary": summary,
            "query": query.to_json(),
            "total": total,
            "tables": [self.table(runtime, now) for runtime in page],
        }
        discovery = self.discovery()
        if discovery is not None:
            out["discovery"] = discovery
        return out

    def table_detail(self, name: str) -> dict[str, Any] | None:
        runtime = self.runtimes().get(name)
        if runtime is None:
            return None
        now = self.now()
        return {
            **self.table(runtime, now),
            "history": [r.to_json() for r in reversed(self.history.runs(name))],
            "errors": [
                {"at": _iso(e.at), "service": str(e.service), "error": e.error} for e in runtime.errors
            ],
            "config": {
                "settings": redact(runtime.entry.settings.model_dump(mode="json")),
                "hoodie": redact(dict(sorted(runtime.entry.hoodie.raw.items()))),  # as configured
            },
        }
