"""Domain exceptions: one base class, each carrying the context a user needs to act on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class HudiTableServiceError(Exception):
    """Base of every error the product raises on purpose."""


class NotAHudiTableError(HudiTableServiceError):
    """The base path has no readable `.hoodie/hoodie.properties`."""


class UnsupportedTableError(HudiTableServiceError):
    """The table is a Hudi table the product must not touch (version, metadata table, layout)."""


class TableServicesRefusedError(UnsupportedTableError):
    """The table is readable (`status`), but a table service must not touch it (clustering of a
    merge-on-read table whose merge the reader does not reproduce: `TableConfig.check_service_supported`).
    `reason` is the kind of refusal, the `reason` label of `hudi_table_service_table_refused`:
    table_feature (a metadata-table partition or key generator not handled), table_version,
    table_type, merge, index_type (the writers' index a clustering would leave stale), timezone,
    compaction_strategy, writers_archive (the writers still archive the table), config (settings Hudi
    refuses together). `fix`, when known,
    says what lifts it (`check`, the status page)."""

    def __init__(self, message: str, *, reason: str = "table_feature", fix: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.fix = fix


class NeedsConfigurationError(TableServicesRefusedError):
    """The services could serve the table once a setting of ours is given (`setting` names it): a
    state to show with its fix, not a failure to retry."""

    def __init__(self, message: str, *, setting: str, reason: str) -> None:
        super().__init__(message, reason=reason, fix=setting)
        self.setting = setting


class CorruptTableError(HudiTableServiceError):
    """A file under `.hoodie` (or a data file name) cannot be parsed; the message names the file."""


class StoredFileReadError(HudiTableServiceError):
    """A stored file could not be read: content that does not decode (a decompression or thrift error
    is an OSError to pyarrow) or a storage failure, which cannot be told apart; the message names it."""


class InstantExistsError(HudiTableServiceError):
    """Create-if-absent of a timeline file found it already there (another process won the race)."""


class ConfigError(HudiTableServiceError):
    """Configuration rejected; the message names the table, the key and the value."""


class LockError(HudiTableServiceError):
    """The table lock could not be acquired, or was lost while held."""


class ConflictError(HudiTableServiceError):
    """A commit would drop concurrent changes; the operation must roll back instead."""


class PlanRefusedError(HudiTableServiceError):
    """A plan fails a safety rule (e.g. a clean that would delete the latest snapshot)."""


class VolumeBreakerError(PlanRefusedError):
    """A clean the volume breaker holds: it would delete more of the live file groups' files than the
    limit. Not a failure: the clean is held until this very plan is approved (`digest`, bound to the
    files it deletes: `clean --approve`) or forced, and the table's other services go on. `counts`
    says how much would go (files and bytes against the live ones, per partition)."""

    def __init__(self, message: str, *, digest: str, counts: Mapping[str, Any], approve: str) -> None:
        super().__init__(message)
        self.digest = digest
        self.counts = dict(counts)
        self.approve = approve  # the command that approves this plan once


class DeleteFailedError(HudiTableServiceError):
    """A file a clean or rollback must delete is still on storage; the message names it."""


class PathOutsideTableError(PlanRefusedError):
    """A path read from a stored file (plan, metadata, marker) breaks the confinement rule.

    Nothing is read, deleted or rolled back for that stored file: the whole plan is refused.
    """

    def __init__(self, table: str, source: str, field: str, path: str, reason: str) -> None:
        super().__init__(f"table {table!r}: {source}: {field} holds {path!r}, refused: {reason}")
        self.table = table
        self.source = source
        self.field = field
        self.path = path
        self.reason = reason


class InstantOwnedError(HudiTableServiceError):
    """A pending instant is being executed by another process (its heartbeat is alive): leave it alone.

    Not a failure of this process: the daemon skips the tick, the CLI exits non-zero saying why.
    """

    def __init__(self, message: str, *, instant: str, heartbeat_age_seconds: float | None = None) -> None:
        super().__init__(message)
        self.instant = instant
        self.heartbeat_age_seconds = heartbeat_age_seconds


class HeartbeatLostError(HudiTableServiceError):
    """This process's heartbeat of an instant lapsed past the expiry window: it no longer owns it."""

    def __init__(self, message: str, *, instant: str) -> None:
        super().__init__(message)
        self.instant = instant


class LogBlockError(HudiTableServiceError):
    """A Hudi log file block the reader cannot serve; the message names the file and block offset."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        super().__init__(f"log file {path!r}, block at offset {offset}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class CorruptLogBlockError(LogBlockError, CorruptTableError):
    """Bytes that are no valid block where Hudi's own reader would fail too (not a torn write)."""


class UnsupportedLogBlockError(LogBlockError, UnsupportedTableError):
    """A valid block of a kind the reader refuses by name (Kryo deletes, HFile data, newer writers)."""


class UnsupportedMergeError(UnsupportedTableError):
    """A payload class or record merger whose merge semantics the service does not reproduce."""


class MetadataTableBusyError(InstantOwnedError):
    """The metadata table has work pending that Hudi's writers finish (an MDT compaction, an indexing,
    a restore; `instant` names it): like an instant owned elsewhere, the daemon skips the tick and the
    next one retries, rather than write around it."""


class MetadataListingMismatchError(CorruptTableError):
    """The metadata table's `files` listing and storage disagree on a committed data file: which one
    is right cannot be known, so nothing destructive runs on the table (the message names the table,
    partition, file, what the MDT says and what storage says)."""

    def __init__(self, message: str, *, table: str, partition: str, file_name: str) -> None:
        super().__init__(message)
        self.table = table
        self.partition = partition
        self.file_name = file_name


class TrashRunMissingError(HudiTableServiceError):
    """A trash run asked for by name is not there: never moved there, or emptied after its retention
    (`service.trash`)."""
