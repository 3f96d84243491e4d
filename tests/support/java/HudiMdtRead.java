import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;

import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;
import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.avro.HoodieAvroUtils;
import org.apache.hudi.avro.model.HoodieMetadataRecord;
import org.apache.hudi.common.model.HoodieLogFile;
import org.apache.hudi.common.model.HoodieRecord;
import org.apache.hudi.common.table.log.HoodieLogFormat;
import org.apache.hudi.common.table.log.block.HoodieDataBlock;
import org.apache.hudi.common.table.log.block.HoodieLogBlock;
import org.apache.hudi.common.util.collection.ClosableIterator;
import org.apache.hudi.io.hadoop.HoodieHFileUtils;
import org.apache.hudi.org.apache.hadoop.hbase.Cell;
import org.apache.hudi.org.apache.hadoop.hbase.CellUtil;
import org.apache.hudi.org.apache.hadoop.hbase.KeyValue;
import org.apache.hudi.org.apache.hadoop.hbase.io.hfile.HFile;
import org.apache.hudi.org.apache.hadoop.hbase.io.hfile.HFileScanner;
import org.apache.hudi.storage.HoodieStorage;
import org.apache.hudi.storage.HoodieStorageUtils;
import org.apache.hudi.storage.StoragePath;
import org.apache.hudi.storage.hadoop.HadoopStorageConfiguration;

/**
 * Reads MDT bytes with Hudi 0.15.0's own readers and prints what they see.
 *
 * usage: HudiMdtRead hfile FILE   -- HBase's HFile reader (HoodieHFileUtils.createHFileReader over
 *                                    the bytes, as HoodieHFileDataBlock does): "cell ROW BASE64(VALUE)"
 *                                    lines, then "schema SCHEMA"
 *        HudiMdtRead seek FILE KEY...  -- the scanner's seekTo of each key: "seek KEY RESULT ROW"
 *        HudiMdtRead log FILE     -- HoodieLogFormat's reader: per block "block TYPE INSTANT TARGET",
 *                                    then per record of a data block "record KEY TYPE FILES"
 */
public class HudiMdtRead {
  public static void main(String[] args) throws Exception {
    HoodieStorage storage = HoodieStorageUtils.getStorage(
        args[1], new HadoopStorageConfiguration(new Configuration()));
    if (args[0].equals("seek")) {
      // HoodieAvroHFileReader's lookups: seekTo(new KeyValue(row, null, null, null)) == 0 is a hit.
      byte[] content = Files.readAllBytes(Paths.get(args[1]));
      HFile.Reader reader = HoodieHFileUtils.createHFileReader(storage, new StoragePath(args[1]), content);
      HFileScanner scanner = reader.getScanner(false, false);
      for (int i = 2; i < args.length; i++) {
        int found = scanner.seekTo(new KeyValue(args[i].getBytes("UTF-8"), null, null, null));
        String row = found == 0 ? new String(CellUtil.cloneRow(scanner.getCell()), "UTF-8") : "-";
        System.out.println("seek " + args[i] + " " + found + " " + row);
      }
      reader.close();
      return;
    }
    if (args[0].equals("hfile")) {
      byte[] content = Files.readAllBytes(Paths.get(args[1]));
      HFile.Reader reader = HoodieHFileUtils.createHFileReader(storage, new StoragePath(args[1]), content);
      HFileScanner scanner = reader.getScanner(false, false);
      if (scanner.seekTo()) {
        do {
          Cell cell = scanner.getCell();
          System.out.println("cell " + new String(CellUtil.cloneRow(cell), "UTF-8") + " "
              + Base64.getEncoder().encodeToString(CellUtil.cloneValue(cell)));
        } while (scanner.next());
      }
      System.out.println("schema " + new String(reader.getHFileInfo().get("schema".getBytes()), "UTF-8"));
      reader.close();
      return;
    }
    Schema schema = HoodieAvroUtils.addMetadataFields(HoodieMetadataRecord.getClassSchema());
    try (HoodieLogFormat.Reader reader =
             HoodieLogFormat.newReader(storage, new HoodieLogFile(new StoragePath(args[1])), schema)) {
      while (reader.hasNext()) {
        HoodieLogBlock block = reader.next();
        System.out.println("block " + block.getBlockType() + " "
            + block.getLogBlockHeader().get(HoodieLogBlock.HeaderMetadataType.INSTANT_TIME) + " "
            + block.getLogBlockHeader().get(HoodieLogBlock.HeaderMetadataType.TARGET_INSTANT_TIME));
        if (block instanceof HoodieDataBlock) {
          try (ClosableIterator<HoodieRecord<IndexedRecord>> it =
                   ((HoodieDataBlock) block).getRecordIterator(HoodieRecord.HoodieRecordType.AVRO)) {
            while (it.hasNext()) {
              IndexedRecord rec = it.next().getData();
              Object files = rec.get(rec.getSchema().getField("filesystemMetadata").pos());
              Map<String, String> sorted = new TreeMap<>();
              if (files != null) {
                for (Map.Entry<?, ?> e : ((Map<?, ?>) files).entrySet()) {
                  IndexedRecord info = (IndexedRecord) e.getValue();
                  sorted.put(e.getKey().toString(), info.get(0) + ":" + info.get(1));
                }
              }
              System.out.println("record " + rec.get(rec.getSchema().getField("key").pos()) + " "
                  + rec.get(rec.getSchema().getField("type").pos()) + " " + sorted);
            }
          }
        }
      }
    }
  }
}
