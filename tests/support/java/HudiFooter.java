import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;
import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.common.bloom.BloomFilter;
import org.apache.hudi.common.util.ParquetUtils;
import org.apache.hudi.common.util.collection.ClosableIterator;
import org.apache.hudi.io.hadoop.HoodieAvroParquetReader;
import org.apache.hudi.storage.HoodieStorage;
import org.apache.hudi.storage.StoragePath;
import org.apache.hudi.storage.hadoop.HoodieHadoopStorage;

/**
 * Reads a base file's footer the way Hudi's BLOOM index and schema resolver do (Hudi 0.15 API:
 * ParquetUtils over HoodieStorage/StoragePath), and compares Java's String order with ours.
 *
 * Commands (one per invocation):
 *   footer PARQUET_FILE KEYS_FILE
 *       prints bloom_type, bloom_missing (keys of KEYS_FILE the filter rejects), min_key/max_key
 *       (Base64 UTF-8), row_count, avro_schema (the footer's, as Avro's parser reads it) and
 *       converted_schema (readAvroSchema: parquet-avro's conversion of the Parquet schema)
 *   records PARQUET_FILE
 *       reads the rows as Hudi's merge path does (HoodieAvroParquetReader with the footer's Avro
 *       schema as reader schema): prints record_count, then one record per line
 *   minmax KEYS_FILE
 *       min and max of the keys by String.compareTo (Base64 UTF-8)
 * KEYS_FILE holds one key per line, Base64 of its UTF-8 bytes.
 */
public class HudiFooter {
  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "footer":
        footer(args[1], args[2]);
        break;
      case "records":
        records(args[1]);
        break;
      case "minmax":
        minmax(args[1]);
        break;
      default:
        throw new IllegalArgumentException("unknown command " + args[0]);
    }
  }

  static void footer(String file, String keysFile) throws Exception {
    StoragePath path = new StoragePath(file);
    try (HoodieStorage storage = new HoodieHadoopStorage(file, new Configuration())) {
      ParquetUtils utils = new ParquetUtils();
      BloomFilter bloom = utils.readBloomFilterFromMetadata(storage, path);
      int missing = 0;
      for (String key : readKeys(keysFile)) {
        if (!bloom.mightContain(key)) {
          missing++;
        }
      }
      System.out.println("bloom_type=" + bloom.getBloomFilterTypeCode());
      System.out.println("bloom_missing=" + missing);
      String[] minMax = utils.readMinMaxRecordKeys(storage, path);
      System.out.println("min_key=" + b64(minMax[0]));
      System.out.println("max_key=" + b64(minMax[1]));
      System.out.println("row_count=" + utils.getRowCount(storage, path));
      System.out.println("avro_schema=" + footerSchema(utils, storage, path).toString());
      System.out.println("converted_schema=" + utils.readAvroSchema(storage, path).toString());
    }
  }

  /** The `parquet.avro.schema` footer value, parsed by Avro's Java parser. */
  static Schema footerSchema(ParquetUtils utils, HoodieStorage storage, StoragePath path) {
    String json = utils.readFooter(storage, true, path, "parquet.avro.schema").get("parquet.avro.schema");
    return new Schema.Parser().parse(json);
  }

  static void records(String file) throws Exception {
    StoragePath path = new StoragePath(file);
    try (HoodieStorage storage = new HoodieHadoopStorage(file, new Configuration())) {
      Schema schema = footerSchema(new ParquetUtils(), storage, path);
      List<String> lines = new ArrayList<>();
      try (HoodieAvroParquetReader reader = new HoodieAvroParquetReader(storage, path);
           ClosableIterator<IndexedRecord> it = reader.getIndexedRecordIterator(schema, schema)) {
        while (it.hasNext()) {
          lines.add(it.next().toString());
        }
      }
      System.out.println("record_count=" + lines.size());
      for (String line : lines) {
        System.out.println(line);
      }
    }
  }

  static void minmax(String keysFile) throws Exception {
    String min = null;
    String max = null;
    for (String key : readKeys(keysFile)) {
      if (min == null || key.compareTo(min) < 0) {
        min = key;
      }
      if (max == null || key.compareTo(max) > 0) {
        max = key;
      }
    }
    System.out.println("min_key=" + b64(min));
    System.out.println("max_key=" + b64(max));
  }

  static String b64(String value) {
    return Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8));
  }

  static List<String> readKeys(String file) throws Exception {
    List<String> keys = new ArrayList<>();
    for (String line : Files.readAllLines(Paths.get(file), StandardCharsets.US_ASCII)) {
      if (!line.isEmpty()) {
        keys.add(new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8));
      }
    }
    return keys;
  }
}
