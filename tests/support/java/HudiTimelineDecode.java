import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;

import org.apache.avro.Schema;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificRecordBase;
import org.apache.hudi.avro.model.HoodieCleanMetadata;
import org.apache.hudi.avro.model.HoodieCleanerPlan;
import org.apache.hudi.avro.model.HoodieCompactionPlan;
import org.apache.hudi.avro.model.HoodieRequestedReplaceMetadata;
import org.apache.hudi.avro.model.HoodieRollbackMetadata;
import org.apache.hudi.avro.model.HoodieRollbackPlan;
import org.apache.hudi.avro.model.HoodieSavepointMetadata;
import org.apache.hudi.common.model.HoodieCommitMetadata;
import org.apache.hudi.common.model.HoodieReplaceCommitMetadata;
import org.apache.hudi.common.table.timeline.TimelineMetadataUtils;

/**
 * Timeline files through Hudi's own (de)serializers, many files per JVM start.
 *
 * decode DIR: every DIR/ID.KIND.bin is read with Hudi's deserializer for KIND (an Avro record name, or
 *   HoodieCommitMetadata / HoodieReplaceCommitMetadata) and written back as JSON to ID.KIND.out
 *   (Avro: the record's toString(); commit metadata: toJsonString()), or the error to ID.KIND.err.
 * encode SCHEMA_DIR DIR: every DIR/ID.KIND.json (Avro JSON encoding against SCHEMA_DIR/KIND.avsc, our
 *   schema) is resolved into Hudi's compiled class and serialized by TimelineMetadataUtils to ID.KIND.avro.
 *   Optional string-map fields that only Hudi's schema has (0.15's extraMetadata) are filled in, so the
 *   reader on the other side has to skip them.
 */
public class HudiTimelineDecode {
  public static void main(String[] args) throws Exception {
    if (args[0].equals("decode")) {
      for (File f : inputs(args[1], ".bin")) {
        String kind = kindOf(f, ".bin");
        String base = f.getPath().substring(0, f.getPath().length() - 4);
        try {
          write(base + ".out", decode(kind, Files.readAllBytes(f.toPath())).getBytes(StandardCharsets.UTF_8));
        } catch (Throwable e) {
          write(base + ".err", e.toString().getBytes(StandardCharsets.UTF_8));
        }
      }
    } else if (args[0].equals("encode")) {
      for (File f : inputs(args[2], ".json")) {
        String kind = kindOf(f, ".json");
        Schema ours = new Schema.Parser().parse(new File(args[1], kind + ".avsc"));
        String json = new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8);
        String base = f.getPath().substring(0, f.getPath().length() - 5);
        write(base + ".avro", encode(kind, ours, json));
      }
    } else {
      throw new IllegalArgumentException("usage: decode DIR | encode SCHEMA_DIR DIR");
    }
  }

  static File[] inputs(String dir, String suffix) {
    File[] files = new File(dir).listFiles((d, n) -> n.endsWith(suffix));
    java.util.Arrays.sort(files);
    return files;
  }

  static String kindOf(File f, String suffix) {
    String n = f.getName();
    String stem = n.substring(0, n.length() - suffix.length());
    return stem.substring(stem.lastIndexOf('.') + 1);
  }

  static void write(String path, byte[] bytes) throws Exception {
    Files.write(Path.of(path), bytes);
  }

  static String decode(String kind, byte[] bytes) throws Exception {
    switch (kind) {
      case "HoodieRequestedReplaceMetadata":
        return TimelineMetadataUtils.deserializeRequestedReplaceMetadata(bytes).toString();
      case "HoodieCleanerPlan":
        return TimelineMetadataUtils.deserializeCleanerPlan(bytes).toString();
      case "HoodieCleanMetadata":
        return TimelineMetadataUtils.deserializeHoodieCleanMetadata(bytes).toString();
      case "HoodieRollbackPlan":
        return TimelineMetadataUtils.deserializeAvroMetadata(bytes, HoodieRollbackPlan.class).toString();
      case "HoodieRollbackMetadata":
        return TimelineMetadataUtils.deserializeHoodieRollbackMetadata(bytes).toString();
      case "HoodieSavepointMetadata":
        return TimelineMetadataUtils.deserializeHoodieSavepointMetadata(bytes).toString();
      case "HoodieCompactionPlan":
        return TimelineMetadataUtils.deserializeCompactionPlan(bytes).toString();
      case "HoodieCommitMetadata":
        return HoodieCommitMetadata.fromBytes(bytes, HoodieCommitMetadata.class).toJsonString();
      case "HoodieReplaceCommitMetadata":
        return HoodieReplaceCommitMetadata.fromBytes(bytes, HoodieReplaceCommitMetadata.class).toJsonString();
      default:
        throw new IllegalArgumentException("unknown kind " + kind);
    }
  }

  static byte[] encode(String kind, Schema ours, String json) throws Exception {
    Class<? extends SpecificRecordBase> cls =
        Class.forName("org.apache.hudi.avro.model." + kind).asSubclass(SpecificRecordBase.class);
    Schema hudi = (Schema) cls.getMethod("getClassSchema").invoke(null);
    SpecificDatumReader<SpecificRecordBase> reader = new SpecificDatumReader<>(ours, hudi);
    SpecificRecordBase record = reader.read(null, DecoderFactory.get().jsonDecoder(ours, json));
    for (Schema.Field field : hudi.getFields()) {
      if (ours.getField(field.name()) == null && record.get(field.pos()) == null && isOptionalStringMap(field.schema())) {
        record.put(field.pos(), Collections.singletonMap("hts.test", "written by Hudi"));
      }
    }
    switch (kind) {
      case "HoodieRequestedReplaceMetadata":
        return TimelineMetadataUtils.serializeRequestedReplaceMetadata((HoodieRequestedReplaceMetadata) record).get();
      case "HoodieCleanerPlan":
        return TimelineMetadataUtils.serializeCleanerPlan((HoodieCleanerPlan) record).get();
      case "HoodieCleanMetadata":
        return TimelineMetadataUtils.serializeCleanMetadata((HoodieCleanMetadata) record).get();
      case "HoodieRollbackPlan":
        return TimelineMetadataUtils.serializeRollbackPlan((HoodieRollbackPlan) record).get();
      case "HoodieRollbackMetadata":
        return TimelineMetadataUtils.serializeRollbackMetadata((HoodieRollbackMetadata) record).get();
      case "HoodieSavepointMetadata":
        return TimelineMetadataUtils.serializeSavepointMetadata((HoodieSavepointMetadata) record).get();
      case "HoodieCompactionPlan":
        return TimelineMetadataUtils.serializeCompactionPlan((HoodieCompactionPlan) record).get();
      default:
        throw new IllegalArgumentException("unknown kind " + kind);
    }
  }

  static boolean isOptionalStringMap(Schema s) {
    if (s.getType() != Schema.Type.UNION) {
      return false;
    }
    for (Schema branch : s.getTypes()) {
      if (branch.getType() == Schema.Type.MAP && branch.getValueType().getType() == Schema.Type.STRING) {
        return true;
      }
    }
    return false;
  }
}
