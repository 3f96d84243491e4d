import org.apache.avro.Schema;

/** Prints Hudi's compiled Avro schema of each named record (org.apache.hudi.avro.model.<Name>), one per line. */
public class HudiAvroSchemas {
  public static void main(String[] args) throws Exception {
    for (String name : args) {
      Class<?> cls = Class.forName("org.apache.hudi.avro.model." + name);
      Schema schema = (Schema) cls.getMethod("getClassSchema").invoke(null);
      System.out.println(schema.toString());
    }
  }
}
