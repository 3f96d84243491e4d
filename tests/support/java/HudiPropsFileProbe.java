import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.StringReader;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hudi.common.config.DFSPropertiesConfiguration;
import org.apache.hudi.common.config.TypedProperties;
import org.apache.hudi.storage.StoragePath;

/**
 * Reads a props file with Hudi's DFSPropertiesConfiguration and applies KEY=VALUE overrides the way Hudi's
 * utilities apply --hoodie-conf (one line each, after the file); prints the result as a JSON object.
 * Args: <props file> [override ...].
 */
public class HudiPropsFileProbe {
  public static void main(String[] args) throws Exception {
    StoragePath path = new StoragePath(new java.io.File(args[0]).getAbsoluteFile().toURI().toString());
    DFSPropertiesConfiguration conf = new DFSPropertiesConfiguration(new Configuration(), path);
    List<String> overrides = Arrays.asList(args).subList(1, args.length);
    if (!overrides.isEmpty()) {
      conf.addPropsFromStream(new BufferedReader(new StringReader(String.join("\n", overrides))), path);
    }
    TypedProperties props = conf.getProps();
    TreeMap<String, String> sorted = new TreeMap<>();
    for (String name : props.stringPropertyNames()) {
      sorted.put(name, props.getProperty(name));
    }
    System.out.println(new ObjectMapper().writeValueAsString(sorted));
  }
}
