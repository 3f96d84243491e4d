"""The volume breaker's count as pure logic over an in-memory file-system view (no files, no Spark).

It compares a plan's deletions of files of live file groups with every file of the live file groups
(every retained version); files of file groups a completed replacecommit replaced count for nothing.
"""

from __future__ import annotations

import re

from service.table.data_files import base_file_name
from service.table.fs_view import FileSystemView, TimelineFacts
from service.table.instant import Action, Instant, State
from service.table.storage import FileStatus
from service.table.timeline import Timeline
from strategies.cleaning import (
    VolumeCount,
    count_volume,
    live_file_sizes,
    plan_digest,
    suspect_replaced_groups,
    volume_refusal,
)
from tests.support.fixtures import ts

SIZE = 100
REPLACE = ts(10)
TIMELINE = Timeline.of(
    [Instant(ts(i), Action.COMMIT, State.COMPLETED) for i in range(1, 7)]
    + [Instant(REPLACE, Action.REPLACE_COMMIT, State.COMPLETED)]
)


def _path(file_id: str, i: int) -> str:
    return f"p/{base_file_name(file_id, '0-0-0', ts(i))}"


def _view() -> FileSystemView:
    """Live groups g1, g2 with 6 versions each (ts 1-6); groups r1-r6, one version each, replaced by
    a clustering that wrote n1 (one version): 13 live files, 6 replaced ones."""
    paths = [_path(g, i) for g in ("g1", "g2") for i in range(1, 7)]
    paths += [_path(f"r{n}", 1) for n in range(1, 7)] + [f"p/{base_file_name('n1', '0-0-0', REPLACE)}"]
    listing = {"p": [FileStatus(p, SIZE, False) for p in paths]}
    facts = TimelineFacts(replaced={("p", f"r{n}"): REPLACE for n in range(1, 7)})
    return FileSystemView.build(TIMELINE, listing, facts)


REPLACED = {_path(f"r{n}", 1): SIZE for n in range(1, 7)}


def _old_versions(keep: int) -> dict[str, int]:
    """The versions of g1 and g2 older than their newest `keep`."""
    return {_path(g, i): SIZE for g in ("g1", "g2") for i in range(1, 7 - keep)}


def test_live_file_sizes_are_every_version_of_live_groups_only() -> None:
    live = live_file_sizes(_view())
    assert len(live) == 13 and not set(REPLACED) & set(live)


def test_replaced_groups_files_count_in_neither_numerator_nor_denominator() -> None:
    count = count_volume(REPLACED, live_file_sizes(_view()))
    assert count == VolumeCount(0, 0, 13, 13 * SIZE, replaced_files=6)
    assert volume_refusal("t", "c1", count, 0.75) is None  # every file of the plan replaced: never trips


def test_a_plan_deleting_most_live_versions_trips_whatever_replaced_files_it_holds() -> None:
    live = live_file_sizes(_view())
    most = count_volume({**REPLACED, **_old_versions(keep=1)}, live)  # 10 of 13 live files: 77%
    assert (most.files_to_delete, most.live_files, most.replaced_files) == (10, 13, 6)
    assert re.search(
        r"10 of the 13 files of live file groups \(.*77%.*6 file\(s\)",
        volume_refusal("t", "c1", most, 0.75) or "",
    )
    # Without the replaced files in the plan it trips alike; keeping 2 versions (8 of 13, 62%) passes.
    assert "10 of the 13" in (
        volume_refusal("t", "c1", count_volume(_old_versions(keep=1), live), 0.75) or ""
    )
    assert volume_refusal("t", "c1", count_volume({**REPLACED, **_old_versions(keep=2)}, live), 0.75) is None


def test_a_plans_digest_is_its_set_of_files_whatever_their_order_or_grouping() -> None:
    """An approval binds to the files a plan deletes: the same files give the same digest, in any
    order or partition grouping; one file more or less gives another."""
    files = {"p": ["p/a.parquet", "p/b.parquet"], "q": ["q/c.parquet"]}
    digest = plan_digest(files)
    assert len(digest) == 20 and int(digest, 16) >= 0
    assert plan_digest({"q": ["q/c.parquet"], "p": ["p/b.parquet", "p/a.parquet"]}) == digest
    assert plan_digest({"all": ["q/c.parquet", "p/a.parquet", "p/b.parquet"]}) == digest
    assert plan_digest({"p": ["p/a.parquet"], "q": ["q/c.parquet"]}) != digest
    assert plan_digest({**files, "r": ["r/d.parquet"]}) != digest


def test_a_group_a_replacecommit_names_but_a_later_instant_wrote_to_counts_as_live_by_name() -> None:
    """A corrupt replacecommit naming live groups g1 and g2 (which commit ts(11) still wrote to after
    it) would let every version of them through uncounted: they count as live, and are named."""
    timeline = Timeline.of([*TIMELINE.instants, Instant(ts(11), Action.COMMIT, State.COMPLETED)])
    paths = [_path(g, i) for g in ("g1", "g2") for i in (*range(1, 7), 11)]
    paths += [_path(f"r{n}", 1) for n in range(1, 7)] + [f"p/{base_file_name('n1', '0-0-0', REPLACE)}"]
    listing = {"p": [FileStatus(p, SIZE, False) for p in paths]}
    replaced = {("p", g): REPLACE for g in ("g1", "g2", *(f"r{n}" for n in range(1, 7)))}
    view = FileSystemView.build(timeline, listing, TimelineFacts(replaced=replaced))
    assert suspect_replaced_groups(view) == (("p", "g1"), ("p", "g2"))
    live = live_file_sizes(view)
    assert len(live) == 15 and not set(REPLACED) & set(live)  # g1 and g2 (7 versions each) and n1
    everything = {_path(g, i): SIZE for g in ("g1", "g2") for i in (*range(1, 7), 11)}
    count = count_volume(everything, live, suspect_replaced_groups(view))
    assert (count.files_to_delete, count.suspect_groups) == (14, ("p/g1", "p/g2"))
    reason = volume_refusal("t", "c1", count, 0.75) or ""
    assert "14 of the 15 files" in reason and "2 file group(s) a replacecommit names" in reason
    assert "(p/g1, p/g2)" in reason
    # Without the later write, the replacecommit's word stands: g1 and g2 count for nothing.
    honest = FileSystemView.build(TIMELINE, {"p": [s for s in listing["p"] if ts(11) not in s.path]},
                                  TimelineFacts(replaced=replaced))  # fmt: skip
    assert suspect_replaced_groups(honest) == () and len(live_file_sizes(honest)) == 1
