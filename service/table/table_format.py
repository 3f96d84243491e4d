"""The one place that reads a table's version: `TableFormat`, chosen once when a table is opened.

Table versions 6, 8 and 9 share one model (timeline, file-system view, codecs). Where they differ, the
difference is a part of the format object (the timeline layout today; codecs, the slicing rule and the
metadata-table rules as they are served), never a branch on the version elsewhere. Version 6 is what
Hudi 0.14/0.15 write (and Hudi 1.x when told to keep version 6); version 8 is Hudi 1.0's, version 9
Hudi 1.1's (`HoodieTableVersion`). Version 7 (Hudi 0.16's bridge) and every other version are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.errors import TableServicesRefusedError, UnsupportedTableError
from service.table.codecs.compaction import COMPACTION_PLAN_SCHEMA_0_15
from service.table.codecs.replace import REQUESTED_REPLACE_SCHEMA_0_15
from service.table.layout import TimelineLayout
from service.table.mdt.mdt_format import MDT_FORMAT_V6, MDT_FORMATS, MdtFormat
from service.table.properties import PROPERTIES_FILE, TableConfig, TableServiceKind

SERVED_TABLE_VERSIONS = (6, 8, 9)
# `HoodieTableVersion` -> the timeline layout version its tables must carry (`TimelineLayoutVersion`).
_LAYOUT_OF_VERSION = {6: 1, 8: 2, 9: 2}
_NOT_SERVED = (
    "{service} of table version {version} is not served; `status` reads the table (the service serves "
    "table versions 6, 8 and 9)"
)


@dataclass(frozen=True)
class TableFormat:
    """A table version's rules, as parts; the rest of the service asks these, never the version."""

    table_version: int
    layout: TimelineLayout
    services: frozenset[TableServiceKind]
    # Whether listings may come from the metadata table's `files` partition. Off on 8/9 until the
    # reader of Hudi 1.x's metadata table (per-deltacommit log files) is proven: storage is listed.
    lists_through_mdt: bool
    # How this version's metadata table is written (`service.table.mdt.mdt_format`).
    mdt: MdtFormat
    # How a rollback undoes a deltacommit's log files: deletes them whole (1.x names every log file by
    # the deltacommit that wrote it; `RollbackHelperFactory` picks `RollbackHelper` on 8+, and a CREATE
    # marker is placed for each new log file), or voids the blocks it appended with a rollback command
    # block (0.x, `RollbackHelperV1`: log files are shared by the deltacommits of a slice).
    rollback_deletes_log_files: bool
    # What `T.clean.inflight` holds: the plan again (Hudi 0.x, 1.0.x), or nothing (1.1.x's
    # `ActiveTimelineV2.transitionCleanRequestedToInflight`).
    clean_inflight_holds_plan: bool
    # The schema file a compaction plan is written in: 0.15's for version 6, else the newest (1.x's,
    # with `missingSchedulePartitions`).
    compaction_plan_schema: str | None = None
    # The same for a clustering plan (`HoodieRequestedReplaceMetadata`).
    clustering_plan_schema: str | None = None

    @classmethod
    def for_table(cls, config: TableConfig, base_uri: str, *, strict: bool = True) -> TableFormat:
        """The format of a table; UnsupportedTableError for a version the service does not read.

        With `strict` off (tests that inspect tables the service refuses), an unknown version still
        gets the layout its `hoodie.timeline.layout.version` names, and no service.
        """
        version = config.version
        layout_version = config.timeline_layout_version
        layout = _layout(config, layout_version)
        expected = _LAYOUT_OF_VERSION.get(version)
        if expected is None or expected != layout_version:
            if strict:
                raise UnsupportedTableError(_unsupported(config, base_uri, expected))
            return cls(
                table_version=version,
                layout=layout,
                services=frozenset(),
                lists_through_mdt=False,
                mdt=MDT_FORMAT_V6,
                rollback_deletes_log_files=layout.slices_logs_by_completion_time,
                clean_inflight_holds_plan=True,
            )
        v6 = version == 6
        return cls(
            table_version=version,
            layout=layout,
            services=frozenset(TableServiceKind),
            lists_through_mdt=v6,
            mdt=MDT_FORMATS[version],
            rollback_deletes_log_files=not v6,
            clean_inflight_holds_plan=version < 9,
            compaction_plan_schema=COMPACTION_PLAN_SCHEMA_0_15 if v6 else None,
            clustering_plan_schema=REQUESTED_REPLACE_SCHEMA_0_15 if v6 else None,
        )

    def accepted_mdt_partitions(self, config: TableConfig) -> tuple[str, ...]:
        """The MDT partitions a served table may have (`MdtFormat.accepts`), the table's own
        families (`secondary_index_<name>`) among them."""
        own = tuple(p for p in config.metadata_partitions if self.mdt.accepts(p))
        return tuple(dict.fromkeys((*self.mdt.partitions, *own)))

    def serves(self, service: TableServiceKind) -> bool:
        return service in self.services

    def check_serves(self, service: TableServiceKind, config: TableConfig, base_uri: str) -> None:
        """TableServicesRefusedError (a refusal with its way out, not a failure) when not served."""
        where = f"table {config.name!r} at {base_uri}"
        if not self.serves(service):
            reason = _NOT_SERVED.format(service=service.value, version=self.table_version)
            raise TableServicesRefusedError(f"{where}: {reason}", reason="table_version")
        try:
            config.check_supported(base_uri, self.accepted_mdt_partitions(config))
        except TableServicesRefusedError:
            raise
        except UnsupportedTableError as exc:
            raise TableServicesRefusedError(str(exc)) from exc


def _layout(config: TableConfig, layout_version: int) -> TimelineLayout:
    if layout_version >= 2:
        return TimelineLayout.v2(
            timeline_path=config.timeline_path, history_path=config.timeline_history_path
        )
    return TimelineLayout.v1()


def _unsupported(config: TableConfig, base_uri: str, expected_layout: int | None) -> str:
    where = f"table {config.name!r} at {base_uri}: {PROPERTIES_FILE}"
    if expected_layout is None:
        served = ", ".join(str(v) for v in SERVED_TABLE_VERSIONS)
        return (
            f"{where} has hoodie.table.version={config.version}; the service reads table versions {served} "
            "(Hudi 0.14/0.15, 1.0, 1.1)"
        )
    return (
        f"{where} has hoodie.table.version={config.version} with hoodie.timeline.layout.version="
        f"{config.timeline_layout_version}; table version {config.version} requires layout version "
        f"{expected_layout}"
    )
