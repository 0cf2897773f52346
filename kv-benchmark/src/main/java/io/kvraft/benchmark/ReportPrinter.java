package io.kvraft.benchmark;

import com.codahale.metrics.Clock;
import com.codahale.metrics.ConsoleReporter;
import com.codahale.metrics.MetricRegistry;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * The text reports: the Dropwizard Metrics console block in the SOFAJRaft reference's format
 * (timers {@code benchmark_timer}, {@code get_benchmark_timer}, {@code put_benchmark_timer}, and
 * {@code scan_benchmark_timer} when scans ran, in milliseconds; likewise {@code sequence_}, {@code alloc_},
 * {@code acquire_} and {@code release_benchmark_timer} for the coordination workloads), then an HdrHistogram percentile
 * table, a per-type table (memtier's: count, rate, percentiles, gets' hits and misses, scans' keys),
 * then errors by code.
 */
public final class ReportPrinter {

    public static final String TOTAL_TIMER = "benchmark_timer";
    public static final String PUT_TIMER = "put_benchmark_timer";
    public static final String GET_TIMER = "get_benchmark_timer";
    public static final String SCAN_TIMER = "scan_benchmark_timer";

    private static final int WIDTH = 80;

    private ReportPrinter() {
    }

    /** One row of the latency table. */
    public record Row(String name, Histogram micros, double opsPerSecond) {
    }

    /** The whole report of one run. */
    public static void printRunReport(PrintStream out, RunResult r) {
        out.println("kv-benchmark: " + r.options().describe());
        out.println();
        printDropwizard(out, r);
        List<Row> rows = new ArrayList<>();
        boolean mix = r.options().kind() == WorkloadPreset.Kind.MIX;
        for (OpType op : OpType.values()) {
            // a mix always shows put and get (the reference's timers); every other type once it ran
            if ((mix && !op.optional()) || r.ran(op)) {
                rows.add(new Row(op.label(), r.histogram(op), r.rate(op)));
            }
        }
        rows.add(new Row("total", r.totalHistogram(), r.opsRate()));
        printLatencyTable(out, rows);
        out.println();
        printOperations(out, ResultFiles.toJson(r).ops());
        out.println();
        printErrors(out, r.errors(), r.ops() + r.errorCount(), r.options().maxErrorRate());
        out.println();
        out.println(header("Run"));
        out.printf(Locale.ROOT, "measured %.1f s from %s to %s; %,d warm-up operations not counted%n",
                r.durationSeconds(), r.start(), r.end(), r.warmupOps());
        WorkloadOptions o = r.options();
        out.printf(Locale.ROOT, "client: read mode %s, batching %s; workload %s (%s)%s%n",
                o.readMode() == null ? "of the client config" : o.readMode(),
                o.batching() == null ? "of the client config" : o.batching() ? "on" : "off",
                o.workload() == null ? "by ratios" : o.workload(), o.mix(),
                o.scanRatio() > 0 ? ", " + o.scanLength() + " keys per scan at most" : "");
        if (r.ran(OpType.SEQUENCE)) {
            out.printf(Locale.ROOT, "sequence: %d numbers per call: %.0f numbers/s handed out by getSequence over %d"
                    + " sequence key(s)%n", o.sequenceStep(), r.rate(OpType.SEQUENCE) * o.sequenceStep(), o.keys());
        }
        if (r.ran(OpType.ALLOC)) {
            out.printf(Locale.ROOT, "allocator: %.0f ids/s from SequenceAllocator.next() (blocks of %d, %d sequence"
                    + " key(s), %d thread(s))%n", r.rate(OpType.ALLOC), o.sequenceStep(), o.keys(), o.threads());
        }
        if (r.cpuMillisPer1kOps() >= 0) {
            out.printf(Locale.ROOT, "client CPU: %.2f ms per 1k operations (%.2f cores on average)%n",
                    r.cpuMillisPer1kOps(), r.cpuNanos() / 1e9 / (r.durationSeconds() + r.options().warmupSeconds()));
        }
        if (r.options().openLoop()) {
            double due = r.options().rate() * (r.durationSeconds() + r.options().warmupSeconds());
            out.printf(Locale.ROOT, "open loop: target %.0f ops/s, achieved %.0f ops/s (errors included); %,d"
                            + " operations due before the end were not sent%s%n", r.options().rate(),
                    (r.ops() + r.errorCount()) / r.durationSeconds(), r.unsent(),
                    r.unsent() > 0.01 * due ? " (the target rate was not reached: all slots were busy)" : "");
        }
        if (r.unfinished() > 0) {
            out.printf(Locale.ROOT, "%,d operations were still in flight after the %.0f s drain timeout"
                    + " (counted as %s errors)%n", r.unfinished(), r.options().drainTimeoutSeconds(), Results.UNFINISHED);
        }
        out.flush();
    }

    /** The Dropwizard console block (banner with the end time, then the three timers). */
    public static void printDropwizard(PrintStream out, RunResult r) {
        long window = LoadRunner.toNanos(r.durationSeconds());
        MetricRegistry registry = new MetricRegistry();
        registry.register(TOTAL_TIMER, HdrTimer.of(r.totalHistogram(), counts(r, Results.IntervalCount::all), window));
        registry.register(PUT_TIMER, HdrTimer.of(r.putHistogram(), counts(r, Results.IntervalCount::puts), window));
        registry.register(GET_TIMER, HdrTimer.of(r.getHistogram(), counts(r, Results.IntervalCount::gets), window));
        for (OpType op : OpType.values()) {
            if (op.optional() && r.ran(op)) {
                registry.register(op.label() + "_benchmark_timer", HdrTimer.of(r.histogram(op), counts(r, c -> c.of(op)),
                        window));
            }
        }
        long endMillis = r.end().toEpochMilli();
        Clock wall = new Clock() {
            @Override
            public long getTick() {
                return endMillis * 1_000_000L;
            }

            @Override
            public long getTime() {
                return endMillis;
            }
        };
        ConsoleReporter reporter = ConsoleReporter.forRegistry(registry)
                .outputTo(out)
                .formattedFor(Locale.US)
                .formattedFor(TimeZone.getDefault())
                .withClock(wall)
                .convertRatesTo(TimeUnit.SECONDS)
                .convertDurationsTo(TimeUnit.MILLISECONDS)
                .build();
        // report once; never close(): ScheduledReporter.stop() reports again. It was never start()ed, so its
        // executor has no thread to stop.
        reporter.report();
        out.flush();
    }

    private static List<long[]> counts(RunResult r, ToLongFunction<Results.IntervalCount> f) {
        List<long[]> list = new ArrayList<>(r.intervals().size());
        for (Results.IntervalCount c : r.intervals()) {
            list.add(new long[]{c.endNanos(), f.applyAsLong(c)});
        }
        return list;
    }

    /** The HdrHistogram table: p50 .. p99.99 and max in ms with 3 decimals, count and ops/s. */
    public static void printLatencyTable(PrintStream out, List<Row> rows) {
        out.println(header("HdrHistogram latency (ms)"));
        out.printf(Locale.ROOT, "%-8s %10s %10s %10s %10s %10s %10s %12s %12s%n",
                "op", "p50", "p90", "p99", "p99.9", "p99.99", "max", "count", "ops/s");
        for (Row row : rows) {
            Histogram h = row.micros();
            out.printf(Locale.ROOT, "%-8s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f %12d %12.2f%n",
                    row.name(), ms(h, 50), ms(h, 90), ms(h, 99), ms(h, 99.9), ms(h, 99.99), maxMs(h),
                    h.getTotalCount(), row.opsPerSecond());
        }
    }

    /**
     * One row per operation type that ran (succeeded or failed) and a total row, as memtier's per-command
     * table: count, ops/s, p50/p99/p99.9 ms, errors; hits and misses for gets; keys per second and per scan
     * for scans ("---" where a column does not apply).
     */
    public static void printOperations(PrintStream out, Map<String, ResultJson.OpStats> ops) {
        out.println(header("Operations by type (ms)"));
        out.printf(Locale.ROOT, "%-8s %12s %12s %9s %9s %9s %9s %12s %12s %12s %10s%n",
                "op", "count", "ops/s", "p50", "p99", "p99.9", "errors", "hits", "misses", "keys/s", "keys/scan");
        ops.forEach((name, st) -> {
            if (st.count() + st.errors() == 0 && !name.equals("total")) {
                return;
            }
            out.printf(Locale.ROOT, "%-8s %12d %12.2f %9.3f %9.3f %9.3f %9d %12s %12s %12s %10s%n", name, st.count(),
                    st.opsPerSec(), st.p50Ms(), st.p99Ms(), st.p999Ms(), st.errors(), orDash(st.hits()),
                    orDash(st.misses()), st.keysPerSec() == null ? "---" : String.format(Locale.ROOT, "%.2f", st.keysPerSec()),
                    st.keysPerScan() == null ? "---" : String.format(Locale.ROOT, "%.2f", st.keysPerScan()));
        });
    }

    private static String orDash(Long v) {
        return v == null ? "---" : Long.toString(v);
    }

    /** Errors by code, then the total and the error rate against the limit. */
    public static void printErrors(PrintStream out, Map<String, Long> errors, long totalOps, double maxErrorRate) {
        out.println(header("Errors by code"));
        long sum = 0;
        for (Map.Entry<String, Long> e : errors.entrySet()) {
            out.printf(Locale.ROOT, "%-20s %12d%n", e.getKey(), e.getValue());
            sum += e.getValue();
        }
        if (errors.isEmpty()) {
            out.println("none");
        }
        out.printf(Locale.ROOT, "%-20s %12d   error rate %.6f of %d operations (limit %s)%n", "total", sum,
                totalOps == 0 ? 0.0 : (double) sum / totalOps, totalOps, maxErrorRate);
    }

    /** A section rule like Dropwizard's: {@code -- Title ------...}. */
    public static String header(String title) {
        StringBuilder b = new StringBuilder("-- ").append(title).append(' ');
        while (b.length() < WIDTH) {
            b.append('-');
        }
        return b.toString();
    }

    /** The value at a percentile, milliseconds (0 for an empty histogram). */
    public static double ms(Histogram micros, double percentile) {
        return micros.getTotalCount() == 0 ? 0 : micros.getValueAtPercentile(percentile) / 1000.0;
    }

    public static double maxMs(Histogram micros) {
        return micros.getTotalCount() == 0 ? 0 : micros.getMaxValue() / 1000.0;
    }
}
