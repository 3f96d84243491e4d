import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import org.apache.hudi.config.HoodieWriteConfig;
import org.apache.hudi.table.action.cluster.strategy.ClusteringPlanStrategy;

/**
 * Builds Hudi's HoodieWriteConfig from KEY=VALUE args (table name "probe") and prints its typed getters as one
 * JSON object a line; a getter that throws prints "!ERROR ...", a builder that throws prints {"BUILD_ERROR": ...}.
 * A "--" argument separates cases, so one JVM checks many configurations.
 */
public class HudiWriteConfigProbe {
  private static Map<String, String> OUT = new LinkedHashMap<>();

  private static void show(String name, Callable<Object> getter) {
    try {
      OUT.put(name, String.valueOf(getter.call()));
    } catch (Throwable t) {
      OUT.put(name, "!ERROR " + t.getClass().getSimpleName() + ": " + t.getMessage());
    }
  }

  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    for (String arg : args) {
      if (arg.equals("--")) {
        probe(props);
        props = new Properties();
        continue;
      }
      int eq = arg.indexOf('=');
      props.setProperty(arg.substring(0, eq), arg.substring(eq + 1));
    }
    probe(props);
  }

  private static void probe(Properties props) throws Exception {
    OUT = new LinkedHashMap<>();
    HoodieWriteConfig c;
    try {
      c = HoodieWriteConfig.newBuilder().withPath("/tmp/hudi-config-probe").forTable("probe")
          .withProperties(props).build();
    } catch (Throwable t) {
      OUT.put("BUILD_ERROR", t.getClass().getSimpleName() + ": " + t.getMessage());
      System.out.println(new ObjectMapper().writeValueAsString(OUT));
      return;
    }
    show("cleaner.policy", c::getCleanerPolicy);
    show("cleaner.commits.retained", c::getCleanerCommitsRetained);
    show("cleaner.hours.retained", c::getCleanerHoursRetained);
    show("cleaner.fileversions.retained", c::getCleanerFileVersionsRetained);
    show("clean.trigger.strategy", c::getCleaningTriggerStrategy);
    show("clean.max.commits", c::getCleaningMaxCommits);
    show("cleaner.incremental.mode", c::incrementalCleanerModeEnabled);
    show("clean.allow.multiple", c::allowMultipleCleans);
    show("cleaner.parallelism", c::getCleanerParallelism);
    show("cleaner.policy.failed.writes", c::getFailedWritesCleanPolicy);
    show("clean.automatic", c::isAutoClean);
    show("clean.async", c::isAsyncClean);
    show("keep.min.commits", c::getMinCommitsToKeep);
    show("keep.max.commits", c::getMaxCommitsToKeep);
    show("commits.archival.batch", c::getCommitArchivalBatchSize);
    show("archive.automatic", c::isAutoArchive);
    show("archive.async", c::isAsyncArchive);
    show("archive.beyond.savepoint", c::shouldArchiveBeyondSavepoint);
    show("clustering.inline", c::inlineClusteringEnabled);
    show("clustering.schedule.inline", c::scheduleInlineClustering);
    show("clustering.async.enabled", c::isAsyncClusteringEnabled);
    show("clustering.inline.max.commits", c::getInlineClusterMaxCommits);
    show("clustering.async.max.commits", c::getAsyncClusterMaxCommits);
    show("clustering.max.parallelism", c::getClusteringMaxParallelism);
    show("clustering.execution.strategy.class", c::getClusteringExecutionStrategyClass);
    show("clustering.small.file.limit", c::getClusteringSmallFileLimit);
    show("clustering.max.bytes.per.group", c::getClusteringMaxBytesInGroup);
    show("clustering.max.num.groups", c::getClusteringMaxNumGroups);
    show("clustering.target.file.max.bytes", c::getClusteringTargetFileMaxBytes);
    show("clustering.single.group", c::shouldClusteringSingleGroup);
    show("clustering.sort.columns", c::getClusteringSortColumns);
    show("clustering.lookback.partitions", c::getTargetPartitionsForClustering);
    show("clustering.skipfromlatest.partitions", c::getSkipPartitionsFromLatestForClustering);
    show("clustering.begin.partition", c::getBeginPartitionForClustering);
    show("clustering.end.partition", c::getEndPartitionForClustering);
    show("clustering.partition.regex", c::getClusteringPartitionFilterRegexPattern);
    show("clustering.partition.selected", c::getClusteringPartitionSelected);
    show("clustering.updates.strategy", c::getClusteringUpdatesStrategyClass);
    show("clustering.rollback.pending", c::isRollbackPendingClustering);
    show("layout.strategy", c::getLayoutOptimizationStrategy);
    show("layout.curve.build.method", c::getLayoutOptimizationCurveBuildMethod);
    show("layout.sample.size", c::getLayoutOptimizationSampleSize);
    show("parquet.compression.codec", c::getParquetCompressionCodec);
    show("parquet.max.file.size", c::getParquetMaxFileSize);
    show("parquet.block.size", c::getParquetBlockSize);
    show("parquet.page.size", c::getParquetPageSize);
    show("parquet.compression.ratio", c::getParquetCompressionRatio);
    show("parquet.dictionary.enabled", c::parquetDictionaryEnabled);
    show("bloom.num.entries", c::getBloomFilterNumEntries);
    show("bloom.fpp", c::getBloomFilterFPP);
    show("bloom.dynamic.max.entries", c::getDynamicBloomFilterMaxNumEntries);
    show("bloom.filter.type", c::getBloomFilterType);
    show("compact.trigger.strategy", c::getInlineCompactTriggerStrategy);
    show("compact.max.delta.commits", c::getInlineCompactDeltaCommitMax);
    show("compact.max.delta.seconds", c::getInlineCompactDeltaSecondsMax);
    show("compaction.target.io", c::getTargetIOPerCompactionInMB);
    show("compaction.logfile.size.threshold", c::getCompactionLogFileSizeThreshold);
    show("compaction.strategy", () -> c.getCompactionStrategy().getClass().getName());
    show("write.concurrency.mode", c::getWriteConcurrencyMode);
    show("lock.provider", c::getLockProviderClass);
    show("lock.zookeeper.lock_key", () -> c.getProps().getProperty("hoodie.write.lock.zookeeper.lock_key"));
    // Resolving the plan strategy rewrites a deprecated class and the filter mode, as scheduling does.
    show("clustering.plan.strategy.class", () -> ClusteringPlanStrategy.checkAndGetClusteringPlanStrategy(c));
    show("clustering.filter.mode", c::getClusteringPlanPartitionFilterMode);
    System.out.println(new ObjectMapper().writeValueAsString(OUT));
  }
}
