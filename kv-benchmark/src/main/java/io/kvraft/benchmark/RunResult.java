package io.kvraft.benchmark;

import org.HdrHistogram.Histogram;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The outcome of one measured run: cumulative latency histograms (microseconds) of successful puts
 * and gets, measured errors by code, and what the reports and files need. Only operations started
 * inside the window [start, end) are in it.
 */
public final class RunResult {

    private final WorkloadOptions options;
    private final Instant start;
    private final Instant end;
    private final double durationSeconds;
    private final Histogram put;
    private final Histogram get;
    private final Map<String, Long> errors;
    private final long putErrors;
    private final long getErrors;
    private final long warmupOps;
    private final long unfinished;
    private final long unsent;
    private final List<Results.IntervalCount> intervals;
    private final byte[] hlog;
    private final long cpuNanos;

    RunResult(WorkloadOptions options, Instant start, Instant end, double durationSeconds, Histogram put,
              Histogram get, Map<String, Long> errors, long putErrors, long getErrors, long warmupOps,
              long unfinished, long unsent, List<Results.IntervalCount> intervals, byte[] hlog, long cpuNanos) {
        this.options = options;
        this.start = start;
        this.end = end;
        this.durationSeconds = durationSeconds;
        this.put = put;
        this.get = get;
        this.errors = Map.copyOf(errors);
        this.putErrors = putErrors;
        this.getErrors = getErrors;
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

    /** Latencies of successful measured puts, microseconds. A copy. */
    public Histogram putHistogram() {
        return put.copy();
    }

    public Histogram getHistogram() {
        return get.copy();
    }

    /** Puts and gets together. */
    public Histogram totalHistogram() {
        Histogram h = put.copy();
        h.add(get);
        return h;
    }

    public long puts() {
        return put.getTotalCount();
    }

    public long gets() {
        return get.getTotalCount();
    }

    /** Successful measured operations. */
    public long ops() {
        return puts() + gets();
    }

    public double putRate() {
        return puts() / durationSeconds;
    }

    public double getRate() {
        return gets() / durationSeconds;
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
        return putErrors;
    }

    public long getErrors() {
        return getErrors;
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

    /** The interval log (HdrHistogram log format), tags put and get. */
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
