package io.kvraft.benchmark;

import picocli.CommandLine;

import java.util.Arrays;
import java.util.Iterator;
import java.util.Locale;

/**
 * Named operation mixes for {@code --workload}: the reference benchmark's, and YCSB's core workloads
 * A, B, C and E on this store's operations (an update is a put of an existing key; E's inserts are
 * puts of keys of the key space too, so the key space does not grow).
 */
public enum WorkloadPreset {
    DEFAULT("default", 0.1, 0, "90% put, 10% get (the SOFAJRaft reference)"),
    A("a", 0.5, 0, "50% get, 50% put (YCSB A, update heavy)"),
    B("b", 0.95, 0, "95% get, 5% put (YCSB B, read mostly)"),
    C("c", 1.0, 0, "100% get (YCSB C, read only)"),
    E("e", 0, 0.95, "95% scan, 5% put (YCSB E, short ranges)");

    private final String cliName;
    private final double readRatio;
    private final double scanRatio;
    private final String description;

    WorkloadPreset(String cliName, double readRatio, double scanRatio, String description) {
        this.cliName = cliName;
        this.readRatio = readRatio;
        this.scanRatio = scanRatio;
        this.description = description;
    }

    public String cliName() {
        return cliName;
    }

    /** Share of gets. */
    public double readRatio() {
        return readRatio;
    }

    /** Share of scans; puts are the rest. */
    public double scanRatio() {
        return scanRatio;
    }

    public String description() {
        return description;
    }

    public static WorkloadPreset parse(String s) {
        String norm = s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
        for (WorkloadPreset p : values()) {
            if (p.cliName.equals(norm)) {
                return p;
            }
        }
        throw new UsageException("--workload must be one of " + String.join(", ", names()) + "; got '" + s + "'");
    }

    static String[] names() {
        return Arrays.stream(values()).map(WorkloadPreset::cliName).toArray(String[]::new);
    }

    @Override
    public String toString() {
        return cliName;
    }

    /** picocli: parses the CLI spelling into a one-line error. */
    public static final class Converter implements CommandLine.ITypeConverter<WorkloadPreset> {
        @Override
        public WorkloadPreset convert(String value) {
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
            return Arrays.stream(names()).iterator();
        }
    }
}
