"""Property: over random histories, no file needed by the latest snapshot, a retained commit, a
savepoint or a pending operation is ever planned for deletion, whatever the policy.

Histories are built in memory (timeline, listing, decoded facts) and tracked independently of the
file-system view, so the expectations are not derived from the code under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.config.cleaning import CleanConfig, CleaningPolicy
from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.storage import FileStatus
from service.table.timeline import Timeline
from strategies.cleaning import CleanSnapshot, LastClean, earliest_commit_to_retain, plan_clean
from tests.clean.helpers import clean_config
from tests.support.fixtures import ts

PARTITIONS = ("p0", "p1", "p2")
FgId = tuple[str, str]


@dataclass
class History:
    instants: list[Instant] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # every data file path -> size
    uncommitted: set[str] = field(default_factory=set)
    # Committed slices: file group -> base instant -> paths (base file and log files).
    slices: dict[FgId, dict[str, list[str]]] = field(default_factory=dict)
    replaced: dict[FgId, str] = field(default_factory=dict)
    pending_clustering: dict[FgId, str] = field(default_factory=dict)
    clustering_names: set[str] = field(default_factory=set)
    pending_compaction: dict[FgId, tuple[str, str]] = field(default_factory=dict)
    savepoints: dict[str, frozenset[str]] = field(default_factory=dict)
    commit_partitions: dict[str, frozenset[str]] = field(default_factory=dict)
    next_id: int = 0
    minute: int = 0

    def live(self, partition: str | None = None) -> list[FgId]:
        return sorted(
            fg for fg in self.slices if fg not in self.replaced and (partition is None or fg[0] == partition)
        )

    def latest_base(self, fg: FgId) -> str:
        return max(self.slices[fg])

    def new_fg(self, partition: str) -> FgId:
        self.next_id += 1
        return (partition, f"{self.next_id:08d}-0000-0000-0000-000000000000-0")

    def base_file(self, fg: FgId, instant: str, committed: bool, size: int) -> None:
        path = f"{fg[0]}/{fg[1]}_0-0-0_{instant}.parquet"
        self.files[path] = size
        if committed:
            self.slices.setdefault(fg, {})[instant] = [path]
        else:
            self.uncommitted.add(path)

    def log_file(self, fg: FgId, base: str, size: int) -> None:
        paths = self.slices.setdefault(fg, {}).setdefault(base, [])
        version = sum(1 for p in paths if ".log." in p) + 1
        path = f"{fg[0]}/.{fg[1]}_{base}.log.{version}_0-0-0"
        self.files[path] = size
        paths.append(path)


@st.composite
def histories(draw: st.DrawFn) -> History:
    h = History()
    for _ in range(draw(st.integers(2, 16))):
        h.minute += draw(st.integers(1, 90))
        now = ts(h.minute)
        kind = draw(
            st.sampled_from(
                ["commit"] * 4
                + ["pending_commit", "replace", "savepoint", "clustering", "compaction", "logs"]
            )
        )
        size = draw(st.integers(1, 1000))
        if kind in ("commit", "pending_commit"):
            completed = kind == "commit"
            touched: set[str] = set()
            for partition in draw(st.sets(st.sampled_from(PARTITIONS), min_size=1)):
                live = h.live(partition)
                updates = draw(st.lists(st.sampled_from(live), unique=True)) if live else []
                new = [h.new_fg(partition) for _ in range(draw(st.integers(0 if updates else 1, 2)))]
                for fg in updates + new:
                    h.base_file(fg, now, completed, size)
                touched.add(partition)
            h.instants.append(Instant(now, Action.COMMIT, State.COMPLETED if completed else State.INFLIGHT))
            if completed:
                h.commit_partitions[now] = frozenset(touched)
        elif kind == "replace":
            partition = draw(st.sampled_from(PARTITIONS))
            candidates = [fg for fg in h.live(partition) if fg not in h.pending_clustering]
            if not candidates:
                continue
            for fg in draw(st.lists(st.sampled_from(candidates), unique=True, min_size=1)):
                h.replaced[fg] = now
            if draw(st.booleans()):
                h.base_file(h.new_fg(partition), now, True, size)
            h.instants.append(Instant(now, Action.REPLACE_COMMIT, State.COMPLETED))
            h.commit_partitions[now] = frozenset({partition})
        elif kind == "savepoint":
            done = [i.timestamp for i in h.instants if i.is_completed and i.action is not Action.SAVEPOINT]
            free = [t for t in done if t not in h.savepoints]
            if not free:
                continue
            at = draw(st.sampled_from(free))
            names = {p.rsplit("/", 1)[1] for fg in h.live() for p in h.slices[fg][h.latest_base(fg)]}
            h.savepoints[at] = frozenset(names)
            h.instants.append(Instant(at, Action.SAVEPOINT, State.COMPLETED))
        elif kind == "clustering":
            candidates = [fg for fg in h.live() if fg not in h.pending_clustering]
            if not candidates:
                continue
            for fg in draw(st.lists(st.sampled_from(candidates), unique=True, min_size=1, max_size=3)):
                h.pending_clustering[fg] = now
                h.clustering_names |= {p.rsplit("/", 1)[1] for p in h.slices[fg][h.latest_base(fg)]}
            h.instants.append(Instant(now, Action.REPLACE_COMMIT, State.REQUESTED))
        elif kind == "compaction":
            candidates = [fg for fg in h.live() if fg not in h.pending_compaction]
            if not candidates:
                continue
            fg = draw(st.sampled_from(candidates))
            h.pending_compaction[fg] = (now, h.latest_base(fg))
            h.slices[fg].setdefault(now, [])  # logs written from now on go to the compaction's slice
            h.instants.append(Instant(now, Action.COMPACTION, State.REQUESTED))
        else:  # a completed deltacommit appending log files to the latest slices
            live = h.live()
            if not live:
                continue
            chosen = draw(st.lists(st.sampled_from(live), unique=True, min_size=1))
            for fg in chosen:
                base = h.pending_compaction[fg][0] if fg in h.pending_compaction else h.latest_base(fg)
                h.log_file(fg, base, size)
            h.instants.append(Instant(now, Action.DELTA_COMMIT, State.COMPLETED))
            h.commit_partitions[now] = frozenset(fg[0] for fg in chosen)
    # Drop compaction slices no log file was ever written to: they have no files.
    for fg in list(h.slices):
        h.slices[fg] = {b: paths for b, paths in h.slices[fg].items() if paths}
    return h


def _view(h: History, partitions: tuple[str, ...] = PARTITIONS) -> FileSystemView:
    listing: dict[str, list[FileStatus]] = {
        p: [FileStatus(f"{p}/.hoodie_partition_metadata", 10, False)] for p in partitions
    }
    for path, size in h.files.items():
        if path.split("/", 1)[0] in listing:
            listing[path.split("/", 1)[0]].append(FileStatus(path, size, False))
    facts = TimelineFacts(h.replaced, h.pending_clustering, h.pending_compaction, h.savepoints)
    return FileSystemView.build(Timeline.of(h.instants), listing, facts)


def _needed(h: History, config: CleanConfig, ectr: Instant | None) -> set[str]:
    """Files the plan must never contain, computed from the history alone."""
    needed: set[str] = set(h.uncommitted)
    for fg, by_base in h.slices.items():
        if not by_base:
            continue
        if fg not in h.replaced:
            needed |= set(by_base[max(by_base)])  # the latest snapshot
        if fg in h.pending_compaction:  # slices the pending compaction reads or writes into
            needed |= {
                p for base, paths in by_base.items() if base >= h.pending_compaction[fg][1] for p in paths
            }
        for paths in by_base.values():
            names = {p.rsplit("/", 1)[1] for p in paths}
            if names & (h.clustering_names | {n for s in h.savepoints.values() for n in s}):
                needed |= set(paths)
    if ectr is not None:  # time travel to every retained commit reads the slice current at it
        completed = [i.timestamp for i in h.instants if i.is_completed and i.action is not Action.SAVEPOINT]
        for as_of in (t for t in completed if t >= ectr.timestamp):
            for fg, by_base in h.slices.items():
                if fg in h.replaced and h.replaced[fg] <= as_of:
                    continue
                visible = [b for b in by_base if b <= as_of]
                if visible:
                    needed |= set(by_base[max(visible)])
    return needed


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=histories(),
    policy=st.sampled_from(list(CleaningPolicy)),
    retained=st.integers(1, 4),
    extra_minutes=st.integers(0, 240),
    last_clean_at=st.one_of(st.none(), st.integers(0, 1500)),
)
def test_plan_never_deletes_a_needed_file(
    history: History, policy: CleaningPolicy, retained: int, extra_minutes: int, last_clean_at: int | None
) -> None:
    key = {
        CleaningPolicy.KEEP_LATEST_COMMITS: "hoodie.cleaner.commits.retained",
        CleaningPolicy.KEEP_LATEST_BY_HOURS: "hoodie.cleaner.hours.retained",
        CleaningPolicy.KEEP_LATEST_FILE_VERSIONS: "hoodie.cleaner.fileversions.retained",
    }[policy]
    config = clean_config({"hoodie.cleaner.policy": policy.value, key: retained})
    now = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=history.minute + extra_minutes)
    last_clean = None
    if last_clean_at is not None:  # exercises the incremental scan (it may only scan less)
        last_clean = LastClean(ts(history.minute + 1), ts(last_clean_at), ts(last_clean_at))
    view = _view(history)
    snapshot = CleanSnapshot(
        timeline=view.timeline,
        views=(view,),
        facts=view.facts,
        timeline_zone=UTC,
        commit_partitions=history.commit_partitions,
        last_clean=last_clean,
        pending_clustering_file_names=frozenset(history.clustering_names),
    )
    plan = plan_clean(snapshot, config, now)
    # The table a partition at a time (as `HudiTable.iter_views` hands a large table over, in any
    # order): the same plan.
    batches = tuple(_view(history, (p,)) for p in reversed(PARTITIONS))
    assert plan_clean(replace(snapshot, views=batches), config, now) == plan
    if plan is None:
        return
    paths = [t.path for t in plan.all_targets]
    assert len(paths) == len(set(paths))
    assert set(paths) <= set(history.files)
    ectr = earliest_commit_to_retain(view.timeline, config, now, UTC)
    assert plan.earliest_commit_to_retain == ectr
    assert not set(paths) & _needed(history, config, ectr)
