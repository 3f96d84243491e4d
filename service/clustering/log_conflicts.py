"""The clustering commit's check for writers' log appends to its input file groups (merge-on-read).

On a merge-on-read table a writer's update to a file group is a deltacommit that appends a log file
to the group's latest slice; the slice's base instant stays the same, so the base-instant check of
`orchestrator.check_no_conflict` cannot see it, and committing the replacecommit would drop the
update with the replaced group. Hudi's own writers find such a conflict by file id: the completed
deltacommit's write stats name the group (`ConcurrentOperation.init`,
`SimpleConcurrentFileWritesConflictResolutionStrategy.hasConflict`). Under the table lock, just
before the replacecommit is written, this refuses (ConflictError naming the instant, the group and
the log file) when:

1. a commit or deltacommit completed that the execution did not read (not completed when its merged
   read began) has a write stat on an input file group;
2. an input group's latest slice holds a log file the plan did not list with a data or delete block
   of a commit or deltacommit still on the timeline (completed or pending: a pending one may still
   complete; blocks of rolled-back instants, gone from the timeline, and rollback command blocks
   change nothing);
3. a commit or deltacommit pending when the read began and still pending wrote a block into a log
   file the plan listed: the read skipped that block (`scanInternalV1` skips blocks of instants not
   completed), and the write may still complete;
4. on timeline layout 2 (table versions 8 and 9), where each deltacommit writes log files of its own
   that count only once it completes: an input group has a log file of a deltacommit still pending
   on the timeline (it may complete after the replacecommit, into a replaced group).
"""

from __future__ import annotations

from service.errors import ConflictError
from service.table.clustering_plan import PlannedClustering
from service.table.data_files import LogFile, parse_log_file
from service.table.fs_view import FileGroupId, FileSystemView
from service.table.instant import Action
from service.table.log_format.blocks import DataBlock, DeleteBlock
from service.table.log_format.merge import InstantFilter
from service.table.log_format.slice_reader import read_log_file
from service.table.table import HudiTable
from service.table.timeline import Timeline

# The writes that append log files (deltacommit) or write base files (commit) to a file group.
_WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT})


def check_no_log_appends(
    table: HudiTable,
    instant_time: str,
    plan: PlannedClustering,
    view: FileSystemView,
    timeline: Timeline,
    read_instants: InstantFilter,
) -> None:
    """Raise ConflictError if a writer's update to an input file group would be dropped (module doc)."""
    inputs = plan.input_file_groups
    writes = timeline.by_actions(_WRITE_ACTIONS)
    for instant in writes.completed().instants:
        if instant.timestamp in read_instants.completed:
            continue
        touched = table.facts_reader.commit_metadata(instant).written_file_groups() & inputs
        if touched:
            raise ConflictError(
                f"{table.base_uri}: {instant.action.value} {instant.timestamp} wrote file group(s) "
                f"{sorted(touched)} after clustering {instant_time} read them; committing would drop "
                "that update"
            )
    pending = {i.timestamp for i in writes.pending().instants}
    if table.layout.slices_logs_by_completion_time:
        _refuse_pending_log_files(table, instant_time, inputs, view, pending)
    on_timeline = {i.timestamp for i in writes.instants}
    lingering = {i.timestamp for i in writes.pending().instants} & read_instants.pending
    planned = {p for g in plan.groups for s in g.slices for p in s.log_file_paths}
    for fg_id in sorted(inputs):
        group = view.file_groups.get(fg_id)
        latest = group.latest_slice if group is not None else None
        for log in latest.log_files if latest is not None else ():
            watched = lingering if log.path in planned else on_timeline
            if watched:
                _refuse_blocks_of(table, instant_time, fg_id, log, watched)


def _refuse_pending_log_files(
    table: HudiTable,
    instant_time: str,
    inputs: frozenset[FileGroupId],
    view: FileSystemView,
    pending: set[str],
) -> None:
    for path in view.uncommitted_files:
        partition, _, name = path.rpartition("/")
        log = parse_log_file(partition, name)
        if log is None or (partition, log.file_id) not in inputs:
            continue
        if log.base_instant_time in pending:  # layout 2: the deltacommit that writes the file
            raise ConflictError(
                f"{table.base_uri}: deltacommit {log.base_instant_time}, still pending, writes file group "
                f"{(partition, log.file_id)} (log file {path}) that clustering {instant_time} replaces; "
                "committing could drop that update"
            )


def _refuse_blocks_of(
    table: HudiTable, instant_time: str, fg_id: FileGroupId, log: LogFile, instants: set[str]
) -> None:
    for block in read_log_file(table.storage, log):
        if isinstance(block, DataBlock | DeleteBlock) and block.instant_time in instants:
            raise ConflictError(
                f"{table.base_uri}: write {block.instant_time} appended to file group {fg_id} "
                f"(log file {log.path}) after clustering {instant_time} read it; committing would "
                "drop that update"
            )
