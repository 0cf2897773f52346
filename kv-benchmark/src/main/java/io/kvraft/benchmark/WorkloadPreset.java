package io.kvraft.benchmark;

import picocli.CommandLine;

import java.util.Arrays;
import java.util.Iterator;
import java.util.Locale;

/**
 * Named workloads for {@code --workload}: operation mixes (the reference benchmark's, and YCSB's core workloads
 * A, B, C and E on this store's operations: an update is a put of an existing key; E's inserts are puts of keys
 * of the key space too, so the key space does not grow), and the coordination workloads, which
 * issue one kind of call each and preload nothing: getSequence, SequenceAllocator.next, and a lock's
 * acquire and release.
 */
public enum WorkloadPreset {
    DEFAULT("default", Kind.MIX, 0.1, 0, "90% put, 10% get (the SOFAJRaft reference)"),
    A("a", Kind.MIX, 0.5, 0, "50% get, 50% put (YCSB A, update heavy)"),
    B("b", Kind.MIX, 0.95, 0, "95% get, 5% put (YCSB B, read mostly)"),
    C("c", Kind.MIX, 1.0, 0, "100% get (YCSB C, read only)"),
    E("e", Kind.MIX, 0, 0.95, "95% scan, 5% put (YCSB E, short ranges)"),
    SEQUENCE("sequence", Kind.SEQUENCE, 0, 0, "getSequence(key, --sequence-step) on the --keys sequences"),
    ALLOCATOR("allocator", Kind.ALLOCATOR, 0, 0,
            "SequenceAllocator.next() in a loop per thread, one allocator per sequence key shared by the threads"),
    LOCK("lock", Kind.LOCK, 0, 0, "per in-flight slot its own lock key: tryLock, then unlock (no contention)");

    /** What a workload's operations are. */
    public enum Kind {
        /** Puts, gets and scans by the ratios, on a preloaded key space. */
        MIX,
        /** {@link io.kvraft.client.KvClient#getSequence}: calls/s, latency per call. */
        SEQUENCE,
        /** {@link io.kvraft.client.SequenceAllocator#next}: numbers/s, latency per number. */
        ALLOCATOR,
        /** {@link io.kvraft.client.KvClient#tryLock} then {@link io.kvraft.client.LockHandle#unlock}, each timed. */
        LOCK
    }

    private final String cliName;
    private final Kind kind;
    private final double readRatio;
    private final double scanRatio;
    private final String description;

    WorkloadPreset(String cliName, Kind kind, double readRatio, double scanRatio, String description) {
        this.cliName = cliName;
        this.kind = kind;
        this.readRatio = readRatio;
        this.scanRatio = scanRatio;
        this.description = description;
    }

    public Kind kind() {
        return kind;
    }

    /** The kind of the workload named {@code cliName}; a null name is the default mix. */
    public static Kind kindOf(String cliName) {
        return cliName == null ? Kind.MIX : parse(cliName).kind();
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
