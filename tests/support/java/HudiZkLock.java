import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider;
import org.apache.hudi.common.config.LockConfiguration;
import org.apache.hudi.common.config.TypedProperties;
import org.apache.hudi.exception.HoodieLockException;
import org.apache.hudi.storage.hadoop.HadoopStorageConfiguration;

/**
 * Hudi 0.15.0's own ZookeeperBasedLockProvider (Curator InterProcessMutex), driven line by line.
 *
 * Usage: HudiZkLock <zookeeper url> <base_path> <lock_key> [session_timeout_ms]
 * Prints READY once connected, then reads commands from stdin:
 *   LOCK <timeout_ms>  -> tryLock; prints ACQUIRED, or TIMEOUT when Hudi reports it could not acquire
 *   HOLD <ms>          -> sleeps while holding (for scripted holds); prints HELD
 *   UNLOCK             -> unlock; prints RELEASED
 *   QUIT               -> close the provider and exit (prints BYE)
 * Protocol lines go to stdout; Hudi's and Curator's logging may interleave, so readers skip other lines.
 */
public class HudiZkLock {
  public static void main(String[] args) throws Exception {
    TypedProperties props = new TypedProperties();
    props.setProperty("hoodie.write.lock.zookeeper.url", args[0]);
    props.setProperty("hoodie.write.lock.zookeeper.base_path", args[1]);
    props.setProperty("hoodie.write.lock.zookeeper.lock_key", args[2]);
    props.setProperty("hoodie.write.lock.zookeeper.session_timeout_ms", args.length > 3 ? args[3] : "60000");
    props.setProperty("hoodie.write.lock.zookeeper.connection_timeout_ms", "15000");
    // The provider reads these three without defaults (Curator's BoundedExponentialBackoffRetry).
    props.setProperty("hoodie.write.lock.wait_time_ms_between_retry", "100");
    props.setProperty("hoodie.write.lock.max_wait_time_ms_between_retry", "1000");
    props.setProperty("hoodie.write.lock.num_retries", "3");

    ZookeeperBasedLockProvider provider = new ZookeeperBasedLockProvider(
        new LockConfiguration(props), new HadoopStorageConfiguration(new Configuration()));
    say("READY");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    try {
      while ((line = in.readLine()) != null) {
        String[] cmd = line.trim().split("\\s+");
        switch (cmd[0]) {
          case "LOCK":
            try {
              say(provider.tryLock(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS) ? "ACQUIRED" : "TIMEOUT");
            } catch (HoodieLockException e) {
              say("TIMEOUT " + e.getMessage().replace('\n', ' '));
            }
            break;
          case "HOLD":
            Thread.sleep(Long.parseLong(cmd[1]));
            say("HELD");
            break;
          case "UNLOCK":
            provider.unlock();
            say("RELEASED");
            break;
          case "QUIT":
            return;
          default:
            say("UNKNOWN " + line);
        }
      }
    } finally {
      provider.close();
      say("BYE");
    }
  }

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }
}
