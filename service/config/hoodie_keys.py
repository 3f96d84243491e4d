"""Every `hoodie.*` key the product reads, with Hudi's name, type, default and alternative names.

One registry, data only. Defaults are Hudi 0.15.0's (`ConfigProperty.defaultValue()` of the bundle the tests
run, checked by `tests/config/test_hoodie_keys_hudi.py`) in Hudi's string form; they equal 0.14.1's except
`hoodie.clean.allow.multiple` (0.14.1: true, 0.15.0: false). Enum keys say whether Hudi parses them
case-sensitively (`Enum.valueOf`) or not (`toUpperCase`/`equalsIgnoreCase`), so a value the product accepts is
one Hudi accepts too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class KeyType(StrEnum):
    INT = "int"  # Java int: 32-bit
    LONG = "long"  # Java long: 64-bit
    BOOL = "bool"
    FLOAT = "float"
    STRING = "str"
    ENUM = "enum"


class KeyGroup(StrEnum):
    CLUSTERING = "clustering"
    CLEAN = "clean"
    COMPACTION = "compaction"
    ARCHIVAL = "archival"
    LOCK = "lock"
    STORAGE = "storage"
    WRITE = "write"


@dataclass(frozen=True)
class HoodieKey:
    """One Hudi configuration key as the product understands it."""

    name: str
    type: KeyType
    default: str | None  # Hudi's default, string form; None: Hudi has none
    doc: str
    group: KeyGroup
    alternatives: tuple[str, ...] = ()  # older, newer (Hudi 1.x's) or engine-specific names Hudi also reads
    allowed: tuple[str, ...] = ()  # ENUM only: Hudi's enum constants
    case_sensitive: bool = True  # ENUM only: False where Hudi upper-cases before valueOf
    value_aliases: tuple[tuple[str, str], ...] = ()  # ENUM only: (lower-case alias, constant)
    min_value: int | None = None  # INT/LONG: smallest value the product accepts
    used: bool = True  # False: Hudi's key, recognised and validated, but no product behaviour hangs on it
    since: str = "0.15.0"  # the first Hudi release of the oracles that has the key
    # The product reproduces only Hudi's default (for a key without one: only leaving it unset); another
    # value is refused by name (`service.config.hoodie`), never silently ignored.
    only_default: bool = False


LOCK_PREFIX = "hoodie.write.lock."

# Prefixes of the keys the product implements; an unknown key under them is probably a typo (warned about).
WATCHED_PREFIXES: tuple[str, ...] = (
    "hoodie.clustering.",
    "hoodie.cleaner.",
    "hoodie.clean.",
    "hoodie.compact.",
    "hoodie.compaction.",
    "hoodie.layout.",
    LOCK_PREFIX,
)

# Real Hudi keys under a watched prefix that belong to components outside the Spark bundle (hudi-aws's
# DynamoDB lock provider); they are not typos, so they pass without a warning.
RECOGNISED_FOREIGN_PREFIXES: tuple[str, ...] = ("hoodie.write.lock.dynamodb.",)

# Names of the keys other modules refer to by name; each is also an entry of the registry below.
SORT_COLUMNS = "hoodie.clustering.plan.strategy.sort.columns"
CLUSTERING_PLAN_STRATEGY_CLASS = "hoodie.clustering.plan.strategy.class"
CLUSTERING_UPDATES_STRATEGY = "hoodie.clustering.updates.strategy"
CLEANER_POLICY = "hoodie.cleaner.policy"
CLEANER_POLICY_FAILED_WRITES = "hoodie.cleaner.policy.failed.writes"
CLEANER_COMMITS_RETAINED = "hoodie.cleaner.commits.retained"
CLEANER_HOURS_RETAINED = "hoodie.cleaner.hours.retained"
CLEANER_FILEVERSIONS_RETAINED = "hoodie.cleaner.fileversions.retained"
PARQUET_COMPRESSION_CODEC = "hoodie.parquet.compression.codec"
ROLLING_METADATA_KEYS = "hoodie.write.rolling.metadata.keys"
ROLLING_METADATA_LOOKBACK = "hoodie.write.rolling.metadata.timeline.lookback.commits"
BLOOM_FPP = "hoodie.index.bloom.fpp"
LOCK_PROVIDER = "hoodie.write.lock.provider"
LOCK_ZK_URL = "hoodie.write.lock.zookeeper.url"
LOCK_ZK_PORT = "hoodie.write.lock.zookeeper.port"
LOCK_ZK_BASE_PATH = "hoodie.write.lock.zookeeper.base_path"
LOCK_ZK_LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"
LOCK_ZK_SESSION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.session_timeout_ms"
LOCK_ZK_CONNECTION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.connection_timeout_ms"
LOCK_WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms"
LOCK_RETRY_WAIT_TIME_MS = "hoodie.write.lock.wait_time_ms_between_retry"
LOCK_RETRY_MAX_WAIT_TIME_MS = "hoodie.write.lock.max_wait_time_ms_between_retry"
LOCK_NUM_RETRIES = "hoodie.write.lock.num_retries"
LOCK_CLIENT_NUM_RETRIES = "hoodie.write.lock.client.num_retries"
LOCK_CLIENT_RETRY_WAIT_TIME_MS = "hoodie.write.lock.client.wait_time_ms_between_retry"
TABLE_NAME = "hoodie.table.name"
BASE_PATH = "hoodie.base.path"
HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_TOLERABLE_MISSES = "hoodie.client.heartbeat.tolerable.misses"
COMPACTION_STRATEGY = "hoodie.compaction.strategy"
INDEX_TYPE = "hoodie.index.type"
# The record index in the metadata table: 0.14-1.0's switch, which Hudi 1.1 reads as the alternative
# of its `hoodie.metadata.global.record.level.index.enable` (HoodieMetadataConfig).
RECORD_INDEX_ENABLE = "hoodie.metadata.record.index.enable"
# Delta commits between the metadata table's compactions (HoodieMetadataConfig.COMPACT_NUM_DELTA_COMMITS).
METADATA_COMPACT_MAX_DELTA_COMMITS = "hoodie.metadata.compact.max.delta.commits"

_CLUSTERING_PLAN = "org.apache.hudi.client.clustering.plan.strategy."
_CLUSTERING_RUN = "org.apache.hudi.client.clustering.run.strategy."
_CLUSTERING_UPDATE = "org.apache.hudi.client.clustering.update.strategy."

_C = KeyGroup.CLUSTERING
_CL = KeyGroup.CLEAN
_CP = KeyGroup.COMPACTION
_A = KeyGroup.ARCHIVAL
_L = KeyGroup.LOCK
_S = KeyGroup.STORAGE
_W = KeyGroup.WRITE

_COMPACTION_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."

_KEYS: tuple[HoodieKey, ...] = (
    # -- clustering (HoodieClusteringConfig)
    HoodieKey(
        "hoodie.clustering.inline",
        KeyType.BOOL,
        "false",
        "Java writers run clustering inline after commits.",
        _C,
        alternatives=("hoodie.datasource.clustering.inline.enable",),
    ),
    HoodieKey(
        "hoodie.clustering.inline.max.commits",
        KeyType.INT,
        "4",
        "Completed commits since the last clustering before inline clustering is scheduled.",
        _C,
        min_value=0,
    ),
    HoodieKey(
        "hoodie.clustering.schedule.inline",
        KeyType.BOOL,
        "false",
        "Java writers only schedule clustering inline; execution happens elsewhere.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.async.enabled",
        KeyType.BOOL,
        "false",
        "Java writers run clustering asynchronously.",
        _C,
        alternatives=("hoodie.datasource.clustering.async.enable",),
    ),
    HoodieKey(
        "hoodie.clustering.async.max.commits",
        KeyType.INT,
        "4",
        "Completed commits since the last clustering before async clustering is scheduled.",
        _C,
        min_value=0,
    ),
    HoodieKey(
        "hoodie.clustering.max.parallelism",
        KeyType.INT,
        "15",
        "Maximum number of clustering groups executed in parallel.",
        _C,
        min_value=1,
    ),
    HoodieKey(
        CLUSTERING_PLAN_STRATEGY_CLASS,
        KeyType.STRING,
        _CLUSTERING_PLAN + "SparkSizeBasedClusteringPlanStrategy",
        "Plan strategy class; Spark/Java/Flink size-based names and the deprecated recent-days and "
        "selected-partitions classes are accepted.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.execution.strategy.class",
        KeyType.STRING,
        _CLUSTERING_RUN + "SparkSortAndSizeExecutionStrategy",
        "Execution strategy class recorded in the clustering plan.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.small.file.limit",
        KeyType.LONG,
        "314572800",
        "Only file slices whose base file is smaller than this many bytes are clustered.",
        _C,
        min_value=0,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.max.bytes.per.group",
        KeyType.LONG,
        "2147483648",
        "Cap on the bytes of input file slices in one clustering group.",
        _C,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.max.num.groups",
        KeyType.INT,
        "30",
        "Maximum number of clustering groups in one plan.",
        _C,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.target.file.max.bytes",
        KeyType.LONG,
        "1073741824",
        "Target size of clustering output files; sets each group's numOutputFileGroups.",
        _C,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled",
        KeyType.BOOL,
        "true",
        "Whether a group holding a single file slice may be clustered.",
        _C,
    ),
    HoodieKey(
        SORT_COLUMNS,
        KeyType.STRING,
        None,
        "Comma-separated columns the clustered output is sorted by; copied into strategyParams.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.partition.filter.mode",
        KeyType.ENUM,
        "NONE",
        "Which partitions a plan considers.",
        _C,
        allowed=("NONE", "RECENT_DAYS", "SELECTED_PARTITIONS", "DAY_ROLLING"),
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions",
        KeyType.INT,
        "2",
        "RECENT_DAYS: number of latest partitions considered (<= 0: all).",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions",
        KeyType.INT,
        "0",
        "RECENT_DAYS: number of latest partitions skipped.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.cluster.begin.partition",
        KeyType.STRING,
        None,
        "SELECTED_PARTITIONS: first partition path of the range (inclusive).",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.cluster.end.partition",
        KeyType.STRING,
        None,
        "SELECTED_PARTITIONS: last partition path of the range (inclusive).",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.partition.regex.pattern",
        KeyType.STRING,
        None,
        "Only partition paths matching this regex are considered.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.partition.selected",
        KeyType.STRING,
        None,
        "Comma-separated partition paths to cluster, replacing the listing.",
        _C,
    ),
    HoodieKey(
        CLUSTERING_UPDATES_STRATEGY,
        KeyType.STRING,
        _CLUSTERING_UPDATE + "SparkRejectUpdateStrategy",
        "What Java writers do with updates to file groups in a pending clustering plan.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.rollback.pending.replacecommit.on.conflict",
        KeyType.BOOL,
        "false",
        "With the allow-update strategy, writers roll back pending clustering they update.",
        _C,
    ),
    HoodieKey(
        "hoodie.clustering.enable.expirations",
        KeyType.BOOL,
        "false",
        "Hudi 1.2: with LAZY failed-writes cleaning, a pending clustering older than the threshold "
        "whose heartbeat expired is rolled back with the failed writes (clean, repair).",
        _C,
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.clustering.expiration.threshold.mins",
        KeyType.INT,
        "60",
        "Hudi 1.2: minutes after its requested time before a pending clustering may expire.",
        _C,
        min_value=0,
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.layout.optimize.strategy",
        KeyType.ENUM,
        "LINEAR",
        "Sort order of clustered records: LINEAR, ZORDER or HILBERT.",
        _C,
        allowed=("LINEAR", "ZORDER", "HILBERT"),
        case_sensitive=False,
        value_aliases=(("z-order", "ZORDER"),),
    ),
    HoodieKey(
        "hoodie.layout.optimize.curve.build.method",
        KeyType.ENUM,
        "DIRECT",
        "How space-filling-curve values are built: DIRECT or SAMPLE.",
        _C,
        allowed=("DIRECT", "SAMPLE"),
        case_sensitive=False,
        # the spelling; Hudi's own key is the primary one
        alternatives=("hoodie.layout.optimize.build.curve.method",),
    ),
    HoodieKey(
        "hoodie.layout.optimize.build.curve.sample.size",
        KeyType.INT,
        "200000",
        "SAMPLE build method: number of sampled records.",
        _C,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.layout.optimize.enable",
        KeyType.BOOL,
        "false",
        "Deprecated since 0.11.0; no effect.",
        _C,
        used=False,
    ),
    HoodieKey(
        "hoodie.layout.optimize.data.skipping.enable",
        KeyType.BOOL,
        "true",
        "Deprecated since 0.11.0; no effect.",
        _C,
        used=False,
    ),
    # -- compaction (HoodieCompactionConfig; the two payload/merger keys are HoodieTableConfig's)
    HoodieKey(
        "hoodie.compact.inline",
        KeyType.BOOL,
        "false",
        "Java writers compact inline after deltacommits (they also run any pending compaction plan).",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compact.schedule.inline",
        KeyType.BOOL,
        "false",
        "Java writers only schedule compaction inline; execution happens elsewhere.",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compact.inline.max.delta.commits",
        KeyType.INT,
        "5",
        "Deltacommits since the last compaction (commit or replacecommit) before compaction is due.",
        _CP,
    ),
    HoodieKey(
        "hoodie.compact.inline.max.delta.seconds",
        KeyType.INT,
        "3600",
        "Seconds since the last compaction (or the first deltacommit) before compaction is due.",
        _CP,
    ),
    HoodieKey(
        "hoodie.compact.inline.trigger.strategy",
        KeyType.ENUM,
        "NUM_COMMITS",
        "When compaction is due (CompactionTriggerStrategy): by delta commits, time elapsed, or both.",
        _CP,
        allowed=(
            "NUM_COMMITS",
            "NUM_COMMITS_AFTER_LAST_REQUEST",
            "TIME_ELAPSED",
            "NUM_AND_TIME",
            "NUM_OR_TIME",
        ),
    ),
    HoodieKey(
        "hoodie.compaction.target.io",
        KeyType.LONG,
        "512000",
        "MB of IO (read + write) one compaction plan may take (BoundedIOCompactionStrategy).",
        _CP,
    ),
    HoodieKey(
        "hoodie.compaction.logfile.size.threshold",
        KeyType.LONG,
        "0",
        "Only file slices whose log files total at least this many bytes are compacted "
        "(LogFileSizeBasedCompactionStrategy).",
        _CP,
    ),
    HoodieKey(
        "hoodie.compaction.logfile.num.threshold",
        KeyType.LONG,
        "0",
        "Only slices with at least this many log files are compacted (LogFileNumBasedCompactionStrategy).",
        _CP,
    ),
    HoodieKey(
        COMPACTION_STRATEGY,
        KeyType.STRING,
        _COMPACTION_STRATEGY_PACKAGE + "LogFileSizeBasedCompactionStrategy",
        "Which file slices a compaction plan takes, in which order (CompactionStrategy class).",
        _CP,
    ),
    HoodieKey(
        "hoodie.compaction.lazy.block.read",
        KeyType.BOOL,
        "true",
        "Java's log scanner reads block contents lazily.",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compaction.reverse.log.read",
        KeyType.BOOL,
        "false",
        "Java's log scanner reads log files newest first.",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compaction.daybased.target.partitions",
        KeyType.INT,
        "10",
        "Partitions a DayBasedCompactionStrategy plan takes (strategy not implemented).",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compaction.payload.class",
        KeyType.STRING,
        "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload",
        "Table config: the payload class merging records (hoodie.properties is authoritative).",
        _CP,
        used=False,
    ),
    HoodieKey(
        "hoodie.compaction.record.merger.strategy",
        KeyType.STRING,
        "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
        "Table config: the record merger strategy id (hoodie.properties is authoritative).",
        _CP,
        alternatives=("hoodie.record.merge.strategy.id",),  # Hudi 1.x's name
        used=False,
    ),
    # -- keys Hudi 1.x added under the prefixes this product watches: recognised (never warned about as
    # typos), and where they change what a plan or a commit holds, refused unless at Hudi's default.
    HoodieKey(
        "hoodie.compaction.partition.path.regex",
        KeyType.STRING,
        None,
        "Hudi 1.x: compaction plans only partitions matching this regex (not reproduced: refused when set).",
        _CP,
        since="1.0.2",
        only_default=True,
    ),
    HoodieKey(
        "hoodie.compaction.plan.generator",
        KeyType.STRING,
        "org.apache.hudi.table.action.compact.plan.generators.HoodieCompactionPlanGenerator",
        "Hudi 1.x: the class building compaction plans; only Hudi's default is reproduced.",
        _CP,
        since="1.0.2",
        only_default=True,
    ),
    HoodieKey(
        "hoodie.compact.merge.handle.class",
        KeyType.STRING,
        "org.apache.hudi.io.FileGroupReaderBasedMergeHandle",
        "Hudi 1.1: the class merging a compacted slice; only Hudi's default merging is reproduced.",
        _CP,
        since="1.1.1",
        only_default=True,
    ),
    HoodieKey(
        "hoodie.clustering.group.read.parallelism",
        KeyType.INT,
        "20",
        "Hudi 1.x: Spark parallelism reading a clustering group's slices (this service's executor sets "
        "its own).",
        _C,
        since="1.0.2",
        used=False,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.binary.copy.schema.evolution.enable",
        KeyType.BOOL,
        "false",
        "Hudi 1.1: schema evolution in binary-copy clustering execution, which this service does not use.",
        _C,
        since="1.1.1",
        used=False,
    ),
    HoodieKey(
        "hoodie.clustering.plan.generation.use.local.engine.context",
        KeyType.BOOL,
        "false",
        "Hudi 1.2: plan clustering in the driver instead of Spark tasks (this service always plans in one "
        "process).",
        _C,
        since="1.2.0",
        used=False,
    ),
    HoodieKey(
        "hoodie.clean.optimize.using.local.engine.context",
        KeyType.BOOL,
        "true",
        "Hudi 1.2: plan cleans in the driver (this service always plans in one process).",
        _CL,
        since="1.2.0",
        used=False,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.file.slices.sort.by",
        KeyType.STRING,
        "SIZE",
        "Hudi 1.2: the order of a partition's file slices before they are grouped; only SIZE (Hudi's default "
        "and earlier versions' order) is reproduced.",
        _C,
        since="1.2.0",
        only_default=True,
    ),
    HoodieKey(
        "hoodie.clustering.plan.strategy.earliest.commit.to.cluster",
        KeyType.STRING,
        None,
        "Hudi 1.2: cluster only file slices written at or after this commit (not reproduced: refused "
        "when set).",
        _C,
        since="1.2.0",
        only_default=True,
    ),
    HoodieKey(
        "hoodie.clustering.fail.on.pending.ingestion.during.conflict.resolution",
        KeyType.BOOL,
        "false",
        "Hudi 1.2: a clustering's commit fails while an ingestion is pending (not reproduced: refused when "
        "true).",
        _C,
        since="1.2.0",
        only_default=True,
    ),
    # -- cleaning (HoodieCleanConfig)
    HoodieKey(
        "hoodie.clean.automatic",
        KeyType.BOOL,
        "true",
        "Java writers clean after every commit (they also run pending clean plans).",
        _CL,
    ),
    HoodieKey(
        "hoodie.clean.async",
        KeyType.BOOL,
        "false",
        "Java writers clean asynchronously (with hoodie.clean.automatic).",
        _CL,
        alternatives=("hoodie.clean.async.enabled",),  # Hudi 1.x's name
    ),
    HoodieKey(
        CLEANER_POLICY,
        KeyType.ENUM,
        "KEEP_LATEST_COMMITS",
        "Cleaning policy; inferred from the one retained key set when not given.",
        _CL,
        allowed=("KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_COMMITS", "KEEP_LATEST_BY_HOURS"),
        alternatives=("hoodie.clean.policy",),  # Hudi 1.x's name
    ),
    HoodieKey(
        CLEANER_COMMITS_RETAINED,
        KeyType.INT,
        "10",
        "KEEP_LATEST_COMMITS: number of commits whose file slices are retained.",
        _CL,
        min_value=0,
        alternatives=("hoodie.clean.commits.retained",),  # Hudi 1.x's name
    ),
    HoodieKey(
        CLEANER_HOURS_RETAINED,
        KeyType.INT,
        "24",
        "KEEP_LATEST_BY_HOURS: hours of commits whose file slices are retained.",
        _CL,
        min_value=0,
        alternatives=("hoodie.clean.hours.retained",),  # Hudi 1.x's name
    ),
    HoodieKey(
        CLEANER_FILEVERSIONS_RETAINED,
        KeyType.INT,
        "3",
        "KEEP_LATEST_FILE_VERSIONS: file slices retained per file group.",
        _CL,
        min_value=0,
        alternatives=("hoodie.clean.fileversions.retained",),  # Hudi 1.x's name
    ),
    HoodieKey(
        "hoodie.clean.trigger.strategy",
        KeyType.ENUM,
        "NUM_COMMITS",
        "When a clean is scheduled; NUM_COMMITS is Hudi's only strategy.",
        _CL,
        allowed=("NUM_COMMITS",),
    ),
    HoodieKey(
        "hoodie.clean.max.commits",
        KeyType.INT,
        "1",
        "Completed commits since the last clean before a new clean is scheduled.",
        _CL,
        min_value=0,
        alternatives=("hoodie.clean.trigger.max.commits",),  # Hudi 1.x's name
    ),
    HoodieKey(
        "hoodie.clean.max.commits.to.clean",
        KeyType.LONG,
        "9223372036854775807",
        "Hudi 1.2: at most this many commits cleaned past the last clean's earliest commit to retain "
        "in one clean (KEEP_LATEST_COMMITS, KEEP_LATEST_BY_HOURS); the next clean goes on from there.",
        _CL,
        min_value=1,
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.clean.partition.filter.regex",
        KeyType.STRING,
        None,
        "Hudi 1.2: a full-scan clean cleans only the partitions this regex matches whole (refused with "
        "incremental mode on, as Hudi refuses it).",
        _CL,
        alternatives=("hoodie.cleaner.partition.filter.regex",),
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.clean.partition.filter.selected",
        KeyType.STRING,
        None,
        "Hudi 1.2: a full-scan clean cleans only these partitions (comma-separated; over the regex).",
        _CL,
        alternatives=("hoodie.cleaner.partition.filter.selected",),
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.cleaner.incremental.mode",
        KeyType.BOOL,
        "true",
        "Plan from partitions touched since the last clean instead of listing every partition.",
        _CL,
        alternatives=("hoodie.clean.incremental.enabled",),  # Hudi 1.x's name
    ),
    HoodieKey(
        CLEANER_POLICY_FAILED_WRITES,
        KeyType.ENUM,
        "EAGER",
        "Cleaning of failed writes; Hudi forces LAZY under optimistic concurrency control.",
        _CL,
        allowed=("EAGER", "LAZY", "NEVER"),
        alternatives=("hoodie.clean.failed.writes.policy",),  # Hudi 1.x's name
    ),
    HoodieKey(
        "hoodie.cleaner.parallelism",
        KeyType.INT,
        "200",
        "Parallelism of file deletion.",
        _CL,
        min_value=1,
        alternatives=("hoodie.clean.parallelism",),  # Hudi 1.x's name
    ),
    HoodieKey(
        "hoodie.clean.allow.multiple",
        KeyType.BOOL,
        "false",
        "Allow scheduling a clean while another is pending (0.14.1's default was true).",
        _CL,
        alternatives=("hoodie.clean.multiple.enabled",),  # Hudi 1.x's name
    ),
    HoodieKey(
        "hoodie.cleaner.delete.bootstrap.base.file",
        KeyType.BOOL,
        "false",
        "Also delete bootstrap base files; bootstrap tables are not supported.",
        _CL,
        used=False,
        alternatives=("hoodie.clean.delete.bootstrap.base.file",),  # Hudi 1.x's name
    ),
    # -- archival (HoodieArchivalConfig)
    HoodieKey(
        "hoodie.archive.automatic",
        KeyType.BOOL,
        "true",
        "Java writers archive the timeline after commits.",
        _A,
    ),
    HoodieKey("hoodie.archive.async", KeyType.BOOL, "false", "Java writers archive asynchronously.", _A),
    HoodieKey(
        "hoodie.keep.min.commits",
        KeyType.INT,
        "20",
        "Archival keeps at least this many commits on the active timeline.",
        _A,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.keep.max.commits",
        KeyType.INT,
        "30",
        "Archival starts when the active timeline holds more commits than this.",
        _A,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.commits.archival.batch",
        KeyType.INT,
        "10",
        "Instants archived per archive log block.",
        _A,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.archive.delete.parallelism",
        KeyType.INT,
        "100",
        "Parallelism of deleting archived instant files.",
        _A,
        min_value=1,
        used=False,
    ),
    HoodieKey(
        "hoodie.archive.merge.enable",
        KeyType.BOOL,
        "false",
        "Merge small archive files (table version 6).",
        _A,
    ),
    HoodieKey(
        "hoodie.archive.merge.small.file.limit.bytes",
        KeyType.LONG,
        "20971520",
        "Archive files smaller than this are merged.",
        _A,
        min_value=0,
    ),
    HoodieKey(
        "hoodie.archive.merge.files.batch.size",
        KeyType.INT,
        "10",
        "Number of small archive files merged at once.",
        _A,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.timeline.compaction.batch.size",
        KeyType.INT,
        "10",
        "Hudi 1.x: files of one layer of the LSM history merged into one of the next layer.",
        _A,
        min_value=2,
        since="1.0.2",
    ),
    HoodieKey(
        "hoodie.timeline.manifest.retained.versions",
        KeyType.INT,
        "3",
        "Hudi 1.2: manifest snapshots of the LSM history kept beside those a run's compactions add.",
        _A,
        min_value=1,
        since="1.2.0",
    ),
    HoodieKey(
        "hoodie.archive.beyond.savepoint",
        KeyType.BOOL,
        "false",
        "Archival may pass savepoints (keeping the savepointed instants).",
        _A,
    ),
    # -- locking (HoodieLockConfig / LockConfiguration)
    HoodieKey(
        LOCK_PROVIDER,
        KeyType.STRING,
        "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider",
        "Lock provider class; the product implements the ZooKeeper and in-process providers.",
        _L,
    ),
    HoodieKey(
        LOCK_ZK_URL,
        KeyType.STRING,
        None,
        "Whole ZooKeeper connect string (host1:2181,host2:2181); the port key is not appended.",
        _L,
    ),
    HoodieKey(
        LOCK_ZK_PORT,
        KeyType.INT,
        None,
        "Declared by Hudi but not used by ZookeeperBasedLockProvider.",
        _L,
        used=False,
    ),
    HoodieKey(
        LOCK_ZK_BASE_PATH,
        KeyType.STRING,
        None,
        "Parent znode of the lock; must equal the writers'.",
        _L,
    ),
    HoodieKey(
        LOCK_ZK_LOCK_KEY,
        KeyType.STRING,
        None,
        "Lock znode name under base_path; Hudi infers it from hoodie.table.name.",
        _L,
    ),
    HoodieKey(
        LOCK_ZK_SESSION_TIMEOUT_MS,
        KeyType.LONG,
        "60000",
        "ZooKeeper session timeout.",
        _L,
        min_value=1,
    ),
    HoodieKey(
        LOCK_ZK_CONNECTION_TIMEOUT_MS,
        KeyType.LONG,
        "15000",
        "ZooKeeper connection timeout.",
        _L,
        min_value=1,
    ),
    HoodieKey(
        LOCK_WAIT_TIME_MS,
        KeyType.LONG,
        "60000",
        "Timeout of one lock acquisition attempt.",
        _L,
        min_value=0,
    ),
    HoodieKey(
        LOCK_RETRY_WAIT_TIME_MS,
        KeyType.LONG,
        "1000",
        "Base sleep between ZooKeeper connection retries.",
        _L,
        min_value=0,
    ),
    HoodieKey(
        LOCK_RETRY_MAX_WAIT_TIME_MS,
        KeyType.LONG,
        "16000",
        "Maximum sleep between ZooKeeper connection retries.",
        _L,
        min_value=0,
    ),
    HoodieKey(LOCK_NUM_RETRIES, KeyType.INT, "15", "ZooKeeper connection retries.", _L, min_value=0),
    HoodieKey(
        LOCK_CLIENT_NUM_RETRIES,
        KeyType.INT,
        "50",
        "Retries of a failed lock acquisition.",
        _L,
        min_value=0,
    ),
    HoodieKey(
        LOCK_CLIENT_RETRY_WAIT_TIME_MS,
        KeyType.LONG,
        "5000",
        "Sleep between retries of a failed lock acquisition.",
        _L,
        min_value=0,
    ),
    HoodieKey(
        "hoodie.write.lock.conflict.resolution.strategy",
        KeyType.STRING,
        "org.apache.hudi.client.transaction.SimpleConcurrentFileWritesConflictResolutionStrategy",
        "Writers' conflict resolution; the product always re-checks its own commits.",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.heartbeat_interval_ms",
        KeyType.LONG,
        "60000",
        "Heartbeat interval of lock holders (metastore/DynamoDB providers).",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.filesystem.path",
        KeyType.STRING,
        None,
        "FileSystemBasedLockProvider's directory (provider not implemented).",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.filesystem.expire",
        KeyType.INT,
        "0",
        "FileSystemBasedLockProvider's expiry in minutes (provider not implemented).",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.hivemetastore.database",
        KeyType.STRING,
        None,
        "HiveMetastoreBasedLockProvider's database (provider not implemented).",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.hivemetastore.table",
        KeyType.STRING,
        None,
        "HiveMetastoreBasedLockProvider's table (provider not implemented).",
        _L,
        used=False,
    ),
    HoodieKey(
        "hoodie.write.lock.hivemetastore.uris",
        KeyType.STRING,
        None,
        "HiveMetastoreBasedLockProvider's metastore URIs (provider not implemented).",
        _L,
        used=False,
    ),
    # -- Parquet output and Hudi's footer bloom filter (HoodieStorageConfig)
    HoodieKey(
        PARQUET_COMPRESSION_CODEC,
        KeyType.ENUM,
        "gzip",
        "Parquet compression codec.",
        _S,
        allowed=("UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"),
        case_sensitive=False,
    ),
    HoodieKey(
        "hoodie.parquet.max.file.size",
        KeyType.LONG,
        "125829120",
        "Target size of Parquet files written by Java writers; clustering plans size slices without a "
        "base file with it.",
        _S,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.parquet.block.size",
        KeyType.INT,
        "125829120",
        "Parquet row group size in bytes.",
        _S,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.parquet.page.size", KeyType.INT, "1048576", "Parquet page size in bytes.", _S, min_value=1
    ),
    HoodieKey(
        "hoodie.parquet.compression.ratio",
        KeyType.FLOAT,
        "0.1",
        "Expected compressed/uncompressed ratio used to estimate file sizes.",
        _S,
    ),
    HoodieKey("hoodie.parquet.dictionary.enabled", KeyType.BOOL, "true", "Parquet dictionary encoding.", _S),
    HoodieKey(
        "hoodie.parquet.small.file.limit",
        KeyType.INT,
        "104857600",
        "Java writers route inserts into files smaller than this (HoodieCompactionConfig).",
        _S,
        min_value=0,
        used=False,
    ),
    HoodieKey(
        "hoodie.bloom.index.filter.type",
        KeyType.ENUM,
        "DYNAMIC_V0",
        "Type of the bloom filter written to the Parquet footer.",
        _S,
        allowed=("SIMPLE", "DYNAMIC_V0"),
        case_sensitive=False,
    ),
    HoodieKey(
        "hoodie.index.bloom.num_entries",
        KeyType.INT,
        "60000",
        "Bloom filter entries per file (initial entries for DYNAMIC_V0).",
        _S,
        min_value=1,
    ),
    HoodieKey(BLOOM_FPP, KeyType.FLOAT, "0.000000001", "Bloom filter false positive probability.", _S),
    HoodieKey(
        "hoodie.bloom.index.filter.dynamic.max.entries",
        KeyType.INT,
        "100000",
        "DYNAMIC_V0: maximum entries the filter grows to.",
        _S,
        min_value=1,
    ),
    # -- writers and table
    HoodieKey(
        INDEX_TYPE,
        KeyType.ENUM,
        None,
        "The writers' index (HoodieIndexConfig; no default: the engine's, SIMPLE on Spark). "
        "Clustering is refused for indexes it would have to update: HBASE, INMEMORY, BUCKET.",
        _W,
        allowed=(
            "HBASE",
            "INMEMORY",
            "BLOOM",
            "GLOBAL_BLOOM",
            "SIMPLE",
            "GLOBAL_SIMPLE",
            "BUCKET",
            "FLINK_STATE",
            "RECORD_INDEX",
        ),
        case_sensitive=False,
    ),
    HoodieKey(
        RECORD_INDEX_ENABLE,
        KeyType.BOOL,
        "false",
        "The metadata table's record index (the demo's Hudi 1.1 writer sets it; 1.1 reads it as the "
        "alternative of hoodie.metadata.global.record.level.index.enable).",
        _W,
        alternatives=("hoodie.metadata.global.record.level.index.enable",),  # Hudi 1.1's name
        used=False,
    ),
    HoodieKey(
        METADATA_COMPACT_MAX_DELTA_COMMITS,
        KeyType.INT,
        "10",
        "Delta commits after which the writers compact the metadata table; more than these since its "
        "last compaction is a blocker (check, the daemon's page).",
        _W,
        min_value=1,
    ),
    HoodieKey(
        "hoodie.write.concurrency.mode",
        KeyType.ENUM,
        "SINGLE_WRITER",
        "OPTIMISTIC_CONCURRENCY_CONTROL when several writers (and the daemon) commit.",
        _W,
        allowed=("SINGLE_WRITER", "OPTIMISTIC_CONCURRENCY_CONTROL"),
        case_sensitive=False,
    ),
    HoodieKey(
        "hoodie.table.timeline.timezone",
        KeyType.ENUM,
        "LOCAL",
        "Time zone of instant times (hoodie.properties is authoritative for an existing table).",
        _W,
        allowed=("LOCAL", "UTC"),
    ),
    HoodieKey(
        BASE_PATH,
        KeyType.STRING,
        None,
        "Table base path; the in-process lock is keyed by it, as Hudi's InProcessLockProvider.",
        _W,
    ),
    HoodieKey(
        TABLE_NAME,
        KeyType.STRING,
        None,
        "Writers' table name; ZooKeeper lock_key defaults to it.",
        _W,
    ),
    HoodieKey(
        ROLLING_METADATA_KEYS,
        KeyType.STRING,
        "",
        "Hudi 1.2: commit extra-metadata keys (comma-separated) that every commit carries forward from "
        "the recent ones; this service's clustering and compaction commits carry them as Hudi's do.",
        _W,
        since="1.2.0",
    ),
    HoodieKey(
        ROLLING_METADATA_LOOKBACK,
        KeyType.INT,
        "10",
        "Hudi 1.2: how many recent completed commits are searched for the rolling metadata keys.",
        _W,
        min_value=0,
        since="1.2.0",
    ),
    HoodieKey(
        HEARTBEAT_INTERVAL_MS,
        KeyType.INT,
        "60000",
        "Heartbeat interval of writers (LAZY failed-writes cleaning) and of this service's executors.",
        _W,
        min_value=1,
    ),
    HoodieKey(
        HEARTBEAT_TOLERABLE_MISSES,
        KeyType.INT,
        "2",
        "Missed heartbeats before a write, or an instant being executed, counts as abandoned.",
        _W,
        min_value=0,
    ),
)

HOODIE_KEYS: Mapping[str, HoodieKey] = {k.name: k for k in _KEYS}

# alternative name -> primary name
ALTERNATIVE_NAMES: Mapping[str, str] = {alt: k.name for k in _KEYS for alt in k.alternatives}

assert len(HOODIE_KEYS) == len(_KEYS), "duplicate key in the registry"
assert not set(ALTERNATIVE_NAMES) & set(HOODIE_KEYS), "an alternative name is also a primary name"


def known_names() -> tuple[str, ...]:
    """Primary and alternative names, for closest-key suggestions."""
    return (*HOODIE_KEYS, *ALTERNATIVE_NAMES)


def is_watched(name: str) -> bool:
    """True for keys under a prefix the product implements (unknown ones there get a warning)."""
    return name.startswith(WATCHED_PREFIXES) and not name.startswith(RECOGNISED_FOREIGN_PREFIXES)
