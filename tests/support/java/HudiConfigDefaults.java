import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hudi.common.config.ConfigProperty;

/**
 * Prints every ConfigProperty declared by the given Hudi config classes as one JSON object a line:
 * key, default (String.valueOf, or null), alternatives, deprecated.
 */
public class HudiConfigDefaults {
  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    for (String className : args) {
      for (Field field : Class.forName(className).getFields()) {
        if (!Modifier.isStatic(field.getModifiers()) || field.getType() != ConfigProperty.class) {
          continue;
        }
        ConfigProperty<?> property = (ConfigProperty<?>) field.get(null);
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("class", className);
        row.put("key", property.key());
        row.put("default", property.hasDefaultValue() ? String.valueOf(property.defaultValue()) : null);
        row.put("alternatives", property.getAlternatives());
        row.put("deprecated", property.getDeprecatedVersion().isPresent());
        System.out.println(json.writeValueAsString(row));
      }
    }
  }
}
