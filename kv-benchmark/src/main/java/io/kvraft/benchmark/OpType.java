package io.kvraft.benchmark;

/**
 * The kinds of operation the load issues; {@link #label()} names them in reports, JSON and hlog tags. The mixes
 * issue puts, gets, scans and appends; {@code --workload sequence} getSequence calls, {@code allocator} SequenceAllocator
 * numbers, {@code lock} a lock's acquire and then its release.
 */
public enum OpType {
    PUT("put"), GET("get"), SCAN("scan"), APPEND("append"), SEQUENCE("sequence"), ALLOC("alloc"), ACQUIRE("acquire"), RELEASE("release");

    private final String label;

    OpType(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    /** Whether a report shows this type only once it ran (put and get rows are always there, the reference's timers). */
    public boolean optional() {
        return this != PUT && this != GET;
    }

    @Override
    public String toString() {
        return label;
    }
}
