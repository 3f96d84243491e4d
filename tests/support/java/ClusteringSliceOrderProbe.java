import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.common.table.HoodieTableMetaClient;
import org.apache.hudi.common.table.view.HoodieTableFileSystemView;
import org.apache.hudi.storage.hadoop.HadoopStorageConfiguration;

/**
 * Prints the file ids of a partition's latest file slices in the order Hudi's file-system view
 * yields them (the order the size-based clustering planner receives them in), one per line.
 *
 * usage: ClusteringSliceOrderProbe BASE_PATH PARTITION
 */
public class ClusteringSliceOrderProbe {
  public static void main(String[] args) throws Exception {
    HoodieTableMetaClient metaClient = HoodieTableMetaClient.builder()
        .setConf(new HadoopStorageConfiguration(new Configuration()))
        .setBasePath(args[0])
        .build();
    HoodieTableFileSystemView view = new HoodieTableFileSystemView(
        metaClient, metaClient.getActiveTimeline().getCommitsAndCompactionTimeline().filterCompletedAndCompactionInstants());
    view.getLatestFileSlicesStateless(args[1]).forEach(slice -> System.out.println(slice.getFileId()));
  }
}
