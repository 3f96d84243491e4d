"""`CompactionConfig`: the `HoodieCompactionConfig` keys the compaction scheduler reads, typed, frozen."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import auto

from service.config.hoodie_keys import COMPACTION_STRATEGY
from service.config.reader import KeyReader
from service.config.values import JavaEnum
from service.errors import ConfigError, NeedsConfigurationError

_STRATEGY = "org.apache.hudi.table.action.compact.strategy."


class CompactionTriggerStrategy(JavaEnum):
    """`hoodie.compact.inline.trigger.strategy` (Java's `CompactionTriggerStrategy`, read with `valueOf`)."""

    NUM_COMMITS = auto()
    NUM_COMMITS_AFTER_LAST_REQUEST = auto()
    TIME_ELAPSED = auto()
    NUM_AND_TIME = auto()
    NUM_OR_TIME = auto()


class CompactionStrategyKind(JavaEnum):
    """The `CompactionStrategy` a class name selects, among those the planner reproduces."""

    LOG_FILE_SIZE_BASED = auto()  # threshold on log bytes, largest first, then bounded IO (Hudi's default)
    BOUNDED_IO = auto()  # Java's order, bounded IO
    UNBOUNDED = auto()  # every candidate


COMPACTION_STRATEGY_CLASSES: Mapping[str, CompactionStrategyKind] = {
    _STRATEGY + "LogFileSizeBasedCompactionStrategy": CompactionStrategyKind.LOG_FILE_SIZE_BASED,
    _STRATEGY + "BoundedIOCompactionStrategy": CompactionStrategyKind.BOUNDED_IO,
    _STRATEGY + "UnBoundedCompactionStrategy": CompactionStrategyKind.UNBOUNDED,
}

# Real Hudi strategies whose plans the planner does not reproduce (yet): refused, not approximated.
UNSUPPORTED_COMPACTION_STRATEGY_CLASSES: tuple[str, ...] = tuple(
    _STRATEGY + name
    for name in (
        "LogFileNumBasedCompactionStrategy",
        "DayBasedCompactionStrategy",
        "BoundedPartitionAwareCompactionStrategy",
        "UnBoundedPartitionAwareCompactionStrategy",
    )
)


@dataclass(frozen=True)
class CompactionConfig:
    """Compaction settings with Hudi's defaults."""

    trigger_strategy: CompactionTriggerStrategy
    max_delta_commits: int
    max_delta_seconds: int
    strategy_class: str
    # None: a real Hudi strategy the planner does not reproduce; only scheduling refuses it (`require_
    # strategy`), so a writer's config pasted whole still serves cleaning and clustering.
    strategy_kind: CompactionStrategyKind | None
    strategy_refusal: str | None
    target_io_mb: int
    log_file_size_threshold_bytes: int

    @classmethod
    def from_reader(cls, r: KeyReader) -> CompactionConfig:
        strategy_class = r.get_str(COMPACTION_STRATEGY).strip()
        kind = COMPACTION_STRATEGY_CLASSES.get(strategy_class)
        refusal = None if kind is not None else str(_refusal(r, strategy_class))
        return cls(
            trigger_strategy=CompactionTriggerStrategy(r.get_str("hoodie.compact.inline.trigger.strategy")),
            max_delta_commits=r.get_int("hoodie.compact.inline.max.delta.commits"),
            max_delta_seconds=r.get_int("hoodie.compact.inline.max.delta.seconds"),
            strategy_class=strategy_class,
            strategy_kind=kind,
            strategy_refusal=refusal,
            target_io_mb=r.get_int("hoodie.compaction.target.io"),
            log_file_size_threshold_bytes=r.get_int("hoodie.compaction.logfile.size.threshold"),
        )

    def strategy_not_planned(self, setting: str) -> NeedsConfigurationError | None:
        """Scheduling's refusal of a strategy the planner does not reproduce, lifted by `setting` (where
        the caller's `hoodie.compaction.strategy` comes from); None when the strategy is planned."""
        if self.strategy_kind is not None:
            return None
        return NeedsConfigurationError(
            self.strategy_refusal or f"{COMPACTION_STRATEGY} is not supported",
            setting=setting,
            reason="compaction_strategy",
        )

    def require_strategy(self) -> CompactionStrategyKind:
        """The strategy to plan with; ConfigError when the configured class is not reproduced."""
        if self.strategy_kind is None:
            raise ConfigError(self.strategy_refusal or f"{COMPACTION_STRATEGY} is not supported")
        return self.strategy_kind


def _refusal(r: KeyReader, class_name: str) -> ConfigError:
    # Java (`HoodieWriteConfig.getCompactionStrategy`) also takes a comma-separated list, composed by
    # `CompositeCompactionStrategy`: refused with the other strategies not reproduced here.
    known = list(COMPACTION_STRATEGY_CLASSES)
    if class_name in UNSUPPORTED_COMPACTION_STRATEGY_CLASSES or "," in class_name:
        return r.error(
            COMPACTION_STRATEGY,
            f"is not supported by the product (its plans are not reproduced); supported: {', '.join(known)}",
        )
    closest = difflib.get_close_matches(class_name, known, n=1, cutoff=0.0)
    return r.error(
        COMPACTION_STRATEGY, f"is not a known compaction strategy class; closest known: {closest[0]}"
    )
