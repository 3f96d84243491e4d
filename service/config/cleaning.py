"""`CleanConfig` and `ArchivalConfig`: `HoodieCleanConfig` and `HoodieArchivalConfig` keys as typed views."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import auto

from service.config.hoodie_keys import (
    CLEANER_COMMITS_RETAINED,
    CLEANER_FILEVERSIONS_RETAINED,
    CLEANER_HOURS_RETAINED,
    CLEANER_POLICY,
    CLEANER_POLICY_FAILED_WRITES,
)
from service.config.locking import WriteConcurrencyMode
from service.config.reader import KeyReader
from service.config.values import JavaEnum


class CleaningPolicy(JavaEnum):
    KEEP_LATEST_COMMITS = auto()
    KEEP_LATEST_FILE_VERSIONS = auto()
    KEEP_LATEST_BY_HOURS = auto()


class FailedWritesCleaningPolicy(JavaEnum):
    EAGER = auto()
    LAZY = auto()
    NEVER = auto()


class CleaningTriggerStrategy(JavaEnum):
    NUM_COMMITS = auto()


# The product's volume breaker, not a Hudi key: a clean deleting more than this fraction of the files of
# a table's live file groups (replaced groups' files not counted: `strategies.cleaning.safety`) is
# refused unless forced (`daemon.deletion.max_delete_fraction`, `clean --max-delete-fraction`).
DEFAULT_MAX_DELETE_FRACTION = 0.75


POLICY_KEY = CLEANER_POLICY
FAILED_WRITES_KEY = CLEANER_POLICY_FAILED_WRITES
RETAINED_KEYS: dict[CleaningPolicy, str] = {
    CleaningPolicy.KEEP_LATEST_COMMITS: CLEANER_COMMITS_RETAINED,
    CleaningPolicy.KEEP_LATEST_BY_HOURS: CLEANER_HOURS_RETAINED,
    CleaningPolicy.KEEP_LATEST_FILE_VERSIONS: CLEANER_FILEVERSIONS_RETAINED,
}


def infer_cleaning_policy(r: KeyReader) -> tuple[CleaningPolicy, bool]:
    """The policy, and whether it was inferred (Hudi 0.14's rule).

    Without `hoodie.cleaner.policy`, a policy is inferred only when exactly one of the three retained keys
    is set; otherwise Hudi's default, KEEP_LATEST_COMMITS, applies.
    """
    if r.is_set(POLICY_KEY):
        return CleaningPolicy(r.get_str(POLICY_KEY)), False
    set_policies = [policy for policy, key in RETAINED_KEYS.items() if r.is_set(key)]
    if len(set_policies) == 1:
        return set_policies[0], True
    return CleaningPolicy(r.get_str(POLICY_KEY)), False


@dataclass(frozen=True)
class CleanConfig:
    """Cleaning settings with Hudi's defaults and inferences applied."""

    policy: CleaningPolicy
    policy_inferred: bool
    commits_retained: int
    hours_retained: int
    file_versions_retained: int
    trigger_strategy: CleaningTriggerStrategy
    max_commits: int  # completed commits since the last clean before a clean is scheduled
    incremental_mode: bool
    allow_multiple: bool
    parallelism: int
    failed_writes_policy: FailedWritesCleaningPolicy
    automatic: bool  # Java writers' setting (they run pending clean plans when true)
    async_clean: bool
    # Hudi 1.2's `hoodie.clean.max.commits.to.clean`; None: no cap (Java's Long.MAX_VALUE).
    max_commits_to_clean: int | None = None
    # Hudi 1.2's partition filter of full-scan cleans (`CleanPlanner.getPartitionPathsForFullCleaning`):
    # the selected list wins over the regex; both None: every partition.
    partition_filter_selected: tuple[str, ...] | None = None
    partition_filter_regex: str | None = None

    @property
    def partition_filter(self) -> str | None:
        """The filter's key and value as set, for messages; None when none is set."""
        if self.partition_filter_selected is not None:
            return f"hoodie.clean.partition.filter.selected={','.join(self.partition_filter_selected)}"
        if self.partition_filter_regex is not None:
            return f"hoodie.clean.partition.filter.regex={self.partition_filter_regex}"
        return None

    def filters_partition(self, partition: str) -> bool:
        """Whether a full-scan clean cleans `partition` (Java's `String.matches`: the whole path)."""
        if self.partition_filter_selected is not None:
            return partition in self.partition_filter_selected
        if self.partition_filter_regex is not None:
            return re.fullmatch(self.partition_filter_regex, partition) is not None
        return True

    @property
    def retained(self) -> int:
        """The retention number of the active policy (commits, hours or file versions)."""
        return {
            CleaningPolicy.KEEP_LATEST_COMMITS: self.commits_retained,
            CleaningPolicy.KEEP_LATEST_BY_HOURS: self.hours_retained,
            CleaningPolicy.KEEP_LATEST_FILE_VERSIONS: self.file_versions_retained,
        }[self.policy]

    @classmethod
    def from_reader(
        cls, r: KeyReader, concurrency_mode: WriteConcurrencyMode, warnings: list[str]
    ) -> CleanConfig:
        policy, inferred = infer_cleaning_policy(r)
        failed_writes = FailedWritesCleaningPolicy(r.get_str(FAILED_WRITES_KEY))
        if concurrency_mode is WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL:
            # HoodieWriteConfig sets LAZY under OCC whatever was configured; do what Java writers do.
            if r.is_set(FAILED_WRITES_KEY) and failed_writes is not FailedWritesCleaningPolicy.LAZY:
                warnings.append(
                    f"table {r.table_name!r}: {FAILED_WRITES_KEY}={failed_writes.value} is replaced by LAZY "
                    "under hoodie.write.concurrency.mode=OPTIMISTIC_CONCURRENCY_CONTROL, as Hudi does"
                )
            failed_writes = FailedWritesCleaningPolicy.LAZY
        config = cls(
            policy=policy,
            policy_inferred=inferred,
            commits_retained=r.get_int(RETAINED_KEYS[CleaningPolicy.KEEP_LATEST_COMMITS]),
            hours_retained=r.get_int(RETAINED_KEYS[CleaningPolicy.KEEP_LATEST_BY_HOURS]),
            file_versions_retained=r.get_int(RETAINED_KEYS[CleaningPolicy.KEEP_LATEST_FILE_VERSIONS]),
            trigger_strategy=CleaningTriggerStrategy(r.get_str("hoodie.clean.trigger.strategy")),
            max_commits=r.get_int("hoodie.clean.max.commits"),
            incremental_mode=r.get_bool("hoodie.cleaner.incremental.mode"),
            allow_multiple=r.get_bool("hoodie.clean.allow.multiple"),
            parallelism=r.get_int("hoodie.cleaner.parallelism"),
            failed_writes_policy=failed_writes,
            automatic=r.get_bool("hoodie.clean.automatic"),
            async_clean=r.get_bool("hoodie.clean.async"),
            max_commits_to_clean=_cap(r.get_int("hoodie.clean.max.commits.to.clean")),
            partition_filter_selected=_selected(r.get_optional_str("hoodie.clean.partition.filter.selected")),
            partition_filter_regex=_regex(r, r.get_optional_str("hoodie.clean.partition.filter.regex")),
        )
        if config.retained < 1:
            # Retaining nothing would leave no earliest commit (or version) to keep.
            raise r.error(RETAINED_KEYS[policy], f"must be at least 1 under the {policy} cleaning policy")
        return config


def _selected(value: str | None) -> tuple[str, ...] | None:
    return tuple(value.split(",")) if value else None  # Java splits on "," and keeps each as written


def _regex(r: KeyReader, value: str | None) -> str | None:
    if not value:
        return None
    try:
        re.compile(value)
    except re.error as exc:
        raise r.error("hoodie.clean.partition.filter.regex", f"is not a regular expression: {exc}") from None
    return value


def _cap(value: int) -> int | None:
    return None if value >= _JAVA_LONG_MAX else value


_JAVA_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ArchivalConfig:
    """Java writers' archival settings; the product reads them to reason about the active timeline."""

    automatic: bool
    async_archive: bool
    min_commits_to_keep: int
    max_commits_to_keep: int
    archival_batch_size: int
    beyond_savepoint: bool
    # Version 6 only: merging small archive files (`HoodieTimelineArchiver.mergeArchiveFilesIfNecessary`).
    merge_enable: bool = False
    merge_small_file_limit_bytes: int = 20 * 1024 * 1024
    merge_files_batch_size: int = 10
    # Versions 8 and 9 (the LSM history, `LSMTimelineWriter`): files merged per layer compaction, and
    # manifest snapshots kept beside those a run's compactions add (Hudi 1.2's key; 3 before it).
    timeline_compaction_batch_size: int = 10
    manifests_retained: int = 3

    @classmethod
    def from_reader(cls, r: KeyReader) -> ArchivalConfig:
        config = cls(
            automatic=r.get_bool("hoodie.archive.automatic"),
            async_archive=r.get_bool("hoodie.archive.async"),
            min_commits_to_keep=r.get_int("hoodie.keep.min.commits"),
            max_commits_to_keep=r.get_int("hoodie.keep.max.commits"),
            archival_batch_size=r.get_int("hoodie.commits.archival.batch"),
            beyond_savepoint=r.get_bool("hoodie.archive.beyond.savepoint"),
            merge_enable=r.get_bool("hoodie.archive.merge.enable"),
            merge_small_file_limit_bytes=r.get_int("hoodie.archive.merge.small.file.limit.bytes"),
            merge_files_batch_size=r.get_int("hoodie.archive.merge.files.batch.size"),
            timeline_compaction_batch_size=r.get_int("hoodie.timeline.compaction.batch.size"),
            manifests_retained=r.get_int("hoodie.timeline.manifest.retained.versions"),
        )
        if config.max_commits_to_keep <= config.min_commits_to_keep:
            # HoodieWriteConfig.validate() refuses this too.
            raise r.error(
                "hoodie.keep.max.commits",
                f"must be greater than hoodie.keep.min.commits={config.min_commits_to_keep}",
            )
        return config


def check_archival_against_cleaning(
    table_name: str, archival: ArchivalConfig, clean: CleanConfig, warnings: list[str]
) -> None:
    """Hudi 0.14+ only warns when min.commits <= commits.retained: its archiver then keeps more instants.

    (Before 0.14 this was an error; HUDI-6370 made archival stop at the clean's earliest commit to retain.)
    """
    if archival.min_commits_to_keep <= clean.commits_retained:
        warnings.append(
            f"table {table_name!r}: hoodie.keep.min.commits={archival.min_commits_to_keep} should be greater "
            f"than hoodie.cleaner.commits.retained={clean.commits_retained}; otherwise incremental pulls "
            "may miss data (Hudi's archiver adjusts by keeping more instants)"
        )
