import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.apache.hudi.common.bloom.BloomFilter;
import org.apache.hudi.common.bloom.BloomFilterFactory;

/**
 * Builds and checks bloom filters with Hudi's own BloomFilterFactory, to compare with the Python ones.
 *
 * One argument: a job file, one job per line (one JVM start for many comparisons):
 *   build NUM_ENTRIES FPP MAX_ENTRIES TYPE KEYS_FILE OUT_FILE
 *       adds the keys in file order, writes serializeToString() to OUT_FILE
 *   check TYPE SERIALIZED_FILE KEYS_FILE
 *       fromString(serialized, TYPE); prints "check <keys> <keys not contained>"
 * KEYS_FILE holds one key per line, Base64 of its UTF-8 bytes (so any character survives).
 */
public class HudiBloom {
  public static void main(String[] args) throws Exception {
    for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      if (line.isBlank()) {
        continue;
      }
      String[] job = line.trim().split(" ");
      if (job[0].equals("build")) {
        BloomFilter filter = BloomFilterFactory.createBloomFilter(
            Integer.parseInt(job[1]), Double.parseDouble(job[2]), Integer.parseInt(job[3]), job[4]);
        for (String key : readKeys(job[5])) {
          filter.add(key);
        }
        Files.write(Paths.get(job[6]), filter.serializeToString().getBytes(StandardCharsets.US_ASCII));
        System.out.println("built " + job[6]);
      } else if (job[0].equals("check")) {
        String serialized = new String(Files.readAllBytes(Paths.get(job[2])), StandardCharsets.US_ASCII);
        BloomFilter filter = BloomFilterFactory.fromString(serialized, job[1]);
        List<String> keys = readKeys(job[3]);
        int missing = 0;
        for (String key : keys) {
          if (!filter.mightContain(key)) {
            missing++;
          }
        }
        System.out.println("check " + keys.size() + " " + missing);
      } else {
        throw new IllegalArgumentException("unknown job " + line);
      }
    }
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
