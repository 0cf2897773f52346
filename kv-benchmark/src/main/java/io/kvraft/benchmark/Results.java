package io.kvraft.benchmark;

import io.kvraft.common.KvException;
import io.kvraft.common.ErrorCode;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.HdrHistogram.Recorder;

import java.io.ByteArrayOutputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The latencies and errors of one run, per operation type. Any thread calls {@link #record}: a
 * lock-free HdrHistogram {@link Recorder} write for a success (and a {@link LongAdder} bump for a
 * get's hit or miss, a scan's keys), a {@link LongAdder} increment for an error. Only operations
 * that <em>started</em> (open loop: were due) inside the measurement window count; earlier ones are
 * the warm-up and only feed the progress line. One thread (the runner's ticker) calls {@link #tick}
 * once a second to take the interval histograms, add them up, and log them for the hlog file.
 *
 * <p>Latencies are in microseconds, 3 significant digits, up to an hour.
 */
public final class Results {

    public static final long LOWEST_US = 1;
    public static final long HIGHEST_US = 3_600_000_000L;
    public static final int DIGITS = 3;
    /** Error key for operations still in flight when the drain timeout ended the run. */
    public static final String UNFINISHED = "UNFINISHED";

    private static final ErrorCode[] CODES = ErrorCode.values();

    private final long t0;
    private final long measureStart;
    private final long measureEnd;
    private final long wallT0Millis;

    private static final OpType[] TYPES = OpType.values();

    private final Recorder[] recs = new Recorder[TYPES.length];
    private final Recorder warmRec = newRecorder();
    private final LongAdder[][] errors = new LongAdder[TYPES.length][CODES.length];
    private final LongAdder warmErrors = new LongAdder();
    private final LongAdder getHits = new LongAdder();
    private final LongAdder getMisses = new LongAdder();
    private final LongAdder scanKeys = new LongAdder();
    private volatile boolean closed;

    // owned by the ticker thread
    private final Histogram[] intervalHist = new Histogram[TYPES.length];
    private Histogram warmInterval;
    private final Histogram[] totals = new Histogram[TYPES.length];
    private final Histogram allTotal = newHistogram();
    private final Histogram warmTotal = newHistogram();
    private long lastTick;
    private long lastErrors;
    private final List<IntervalCount> intervals = new ArrayList<>();
    private final ByteArrayOutputStream hlogBytes = new ByteArrayOutputStream();
    private final HistogramLogWriter hlog;

    /**
     * Completions in one tick interval, for the Dropwizard rates. {@code endNanos} is relative to the window start;
     * {@code counts} is indexed by {@link OpType#ordinal()}.
     */
    public record IntervalCount(long endNanos, long[] counts) {
        public IntervalCount {
            counts = counts.clone();
        }

        public long all() {
            long n = 0;
            for (long c : counts) {
                n += c;
            }
            return n;
        }

        public long of(OpType op) {
            return counts[op.ordinal()];
        }

        public long puts() {
            return of(OpType.PUT);
        }

        public long gets() {
            return of(OpType.GET);
        }

        public long scans() {
            return of(OpType.SCAN);
        }
    }

    /** What the progress line shows after a tick. */
    public record Progress(double elapsedSeconds, double opsPerSecond, long errors, double p99Ms, boolean warmup) {
    }

    /**
     * @param t0           the clock's nanoTime when the load started
     * @param measureStart nanoTime where the measurement window starts (t0 + warm-up)
     * @param measureEnd   nanoTime where it ends
     * @param wallT0Millis wall-clock time at t0
     */
    public Results(long t0, long measureStart, long measureEnd, long wallT0Millis, String clientId) {
        this.t0 = t0;
        this.measureStart = measureStart;
        this.measureEnd = measureEnd;
        this.wallT0Millis = wallT0Millis;
        this.lastTick = t0;
        for (int i = 0; i < TYPES.length; i++) {
            recs[i] = newRecorder();
            totals[i] = newHistogram();
        }
        for (LongAdder[] row : errors) {
            for (int i = 0; i < row.length; i++) {
                row[i] = new LongAdder();
            }
        }
        hlog = new HistogramLogWriter(hlogBytes);
        long base = wallMillis(measureStart);
        hlog.outputComment("kv-benchmark client " + clientId + ": latencies in microseconds, tags put, get and (once"
                + " they ran) scan, sequence, alloc, acquire, release; measured operations only");
        hlog.outputLogFormatVersion();
        hlog.outputStartTime(base);
        hlog.setBaseTime(base);
        hlog.outputBaseTime(base);
        hlog.outputLegend();
    }

    static Recorder newRecorder() {
        return new Recorder(LOWEST_US, HIGHEST_US, DIGITS);
    }

    /** An empty histogram compatible with the recorded ones. */
    public static Histogram newHistogram() {
        return new Histogram(LOWEST_US, HIGHEST_US, DIGITS);
    }

    /** Nanoseconds to recordable microseconds (rounded, clamped to the trackable range). */
    static long toMicros(long nanos) {
        long us = (nanos + 500) / 1000;
        return us < 0 ? 0 : Math.min(us, HIGHEST_US);
    }

    /**
     * One completed operation. {@code error} null for success. {@code items}: for a get 1 if it found a value,
     * 0 if not; for a scan the keys it returned; ignored for a put. Wait-free except for HdrHistogram's phaser.
     */
    public void record(OpType op, long startNanos, long endNanos, Throwable error, long items) {
        if (closed) {
            return;
        }
        if (startNanos < measureStart) {
            if (error == null) {
                warmRec.recordValue(toMicros(endNanos - startNanos));
            } else {
                warmErrors.increment();
            }
            return;
        }
        if (startNanos >= measureEnd) {
            return;
        }
        if (error == null) {
            recs[op.ordinal()].recordValue(toMicros(endNanos - startNanos));
            if (op == OpType.GET) {
                (items > 0 ? getHits : getMisses).increment();
            } else if (op == OpType.SCAN) {
                scanKeys.add(items);
            }
        } else {
            errors[op.ordinal()][KvException.unwrap(error).code().ordinal()].increment();
        }
    }

    /** After this, late completions are ignored. */
    public void close() {
        closed = true;
    }

    public long measureStart() {
        return measureStart;
    }

    public long measureEnd() {
        return measureEnd;
    }

    /** Ticker thread only: takes the interval since the last tick, adds it up and logs it. */
    public Progress tick(long now) {
        long measured = 0;
        for (int i = 0; i < TYPES.length; i++) {
            intervalHist[i] = recs[i].getIntervalHistogram(intervalHist[i]);
            totals[i].add(intervalHist[i]);
            allTotal.add(intervalHist[i]);
            measured += intervalHist[i].getTotalCount();
        }
        warmInterval = warmRec.getIntervalHistogram(warmInterval);
        warmTotal.add(warmInterval);
        if (now > measureStart && (lastTick < measureEnd || measured > 0)) {
            long from = Math.max(lastTick, measureStart);
            double startSec = (wallMillis(from) - hlog.getBaseTime()) / 1000.0;
            double endSec = (wallMillis(now) - hlog.getBaseTime()) / 1000.0;
            for (int i = 0; i < TYPES.length; i++) {
                Histogram h = intervalHist[i];
                // put and get always (the reference's two timers); the others once one ran, so put/get runs log as before
                if (!TYPES[i].optional() || totals[i].getTotalCount() > 0) {
                    h.setTag(TYPES[i].label());
                    hlog.outputIntervalHistogram(startSec, endSec, h, 1000.0);
                }
            }
            long[] counts = new long[TYPES.length];
            for (int i = 0; i < TYPES.length; i++) {
                counts[i] = intervalHist[i].getTotalCount();
            }
            intervals.add(new IntervalCount(Math.min(now, measureEnd) - measureStart, counts));
        }
        long errorsNow = errorCount() + warmErrors.sum();
        long done = measured + warmInterval.getTotalCount() + (errorsNow - lastErrors);
        double seconds = (now - lastTick) / 1e9;
        lastErrors = errorsNow;
        lastTick = now;
        boolean warm = now <= measureStart || allTotal.getTotalCount() == 0;
        Histogram shown = warm ? warmTotal : allTotal;
        double p99 = shown.getTotalCount() == 0 ? 0 : shown.getValueAtPercentile(99.0) / 1000.0;
        return new Progress((now - t0) / 1e9, seconds > 0 ? done / seconds : 0, errorsNow, p99, now <= measureStart);
    }

    /** Measured errors so far, all codes. */
    public long errorCount() {
        long n = 0;
        for (LongAdder[] row : errors) {
            for (LongAdder a : row) {
                n += a.sum();
            }
        }
        return n;
    }

    /** Completed warm-up operations (successes and errors) so far. */
    long warmupCompleted() {
        return warmTotal.getTotalCount() + warmErrors.sum();
    }

    /** Ticker thread, after the last tick: the immutable result. */
    RunResult toResult(WorkloadOptions options, long unfinished, long unsent, long cpuNanos) {
        Map<String, Long> byCode = new TreeMap<>();
        long[] errorsByOp = new long[TYPES.length];
        for (int i = 0; i < CODES.length; i++) {
            long n = 0;
            for (int t = 0; t < TYPES.length; t++) {
                long e = errors[t][i].sum();
                errorsByOp[t] += e;
                n += e;
            }
            if (n > 0) {
                byCode.put(CODES[i].name(), n);
            }
        }
        Histogram[] copies = new Histogram[TYPES.length];
        for (int t = 0; t < TYPES.length; t++) {
            copies[t] = totals[t].copy();
        }
        if (unfinished > 0) {
            byCode.put(UNFINISHED, unfinished);
        }
        hlog.close();
        return new RunResult(options, Instant.ofEpochMilli(wallMillis(measureStart)),
                Instant.ofEpochMilli(wallMillis(measureEnd)), (measureEnd - measureStart) / 1e9,
                copies, byCode, errorsByOp, getHits.sum(), getMisses.sum(), scanKeys.sum(), warmupCompleted(),
                unfinished, unsent, List.copyOf(intervals), hlogBytes.toByteArray(), cpuNanos);
    }

    private long wallMillis(long nanos) {
        return wallT0Millis + Math.floorDiv(nanos - t0, 1_000_000L);
    }
}
