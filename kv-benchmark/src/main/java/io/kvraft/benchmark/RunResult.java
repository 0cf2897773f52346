package io.kvraft.benchmark;

import org.HdrHistogram.Histogram;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The outcome of one measured run: cumulative latency histograms (microseconds) of successful puts,
 * gets and scans, measured errors by code and by type, gets' hits and misses, scans' keys, and what
 * the reports and files need. Only operations started
 * inside the window [start, end) are in it.
 */
public final class RunResult {

    private final WorkloadOptions options;
    private final Instant start;
    private final Instant end;
    private final double durationSeconds;
    private final Histogram[] byOp;
    private final Map<String, Long> errors;
    private final long[] errorsByOp;
    private final long getHits;
    private final long getMisses;
    private final long scanKeys;
    private final long warmupOps;
    private final long unfinished;
    private final long unsent;
    private final List<Results.IntervalCount> intervals;
    private final byte[] hlog;
    private final long cpuNanos;

    /**
     * @param byOp       latencies per {@link OpType}, indexed by ordinal
     * @param errorsByOp measured errors per {@link OpType}, indexed by ordinal
     */
    RunResult(WorkloadOptions options, Instant start, Instant end, double durationSeconds, Histogram[] byOp,
              Map<String, Long> errors, long[] errorsByOp, long getHits, long getMisses, long scanKeys, long warmupOps,
              long unfinished, long unsent, List<Results.IntervalCount> intervals, byte[] hlog, long cpuNanos) {
        this.options = options;
        this.start = start;
        this.end = end;
        this.durationSeconds = durationSeconds;
        this.byOp = byOp.clone();
        this.errors = Map.copyOf(errors);
        this.errorsByOp = errorsByOp.clone();
        this.getHits = getHits;
        this.getMisses = getMisses;
        this.scanKeys = scanKeys;
        this.warmupOps = warmupOps;
        this.unfinished = unfinished;
        this.unsent = unsent;
        this.intervals = intervals;
        this.hlog = hlog;
        this.cpuNanos = cpuNanos;
    }

    public WorkloadOptions options() {
        return options;
    }

    public String clientId() {
        return options.clientId();
    }

    /** Wall-clock start of the measurement window (after the warm-up). */
    public Instant start() {
        return start;
    }

    public Instant end() {
        return end;
    }

    /** Length of the measurement window. */
    public double durationSeconds() {
        return durationSeconds;
    }

    /** Latencies of successful measured operations of type {@code op}, microseconds. A copy. */
    public Histogram histogram(OpType op) {
        return byOp[op.ordinal()].copy();
    }

    /** Latencies of successful measured puts, microseconds. A copy. */
    public Histogram putHistogram() {
        return histogram(OpType.PUT);
    }

    public Histogram getHistogram() {
        return histogram(OpType.GET);
    }

    /** Every type together. */
    public Histogram totalHistogram() {
        Histogram h = byOp[0].copy();
        for (int i = 1; i < byOp.length; i++) {
            h.add(byOp[i]);
        }
        return h;
    }

    /** Successful measured operations of type {@code op}. */
    public long count(OpType op) {
        return byOp[op.ordinal()].getTotalCount();
    }

    public long puts() {
        return count(OpType.PUT);
    }

    public long gets() {
        return count(OpType.GET);
    }

    public long scans() {
        return count(OpType.SCAN);
    }

    /** Successful measured operations. */
    public long ops() {
        long n = 0;
        for (Histogram h : byOp) {
            n += h.getTotalCount();
        }
        return n;
    }

    /** Successful measured operations of type {@code op} per second. */
    public double rate(OpType op) {
        return count(op) / durationSeconds;
    }

    public double putRate() {
        return rate(OpType.PUT);
    }

    public double getRate() {
        return rate(OpType.GET);
    }

    /** Whether operations of type {@code op} ran in the window (succeeded or failed). */
    public boolean ran(OpType op) {
        return count(op) + errors(op) > 0;
    }

    /** Measured errors of type {@code op}. */
    public long errors(OpType op) {
        return errorsByOp[op.ordinal()];
    }

    /** Successful measured gets that found a value. */
    public long getHits() {
        return getHits;
    }

    /** Successful measured gets that found none. */
    public long getMisses() {
        return getMisses;
    }

    /** Keys returned by all successful measured scans. */
    public long scanKeys() {
        return scanKeys;
    }

    /** Successful measured operations per second. */
    public double opsRate() {
        return ops() / durationSeconds;
    }

    /** Measured errors by ErrorCode name (and {@link Results#UNFINISHED}), sorted by name. */
    public Map<String, Long> errors() {
        return new java.util.TreeMap<>(errors);
    }

    public long errorCount() {
        return errors.values().stream().mapToLong(Long::longValue).sum();
    }

    public long putErrors() {
        return errors(OpType.PUT);
    }

    public long getErrors() {
        return errors(OpType.GET);
    }

    /** Errors over all measured operations (successes plus errors); 0 when there were none. */
    public double errorRate() {
        long all = ops() + errorCount();
        return all == 0 ? 0 : (double) errorCount() / all;
    }

    /** Operations completed during the warm-up (not in any other figure). */
    public long warmupOps() {
        return warmupOps;
    }

    /** This result with {@code more} warm-up operations: those of an adaptive warm-up, run before this one's load. */
    RunResult plusWarmupOps(long more) {
        return new RunResult(options, start, end, durationSeconds, byOp, errors, errorsByOp, getHits, getMisses, scanKeys,
                warmupOps + more, unfinished, unsent, intervals, hlog, cpuNanos);
    }

    /** Operations still in flight when the drain timeout ended the run (counted as errors). */
    public long unfinished() {
        return unfinished;
    }

    /** Open loop: operations due before the end that were never sent because all slots were busy. */
    public long unsent() {
        return unsent;
    }

    public List<Results.IntervalCount> intervals() {
        return intervals;
    }

    /**
     * The interval log (HdrHistogram log format), tags put, get and, once one ran, scan, sequence, alloc, acquire
     * and release.
     */
    public byte[] hlog() {
        return hlog.clone();
    }

    /** This process's CPU time during the run (warm-up and drain included); -1 if unknown. */
    public long cpuNanos() {
        return cpuNanos;
    }

    /** Client CPU milliseconds per 1000 completed operations (warm-up included), or -1 if unknown. */
    public double cpuMillisPer1kOps() {
        long completed = ops() + errorCount() + warmupOps;
        return cpuNanos < 0 || completed == 0 ? -1 : cpuNanos / 1e6 / (completed / 1000.0);
    }

    /** Why this run fails the error-rate limit, if it does. */
    public Optional<String> errorRateViolation(double maxErrorRate) {
        return errorRateViolation(errorCount(), ops() + errorCount(), maxErrorRate);
    }

    /**
     * The exit rule: a run fails when errors/total exceeds {@code maxErrorRate}, or when no
     * operation completed at all.
     */
    public static Optional<String> errorRateViolation(long errors, long total, double maxErrorRate) {
        if (total == 0) {
            return Optional.of("no operation completed in the measurement window");
        }
        double rate = (double) errors / total;
        if (rate > maxErrorRate) {
            return Optional.of(String.format(Locale.ROOT,
                    "error rate %.6f (%d errors of %d operations) exceeds --max-error-rate %s",
                    rate, errors, total, maxErrorRate));
        }
        return Optional.empty();
    }
}
