package io.kvraft.common.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * Binds a YAML file into an immutable record with Jackson. Unknown keys, wrong types and values
 * that the record's constructor rejects all become a {@link ConfigException} naming the file and
 * the key path.
 */
public final class YamlConfig {

    private static final ObjectMapper MAPPER = new ObjectMapper(new YAMLFactory())
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            // FAIL_ON_READING_DUP_TREE_KEY covers JsonNode trees only; records need the parser to catch a repeated key
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private YamlConfig() {
    }

    public static <T> T load(Path file, Class<T> type) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException(file + ": no such file");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
        return parse(file.toString(), text, type);
    }

    public static <T> T parse(String source, String text, Class<T> type) {
        try {
            var tree = MAPPER.readTree(text);
            // a file of only comments is an empty mapping, so defaults and required-key errors apply
            T value = MAPPER.readValue(tree == null || tree.isMissingNode() || tree.isNull() ? "{}" : text, type);
            if (value == null) {
                throw new ConfigException(source + ": empty document");
            }
            return value;
        } catch (UnrecognizedPropertyException e) {
            throw new ConfigException(source + ": unknown key '" + path(e) + "'"
                    + " (known here: " + e.getKnownPropertyIds().stream().map(String::valueOf).sorted()
                    .collect(Collectors.joining(", ")) + ")");
        } catch (JsonMappingException e) {
            if (e.getCause() instanceof JsonProcessingException parse && !(parse instanceof JsonMappingException)) {
                throw malformed(source, parse);
            }
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            String why = root instanceof IllegalArgumentException || root instanceof NullPointerException
                    ? root.getMessage() : e.getOriginalMessage();
            String at = path(e);
            throw new ConfigException(source + ": " + (at.isEmpty() ? "" : "key '" + at + "': ") + firstLine(why));
        } catch (JsonProcessingException e) {
            throw malformed(source, e);
        }
    }

    private static ConfigException malformed(String source, JsonProcessingException e) {
        return new ConfigException(source + ": malformed YAML: " + firstLine(e.getOriginalMessage())
                + (e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr()));
    }

    private static String path(JsonMappingException e) {
        return e.getPath().stream()
                .map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining(".")).replace(".[", "[");
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "invalid value";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
