package io.kvraft.benchmark;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import picocli.CommandLine;

import java.util.Arrays;
import java.util.Iterator;
import java.util.Locale;

/** How the benchmark picks the key of each operation. */
public enum KeyDistribution {
    /** Every key of the key space equally likely. */
    UNIFORM("uniform"),
    /** YCSB's Zipfian (constant 0.99): key 0 the hottest. */
    ZIPFIAN("zipfian"),
    /** Only the regions' start keys, as the SOFAJRaft reference benchmark does. */
    REGION_START("region-start"),
    /** Uniform keys whose first byte is 0x00: all in the region holding the lowest keys, one hot region. */
    HOT_REGION("hot-region");

    private final String cliName;

    KeyDistribution(String cliName) {
        this.cliName = cliName;
    }

    @JsonValue
    public String cliName() {
        return cliName;
    }

    @JsonCreator
    public static KeyDistribution parse(String s) {
        String norm = s == null ? "" : s.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        for (KeyDistribution d : values()) {
            if (d.cliName.equals(norm)) {
                return d;
            }
        }
        throw new UsageException("--key-distribution must be one of uniform, zipfian, region-start, hot-region; got '" + s + "'");
    }

    @Override
    public String toString() {
        return cliName;
    }

    /** picocli: parses the CLI spelling. */
    public static final class Converter implements CommandLine.ITypeConverter<KeyDistribution> {
        @Override
        public KeyDistribution convert(String value) {
            try {
                return parse(value);
            } catch (UsageException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /** picocli: the candidates shown in --help. */
    public static final class Candidates implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return Arrays.stream(values()).map(KeyDistribution::cliName).iterator();
        }
    }
}
