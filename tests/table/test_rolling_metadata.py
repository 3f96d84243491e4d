"""Rolling metadata keys (Hudi 1.2's `mergeRollingMetadata`), pure: which values a table service's
commit carries forward, and from which commits."""

from __future__ import annotations

from service.config.hoodie import HoodieConfig
from service.table.codecs import CommitSummary
from service.table.instant import Action, Instant, State
from service.table.rolling_metadata import RollingMetadata, carried_forward, recent_commits, rolled_forward
from service.table.timeline import Timeline

KEYS = RollingMetadata(("ckpt", "offset"), lookback=2)


def _done(timestamp: str, action: Action = Action.COMMIT, completion: str | None = None) -> Instant:
    return Instant(timestamp, action, State.COMPLETED, completion)


def test_a_key_comes_from_the_most_recent_commit_that_has_it_and_the_commits_own_value_wins() -> None:
    recent = [{"offset": ""}, {"ckpt": "new", "offset": "7"}, {"ckpt": "old"}]
    assert rolled_forward(KEYS, {}, recent) == {"ckpt": "new", "offset": "7"}
    # A value the commit sets is kept; an empty one (a clustering's empty schema) counts as missing.
    assert rolled_forward(KEYS, {"ckpt": "mine", "offset": ""}, recent) == {"offset": "7"}
    assert rolled_forward(RollingMetadata(), {}, recent) == {}


def test_only_the_lookback_most_recent_completed_commits_by_completion_time_are_searched() -> None:
    timeline = Timeline.of(
        [
            _done("001", completion="009"),  # completed last although requested first
            _done("002", Action.DELTA_COMMIT, "003"),
            _done("004", Action.REPLACE_COMMIT, "005"),
            _done("006", Action.CLEAN, "010"),  # not a commit: Hudi 1.2.0 does not look at cleans
            Instant("007", Action.COMMIT, State.INFLIGHT),
        ]
    )
    assert [i.timestamp for i in recent_commits(timeline, 2)] == ["001", "004"]
    assert recent_commits(timeline, 0) == []
    extra = {"001": {"ckpt": "a"}, "002": {"offset": "9"}, "004": {"offset": "5"}}
    summaries = {t: CommitSummary(extra_metadata=m) for t, m in extra.items()}
    carried = carried_forward(KEYS, timeline, {"schema": "s"}, lambda i: summaries[i.timestamp])
    assert carried == {"schema": "s", "ckpt": "a", "offset": "5"}  # 002's offset is past the lookback


def test_the_keys_are_read_as_hudis_write_config_reads_them() -> None:
    config = HoodieConfig.from_mapping(
        {
            "hoodie.write.rolling.metadata.keys": " ckpt, ,offset,ckpt ",
            "hoodie.write.rolling.metadata.timeline.lookback.commits": "3",
        },
        "t",
    )
    assert RollingMetadata.of(config) == RollingMetadata(("ckpt", "offset"), 3)
    assert RollingMetadata.of(HoodieConfig.from_mapping({}, "t")) == RollingMetadata((), 10)
